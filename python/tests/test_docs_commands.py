# tests/test_docs_commands.py: every command in the ```sh blocks of README.md and docs/*.md
# runs as written. Each command is in REVIEWED below: None means the test runs it; any
# other value is the reason it is not run here (root, a long run, a second host, a value
# the reader fills in, or the output of such a command). A command added to the docs, or
# changed, fails the first test until it is reviewed here; the second runs the runnable
# ones of each file in order, in a temporary folder that mirrors the repository (the
# built prefix as _install/, the CLI's venv as .venv/), with the prefix on PATH.
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md"] + sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))

ROOT = "needs root: network namespaces and the link emulator"
SETUP = "sets the machine up first (Debian packages, the build), then runs it all"
LONG = "runs for minutes"
FOREVER = "runs until Ctrl-C"
FILL_IN = "has a value the reader fills in (a job id, a host, a program of their own)"
OTHER_HOST = "runs on a second host"
CGROUPS = "needs root: a cgroup per site for the CPU limit"


def after(what: str) -> str:
    return f"needs the output of {what}, which is not run here"


REVIEWED: dict[tuple[str, str], str | None] = {
    ("docs/whatif.md", "isthmus-cc -O2 -o halo examples/halo.c"): None,
    ("docs/whatif.md", "isthmus run -n 4 --wan delay=10ms,rate=100mbit --trace tr -- ./halo 20 512"): ROOT,
    ("docs/whatif.md", "isthmus whatif tr --platform links.toml                        # the traced platform: how close?"): after("isthmus run --wan"),
    ("docs/whatif.md", "isthmus whatif tr --platform links.toml --lan delay=5us,rate=1gbit   # a slower site network"): after("isthmus run --wan"),
    ("docs/whatif.md", "isthmus whatif tr --platform links4.toml --ranks-per-site 250   # links4.toml: sites = 4"): after("isthmus run --wan"),
    ("docs/whatif.md", "isthmus whatif tr --platform links.toml --json                 # the same numbers for tools"): after("isthmus run --wan"),
    ("docs/whatif.md", "isthmus whatif tr --platform links.toml --no-gateway-writes    # messages written when sent"): after("isthmus run --wan"),
    ("README.md", "./isthmus demo          # (1) sets everything up, then runs a bundled example on 2 sites × 2 ranks"): SETUP,
    ("README.md", "./scripts/test.sh       # (2) sets everything up, then runs the whole test suite"): SETUP,
    ("README.md", "export PATH=$PWD/_install/bin:$PWD/.venv/bin:$PATH   # after the first ./isthmus run"): None,
    ("README.md", "isthmus-cc -O2 -o ring examples/ring.c               # like mpicc: isthmus's mpi.h, links libisthmus"): None,
    ("README.md", "isthmus-fc -O2 -o ring_f examples/ring.f90           # like mpifort: mpif.h, use mpi, use mpi_f08"): None,
    ("README.md", "isthmus run -n 4 -- ./ring                           # 2 sites × 2 ranks on this machine"): None,
    ("README.md", "isthmus run -n 4 --mpi mpich -- ./ring_f             # the same in Fortran"): None,
    ("README.md", "isthmus run --sites 3 -n 6 --mpi mpich -- ./ring     # 3 sites, MPICH inside each site"): None,
    ("README.md", "isthmus run --ranks-per-site 1,3 -n 4 --stats -- ./ring   # uneven sites; per-link counts at the end"): None,
    ("README.md", "isthmus run -n 4 --trace tr -- ./ring                # every MPI call and WAN frame, into tr/"): None,
    ("README.md", "isthmus trace summary tr                             # where the WAN cost time: tr/summary.html"): None,
    ("README.md", "isthmus whatif tr --platform links.toml --ranks-per-site 64   # predicted on other links, more ranks (SimGrid)"): FILL_IN,
    ("README.md", "isthmus run --site-file job.toml -- ./ring           # real sites (see below)"): "needs the reader's clusters (the site file below names their hosts)",
    ("README.md", "isthmus submit job.toml -- ./ring                    # sites owned by Slurm: co-allocated, then run"): "needs the reader's Slurm clusters (test_batch_slurm.py runs it against real Slurm daemons, as root)",
    ("README.md", "isthmus run --help                                   # every option"): None,
    ("README.md", "isthmus link emulate --sites 3 --link delay=20ms,rate=1gbit,loss=0.1% -- ./experiment.sh"): ROOT,
    ("README.md", "isthmus link emulate --matrix links.toml          # per-pair settings; Ctrl-C to stop"): ROOT,
    ("README.md", "isthmus run -n 4 --wan delay=20ms,rate=1gbit -- ./ring   # each site in its own namespace"): ROOT,
    ("README.md", "isthmus run -n 4 --wan delay=10ms,rate=1gbit,loss=0.01% --wan-cc bbr --stats -- ./ring"): ROOT,
    ("README.md", "isthmus run -n 4 --wan delay=150ms,rate=100mbit,loss=0.1% --transport udp --stats -- ./ring"): ROOT,
    ("README.md", "isthmus link probe --link delay=2.25ms,rate=1gbit --windows 64k,256k,1m --plot probe.png"): ROOT,
    ("README.md", "isthmus copy serve /data/incoming                  # prints a job id and a secret file"): FOREVER,
    ("README.md", "isthmus copy --job JOB --secret-file secret run.tar siteb::runs/          # put"): FILL_IN,
    ("README.md", "isthmus copy --job JOB --secret-file secret siteb:41998:runs/run.tar .    # get"): FILL_IN,
    ("README.md", "isthmus copy --job JOB --secret-file secret input mesh.dat siteb::runs/case7    # many"): FILL_IN,
    ("README.md", "isthmus noise run --probe selfish --cpus 0-1 --duration 10s --out run/   # report in run/report/"): "needs root (kernel tracing) and 10 s of two idle cores",
    ("README.md", "isthmus noise inject --period 10ms --duration 1ms --cpu 1 --priority fifo:50"): FOREVER,
    ("README.md", "isthmus noise scale run/ --work 1ms --latency 5us"): after("isthmus noise run"),
    ("README.md", "isthmus bench run latency -n 2 --library openmpi -m 8,1k,64k"): None,
    ("README.md", "isthmus bench campaign examples/bench-wan.toml   # vendor alone vs isthmus across 2 emulated sites"): ROOT,
    ("README.md", "isthmus model calibrate --wan delay=10ms,rate=100mbit --out levels.json  # LogGP per level (per protocol range inside a site)"): ROOT,
    ("README.md", "isthmus model predict --params levels.json --coll allreduce -n 8 --size 1MiB --sites 2"): after("isthmus model calibrate"),
    ("README.md", "isthmus model tune --params levels.json --ranks 2,4,8 --sites 2 --measure --out table.json"): after("isthmus model calibrate"),
    ("README.md", "ISTHMUS_COLL_TABLE=table.json isthmus run -n 8 -- ./app   # MPI_Init reads the table"): FILL_IN,
    ("README.md", "isthmus model check                                        # every schedule proved right"): None,
    ("docs/batch.md", "isthmus submit job.toml ./app arg1 arg2     # check, queue everywhere, wait, run; Ctrl-C cancels"): FILL_IN,
    ("docs/batch.md", "isthmus status JOB                          # from another shell: each site's state and Slurm's reason"): after("isthmus submit"),
    ("docs/batch.md", "isthmus cancel JOB                          # remove every site's job, stop the submitter"): after("isthmus submit"),
    ("docs/batch.md", "isthmus link emulate --nodes-per-site 2 --slurm -- sh -c 'isthmus submit \"$ISTHMUS_CLUSTERS_SITE_FILE\" ./app'"): ROOT,
    ("docs/bench.md", "mpirun.openmpi -np 2 isthmus-bench.openmpi latency -m 0:1M"): None,
    ("docs/bench.md", "isthmus run -n 4 -- isthmus-bench placement"): None,
    ("docs/bench.md", "isthmus run -n 8 --wan delay=5ms,rate=1gbit -- isthmus-bench coll --op allreduce,alltoall --json"): ROOT,
    ("docs/bench.md", "isthmus bench run latency -n 2 --library openmpi -m 8,1k,64k        # one measurement"): None,
    ("docs/bench.md", "isthmus bench run coll -n 4 --op allreduce --wan delay=5ms           # isthmus on 2 emulated sites"): ROOT,
    ("docs/bench.md", "isthmus bench campaign examples/bench-wan.toml                       # a plan (root for --wan)"): ROOT,
    ("docs/bench.md", "isthmus bench compare res@library=openmpi res@library=isthmus-openmpi --all"): after("a campaign into res/"),
    ("docs/bench.md", "isthmus bench plot res --format svg --out plots/"): after("a campaign into res/"),
    ("docs/bench.md", "isthmus bench report res --out report.html"): after("a campaign into res/"),
    ("docs/copy.md", "isthmus copy serve /data/incoming --listen 0.0.0.0:41998"): FOREVER,
    ("docs/copy.md", "isthmus copy --job JOB --secret-file secret  run.tar  siteb.example.org::runs/      # put"): FILL_IN,
    ("docs/copy.md", "isthmus copy --job JOB --secret-file secret  siteb.example.org:41998:runs/run.tar .  # get"): FILL_IN,
    ("docs/copy.md", "isthmus copy --transport tcp ...                                                      # TCP"): FILL_IN,
    ("docs/copy.md", "isthmus copy --job JOB --secret-file secret  input mesh.dat  siteb.example.org::runs/case7    # many"): FILL_IN,
    ("docs/deploy.md", "cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/opt/isthmus && cmake --build build -j && cmake --install build"): "installs into /opt (test_install.py installs the same tree into a temporary prefix)",
    ("docs/deploy.md", "cp -r packaging/debian debian && dpkg-buildpackage -b -us -uc && dpkg -i ../isthmus_0.1.0-1_amd64.deb"): "needs root and installs a package (test_debian_package.py does it and removes it again)",
    ("docs/deploy.md", "isthmus link emulate --sites 2 --nodes-per-site 2 --link delay=10ms,rate=100mbit"): FOREVER,
    ("docs/deploy.md", "ip netns exec ism-<job>-ws isthmus run --site-file /tmp/isthmus-clusters-<job>-XXXX/sites.toml ./app"): FILL_IN,
    ("docs/deploy.md", "ip netns exec ism-<job>-ws ssh a0-<job>            # log in to site A's login node"): FILL_IN,
    ("docs/deploy.md", "isthmus link emulate --nodes-per-site 2 --link delay=10ms -- sh -c 'isthmus run --site-file \"$ISTHMUS_CLUSTERS_SITE_FILE\" ./app'"): ROOT,
    ("docs/linkemu.md", "isthmus link emulate --sites 2 --link delay=10ms,rate=100mbit"): ROOT,
    ("docs/linkemu.md", "ip netns exec ism-<job>-B python3 -m http.server 8000 &"): ROOT,
    ("docs/linkemu.md", "ip netns exec ism-<job>-A curl -o /dev/null http://10.77.0.2:8000/"): ROOT,
    ("docs/linkemu.md", "isthmus link emulate --link delay=5ms,loss=0.1% --site A -- ping -c 5 10.77.0.2"): ROOT,
    ("docs/linkemu.md", "isthmus link emulate --sites 3 --link delay=20ms -- ./experiment.sh"): ROOT,
    ("docs/linkemu.md", "isthmus link emulate --matrix links.toml -- ./experiment.sh"): ROOT,
    ("docs/linkemu.md", "isthmus run -n 4 --wan delay=20ms,rate=1gbit,loss=0.1% -- ./ring"): ROOT,
    ("docs/linkemu.md", "isthmus run -n 6 --wan-matrix links.toml -- ./ring      # sites = 3 in the file, named A, B, C"): ROOT,
    ("docs/linkemu.md", "isthmus run -n 4 --ranks-per-site 1,2,1 --wan-matrix links.toml --site-cpu 1,0.5,0.25 -- ./app   # sites = 3 in the file"): ROOT,
    ("docs/model.md", "isthmus model check --max-ranks 9"): None,
    ("docs/model.md", "isthmus model predict --params levels.json --coll allreduce -n 8 --size 1MiB --sites 2"): after("isthmus model calibrate"),
    ("docs/model.md", "isthmus model predict --params levels.json --coll allgather -n 8 --size 64KiB --json"): after("isthmus model calibrate"),
    ("docs/model.md", "isthmus model calibrate --levels intra,wan --wan delay=10ms,rate=100mbit --out levels.json"): ROOT,
    ("docs/model.md", "isthmus model tune --params levels.json --ranks 2,4 --sites 2,3 --measure --out table.json"): after("isthmus model calibrate"),
    ("docs/noise.md", "isthmus noise run --probe selfish --cpus 0-1 --duration 10s --out run/   # probe + trace + analysis"): "needs root (kernel tracing) and 10 s of two idle cores",
    ("docs/noise.md", "isthmus noise report run/                                             # again, with plots: run/report/index.html"): after("isthmus noise run"),
    ("docs/noise.md", "isthmus noise inject --period 10ms --duration 1ms --cpu 1 --priority fifo:50   # known noise, Ctrl-C to stop"): FOREVER,
    ("docs/noise.md", "isthmus noise scale run/ --work 1ms --latency 5us                      # cost at P = 2 .. 10^6"): after("isthmus noise run"),
    ("docs/noise.md", "isthmus run -n 2 -- isthmus-noise mpi-jitter --cpus 0-1 --out mj/      # the n-process probe, across sites"): None,
    ("docs/noise.md", "isthmus noise scale run/ --work 2ms --validate mj/                      # model vs the real 2-rank run"): after("isthmus noise run"),
    ("docs/public-testsuites.md", "tests/public/mpich_testsuite.py run                          # all in scope, 4 targets, 2 sites"): LONG,
    ("docs/public-testsuites.md", "tests/public/mpich_testsuite.py run --targets isthmus-mpich,mpich --only coll,pt2pt/anyall"): LONG,
    ("docs/public-testsuites.md", "tests/public/mpich_testsuite.py run --sites 3 --targets isthmus-openmpi --list tests/public/mpich_curated.txt"): LONG,
    ("docs/public-testsuites.md", "tests/public/mpich_testsuite.py report --markdown            # the table below, from saved results"): after("a test-suite run"),
    ("docs/public-testsuites.md", "tests/public/mpich_testsuite.py list                         # the test ids"): "fetches and unpacks the MPICH test suite first (20 s and more)",
    ("docs/public-testsuites.md", "isthmus run -n 4 --sites 2 -- python3 app.py"): FILL_IN,
    ("docs/public-testsuites.md", "tests/public/mpi4py_testsuite.py run --layout 2,2            # 4 targets: isthmus-openmpi, openmpi, isthmus-mpich, mpich"): LONG,
    ("docs/public-testsuites.md", "tests/public/mpi4py_testsuite.py run --layout 1,3 --targets isthmus-mpich,mpich"): LONG,
    ("docs/public-testsuites.md", "tests/public/mpi4py_testsuite.py run --layout 1,1,2 --targets isthmus-openmpi --only test_cco_buf,test_comm"): LONG,
    ("docs/public-testsuites.md", "tests/public/mpi4py_testsuite.py report --layout 2,2         # the comparison again, from saved results"): after("a test-suite run"),
    ("docs/public-testsuites.md", "tests/public/mpi4py_testsuite.py fft --layout 1,2,2 --mpi mpich 32 24 20 pencil"): "builds mpi4py and mpi4py-fft first (minutes)",
    ("docs/trace.md", "isthmus-cc -O2 -o halo examples/halo.c"): None,
    ("docs/patterns.md", "isthmus-cc -O2 -o aggregate examples/aggregate.c -listhmus-patterns"): None,
    ("docs/patterns.md", "isthmus-cc -O2 -o remote_read examples/remote_read.c -listhmus-patterns"): None,
    ("docs/patterns.md", "isthmus-cc -O2 -o decompose examples/decompose.c -listhmus-patterns -lm"): None,
    ("docs/patterns.md", "isthmus run -n 4 --sites 3 --ranks-per-site 1,2,1 --site-cpu 1,0.5,0.25 -- ./decompose weighted 100,100,100 400000 40 10 wall"): CGROUPS,
    ("docs/patterns.md", "python3 bench/patterns.py --reps 3"): ROOT,
    ("docs/patterns.md", "python3 bench/patterns.py --only decompose --reps 5 --site-cpu 1,0.2,0.05 --slow 1000,1000,1000 --cells 50000"): ROOT,
    ("docs/trace.md", "isthmus run -n 4 --trace tr -- ./halo 20 512          # 2 sites × 2 ranks, traced into tr/"): None,
    ("docs/trace.md", "isthmus trace summary tr                             # prints the main lines; tr/summary.html"): None,
    ("docs/trace.md", "isthmus trace export tr --format all                 # tr/otf2/traces.otf2, tr/trace.prv, tr/trace.json"): None,
    ("docs/trace.md", "otf2-print tr/otf2/traces.otf2 | head -40"): None,
    ("docs/trace.md", "isthmus trace export tr --format perfetto --no-gateways --out tr/ranks   # the ranks only"): None,
    ("docs/udp.md", "isthmus-udpperf recv --listen 10.77.0.2:41997 --job $JOB --secret-file secret"): ROOT,
    ("docs/udp.md", "isthmus-udpperf send --connect 10.77.0.2:41997 --job $JOB --secret-file secret --duration 30"): ROOT,
    ("docs/wan.md", "isthmus run -n 8 --transport udp --stats -- ./app            # every link over reliable UDP"): FILL_IN,
    ("docs/wan.md", "ISTHMUS_WAN_TRANSPORT=udp isthmus run -n 8 -- ./app           # the same, from the environment"): FILL_IN,
    ("docs/wan.md", "ISTHMUS_WAN_RATE=10e9 ISTHMUS_WAN_RTT_MS=35 isthmus run --site-file job.toml -- ./app"): FILL_IN,
    ("docs/wan.md", "isthmus link probe --link delay=2.25ms,rate=1gbit --windows 64k,128k,256k,512k,1m --json probe.jsonl --plot probe.png"): ROOT,
    ("docs/wan.md", "far$   isthmus link serve --listen 0.0.0.0:41999       # prints the job id and the secret file"): OTHER_HOST,
    ("docs/wan.md", "near$  isthmus link probe --to far.example:41999 --job <id> --secret-file ./secret --windows 256k,4m,auto --streams 1,4 --cc cubic,bbr"): OTHER_HOST,
    ("docs/wan.md", "isthmus link watch --to far.example:41999 --job <id> --secret-file ./secret"): OTHER_HOST,
    ("docs/wan.md", "mpicc.openmpi -O2 -o ws.openmpi bench/wan_stream.c"): None,
    ("docs/wan.md", "isthmus bench baseline -n 2 --wan delay=10ms,rate=1gbit,loss=0.01% -- ./ws.openmpi lat 200 20"): ROOT,
    ("docs/wan.md", "isthmus-cc    -O2 -o ws.isthmus bench/wan_stream.c"): None,
    ("docs/wan.md", "isthmus run   -n 2 --wan delay=10ms,rate=1gbit,loss=0.01% -- ./ws.isthmus lat 200 20"): ROOT,
}


