# tests/test_pmpi_tool.py: a PMPI interposition library, built here as profiling tools are
# (a wrapper MPI_X -> PMPI_X counting calls, for every function of mpi.h), sees every call
# of a program built with isthmus-cc and nothing else, across 2 sites: linked into the
# program (before libisthmus) and preloaded (LD_PRELOAD). tests/mpi/pmpi_app.c tallies
# its own calls; the tool's counts must be exactly the same.
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from mpi_api import declared  # noqa: E402
from trace_api import SKIP, _params  # noqa: E402

# the clocks and handle conversions are MPI functions too: the tool counts them as well
COUNTED = [(r, n, p) for r, n, p in declared() if not SKIP.match(n) or n == "MPI_Wtime"]


def tool_source() -> str:
    """Counting wrappers for every function; MPI_Finalize writes the counts first."""
    out = ["#include <mpi.h>", "#include <stdio.h>", "#include <stdlib.h>", "",
           f"static long counts[{len(COUNTED)}];",
           "static const char *names[] = {" + ", ".join(f'"{n}"' for _, n, _ in COUNTED) + "};",
           "", "static void dump(void)", "{",
           "    const char *out = getenv(\"PMPI_TOOL_OUT\");",
           "    int rank = -1;", "    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);",
           "    char path[4096];", "    snprintf(path, sizeof path, \"%s.%d\", out, rank);",
           "    FILE *f = out ? fopen(path, \"w\") : NULL;",
           f"    for (int i = 0; f && i < {len(COUNTED)}; i++)",
           "        if (counts[i])", "            fprintf(f, \"%s %ld\\n\", names[i], counts[i]);",
           "    if (f)", "        fclose(f);", "}", ""]
    for i, (ret, name, params) in enumerate(COUNTED):
        if name == "MPI_Pcontrol":
            out += ["int MPI_Pcontrol(const int level, ...)", "{",
                    f"    counts[{i}]++;", "    return PMPI_Pcontrol(level);", "}", ""]
            continue
        args = ", ".join(n for _, n, _ in _params(params))
        pre = "    dump();\n" if name == "MPI_Finalize" else ""
        out += [f"{ret} {name}({params})", "{", f"    counts[{i}]++;",
                pre + f"    return P{name}({args});", "}", ""]
    return "\n".join(out)


# the preloaded case: `isthmus run` starts only programs built with isthmus-cc, so a tiny
# one built with it puts the tool in LD_PRELOAD and becomes the app (exec keeps the rank)
PRELOAD_EXEC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: preload_exec LIBRARY PROGRAM [ARGS]\n");
        return 2;
    }
    setenv("LD_PRELOAD", argv[1], 1);
    execv(argv[2], argv + 2);
    perror("preload_exec: execv");
    return 127;
}
"""


@pytest.fixture(scope="module")
def built(prefix, tmp_path_factory):
    d = tmp_path_factory.mktemp("pmpi")
    (d / "pmpi_count.c").write_text(tool_source())
    (d / "preload_exec.c").write_text(PRELOAD_EXEC)
    r = subprocess.run([str(prefix.cc), "-O1", "-shared", "-fPIC", "-o", str(d / "libpmpicount.so"),
                        str(d / "pmpi_count.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    app = REPO / "tests" / "mpi" / "pmpi_app.c"
    # linked in: the tool's MPI_X come before libisthmus's weak ones
    r = subprocess.run([str(prefix.cc), "-O1", "-o", str(d / "app_linked"), str(app),
                        f"-L{d}", f"-Wl,-rpath,{d}", "-lpmpicount"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for src, exe in ((app, "app"), (d / "preload_exec.c", "preload_exec")):
        r = subprocess.run([str(prefix.cc), "-O1", "-o", str(d / exe), str(src)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    return d


def counts(prefix: Path) -> dict[int, dict[str, int]]:
    out = {}
    for p in prefix.parent.glob(prefix.name + ".*"):
        out[int(p.suffix[1:])] = {ln.split()[0]: int(ln.split()[1])
                                  for ln in p.read_text().splitlines() if ln}
    return out


@pytest.mark.parametrize("how", ["linked", "preloaded"])
def test_pmpi_tool_sees_exactly_the_programs_calls(built, how, tmp_path):
    argv = [str(built / "app_linked")] if how == "linked" else \
        [str(built / "preload_exec"), str(built / "libpmpicount.so"), str(built / "app")]
    env = {**os.environ, "PMPI_TOOL_OUT": str(tmp_path / "tool"),
           "PMPI_APP_OUT": str(tmp_path / "app")}
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", "3", "--sites", "2", "--ranks-per-site",
           "1,2", "--mpi", "openmpi", "--timeout", "100", "--", *argv]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=130, env=env)
    assert r.returncode == 0 and "pmpi_app: done" in r.stdout, (r.stdout + r.stderr)[-3000:]
    tool, app = counts(tmp_path / "tool"), counts(tmp_path / "app")
    assert sorted(tool) == sorted(app) == [0, 1, 2]
    for rank in app:
        assert tool[rank] == app[rank], f"rank {rank}: the tool saw {tool[rank]}, the " \
                                        f"program made {app[rank]}"
