# tests/public/mpi4py_rank.py: what each rank runs for mpi4py_testsuite.py. It is mpi4py's
# own test runner (test/main.py of the sdist, its options unchanged) with one addition: every
# test's outcome on this rank goes to <outdir>/rank<N>.jsonl, one JSON object a line
# ({"id", "outcome": pass|fail|error|skip|xfail|xpass, "detail"}), so that the script can
# compare ranks, targets and the vendor alone test by test.
#
#   python3 mpi4py_rank.py --suite <mpi4py-x.y.z/test> --outdir <dir> [main.py options]
from __future__ import annotations

import json
import sys
import traceback
import unittest
from pathlib import Path


def _args(argv: list[str]) -> tuple[Path, Path, list[str]]:
    suite = outdir = None
    rest = []
    it = iter(argv)
    for a in it:
        if a == "--suite":
            suite = Path(next(it))
        elif a == "--outdir":
            outdir = Path(next(it))
        else:
            rest.append(a)
    if suite is None or outdir is None:
        sys.exit("usage: mpi4py_rank.py --suite DIR --outdir DIR [main.py options]")
    return suite, outdir, rest


class _Recorder(unittest.TextTestResult):
    sink = None  # the rank's open .jsonl file, set once MPI is up

    def _put(self, test, outcome: str, detail: str = "") -> None:
        if self.sink is not None:
            self.sink.write(json.dumps({"id": test.id(), "outcome": outcome,
                                        "detail": detail[-1500:]}) + "\n")
            self.sink.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self._put(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._put(test, "fail", "".join(traceback.format_exception(*err)))

    def addError(self, test, err):
        super().addError(test, err)
        self._put(test, "error", "".join(traceback.format_exception(*err)))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._put(test, "skip", str(reason))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._put(test, "xfail", "".join(traceback.format_exception(*err)))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._put(test, "xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self._put(test, kind, f"{subtest}: " + "".join(traceback.format_exception(*err)))


def main() -> None:
    suite, outdir, rest = _args(sys.argv[1:])
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(suite))
    import main as mpi4py_main  # noqa: E402  (the suite's test/main.py)

    class Program(mpi4py_main.TestProgram):
        def runTests(self):
            from mpi4py import MPI

            outdir.mkdir(parents=True, exist_ok=True)
            rank = MPI.COMM_WORLD.Get_rank()
            _Recorder.sink = open(outdir / f"rank{rank}.jsonl", "w")  # noqa: SIM115
            self.testRunner = unittest.TextTestRunner(resultclass=_Recorder,
                                                      verbosity=self.verbosity)
            super().runTests()

    Program(module=None, argv=[str(suite / "main.py"), *rest])


if __name__ == "__main__":
    main()