def commands(doc: str) -> list[str]:
    """The commands of a file's ```sh blocks: continued lines joined, comment lines out."""
    text = (REPO / doc).read_text()
    out = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        cur = ""
        for line in block.splitlines():
            cur = f"{cur} {line.strip()}" if cur else line.strip()
            if cur.endswith("\\"):
                cur = cur[:-1].rstrip()
                continue
            if cur and not cur.startswith("#"):
                out.append(cur)
            cur = ""
    return out


def test_every_command_in_the_docs_is_reviewed():
    found = {(doc, c) for doc in DOCS for c in commands(doc)}
    new = sorted(found - set(REVIEWED))
    gone = sorted(set(REVIEWED) - found)
    assert not new, "commands not reviewed in REVIEWED (run them, or say why not):\n" + \
        "\n".join(f"    ({d!r}, {c!r}): None," for d, c in new)
    assert not gone, "REVIEWED names commands the docs no longer have:\n" + \
        "\n".join(f"  {d}: {c}" for d, c in gone)


def _mirror(tmp: Path, prefix) -> Path:
    """A folder that looks like the repository after ./isthmus ran: its source folders,
    the built prefix as _install/ and the CLI's environment as .venv/, and nothing the
    commands write lands in the real one."""
    for name in ("examples", "bench", "tests", "scripts", "native", "python", "docs", "isthmus"):
        (tmp / name).symlink_to(REPO / name)
    (tmp / "_install").symlink_to(prefix.root)
    (tmp / ".venv").symlink_to(Path(sys.prefix))
    return tmp


@pytest.mark.native
@pytest.mark.parametrize("doc", [d for d in DOCS if any(
    REVIEWED.get((d, c), "") is None for c in commands(d))])
def test_the_runnable_commands_run_as_written(doc, prefix, tmp_path):
    cwd = _mirror(tmp_path, prefix)
    todo = [c for c in commands(doc) if REVIEWED.get((doc, c), "") is None]
    script = "set -e\n" + "".join(f"echo '>>> {i}' >&2\n{c}\n" for i, c in enumerate(todo))
    env = dict(os.environ)
    env["PATH"] = f"{prefix.root}/bin:{Path(sys.prefix)}/bin:{env.get('PATH', os.defpath)}"
    if os.geteuid() == 0:  # Open MPI's own mpirun refuses root without these (FIELD-NOTES)
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        started = re.findall(r"^>>> (\d+)$", r.stderr, re.M)
        failed = todo[int(started[-1])] if started else "?"
        pytest.fail(f"{doc}: `{failed}` exited {r.returncode}:\n{r.stdout[-2000:]}\n"
                    f"{r.stderr[-3000:]}")
