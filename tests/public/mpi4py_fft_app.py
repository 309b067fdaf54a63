# tests/public/mpi4py_fft_app.py: an application library built on mpi4py, run across sites:
# mpi4py-fft (PyPI) computes a distributed 3-d FFT of a complex array spread over all ranks
# (slabs or pencils: its redistributions are Alltoallw with subarray types), which every rank
# compares with numpy's FFT of the same global array, forward and back.
#
#   isthmus run -n 4 --sites 2 -- python3 mpi4py_fft_app.py [N0 N1 N2] [slab|pencil]
#
# Rank 0 prints "mpi4py-fft: ok ..." when every rank's part matches (relative error below
# 1e-10), else "mpi4py-fft: FAILED ..."; the exit status says the same on every rank.
from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI
from mpi4py_fft import PFFT, newDistArray


def main() -> int:
    args = [a for a in sys.argv[1:] if a.isdigit()]
    shape = tuple(int(a) for a in args) if len(args) == 3 else (24, 20, 16)
    kind = "pencil" if "pencil" in sys.argv else "slab"
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(2024)
    glob = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    want = np.fft.fftn(glob)
    # slab: one distributed axis; pencil: a 2-d process grid
    fft = PFFT(comm, shape, axes=(0, 1, 2), dtype=np.complex128,
               grid=(-1,) if kind == "slab" else None)
    u = newDistArray(fft, forward_output=False)
    u[:] = glob[u.local_slice()]
    u_hat = newDistArray(fft, forward_output=True)
    u_hat = fft.forward(u, u_hat, normalize=False)
    ref = want[u_hat.local_slice()]
    err_f = float(np.max(np.abs(u_hat - ref)) / np.max(np.abs(want)))
    back = newDistArray(fft, forward_output=False)
    back = fft.backward(u_hat, back, normalize=True)
    err_b = float(np.max(np.abs(back - u)) / np.max(np.abs(glob)))
    worst = comm.allreduce(max(err_f, err_b), op=MPI.MAX)
    sizes = comm.gather(u_hat.size, root=0)
    ok = worst < 1e-10
    if comm.rank == 0:
        print(f"mpi4py-fft: {'ok' if ok else 'FAILED'} {kind} {shape} on {comm.size} ranks, "
              f"{MPI.Get_library_version().splitlines()[0][:60]!r}, spectral parts {sizes}, "
              f"max relative error {worst:.2e}", flush=True)
    fft.destroy()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
