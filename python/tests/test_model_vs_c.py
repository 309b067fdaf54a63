# tests/test_model_vs_c.py: the cost model predicts the schedules libisthmus runs. Every
# algorithm of the model (python/isthmus/model/schedule.py) on 2..9 members must send, per
# member, as many messages and bytes and copy as many bytes locally as the C builder of
# the same name (native/src/coll/b_*.c, through native/tests/coll_sched_dump.c, compiled
# here from the sources: the builders need nothing else). Sizes are whole elements of
# every block, so the two sides' rounding cannot differ.
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from isthmus.model import schedule as S
from isthmus.model import tune as T

REPO = Path(__file__).resolve().parents[2]
COLL = REPO / "native" / "src" / "coll"
VECTOR = 4 * 2520          # 2520 elements: divisible by every group size 1..9 and by 8
BLOCK = 1000
CC = shutil.which("cc") or shutil.which("gcc")


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    if CC is None:
        pytest.fail("no C compiler (cc) to build native/tests/coll_sched_dump.c")
    exe = tmp_path_factory.mktemp("dump") / "coll_sched_dump"
    srcs = [REPO / "native" / "tests" / "coll_sched_dump.c", COLL / "sched.c"] + sorted(
        COLL.glob("b_*.c"))
    r = subprocess.run([CC, "-std=c11", "-O1", "-o", str(exe)] + [str(s) for s in srcs],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    def run(coll, alg, p, nbytes, m):
        spec = T.spec_of(alg, m)  # the C name and parameters tune writes for it
        name, *rest = spec.split(":")
        radix = rest[0] if rest and rest[0] else str(4)
        seg = rest[1] if len(rest) > 1 else "0"
        out = subprocess.run([str(exe), coll, name, str(p), str(nbytes), radix, seg],
                             capture_output=True, text=True, check=True).stdout
        return [tuple(int(x) for x in line.split()) for line in out.splitlines()]
    return run


CASES = [(c, a) for c, algs in S.ALGORITHMS.items() if c != "barrier" for a in algs]


@pytest.mark.parametrize("coll,alg", CASES, ids=[f"{c}-{a}" for c, a in CASES])
def test_model_schedule_is_the_c_schedule(dump, coll, alg):
    for p in range(2, 10):
        m = BLOCK if coll in ("allgather", "alltoall") else VECTOR
        s = S.build(coll, alg, p, m)
        c = dump(coll, alg, p, m, m)
        py = [(sum(op[0] == "send" for op in s.ops[r]),
               sum(s.bytes_of(op[2]) for op in s.ops[r] if op[0] == "send"),
               sum(op[1] for op in s.ops[r] if op[0] == "copy")) for r in range(p)]
        got = [(x[0], x[1], x[3]) for x in c]
        assert py == got, (p, "model (sends, bytes sent, bytes copied) per member vs C")
