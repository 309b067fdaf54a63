# tests/test_model_copies.py: the local copies libisthmus's schedules make (staging the
# vector in temporaries, Bruck's rotations), in the model: each algorithm's copies per
# member must be the C builders' (the byte counts below are what native/src/coll/b_*.c
# build for a commutative op, as for MPI_SUM: 3 and 5 members, a 64 KiB vector or
# block; reduce_scatter blocks of whole 4-byte elements), the simulator must charge them
# (copy0 + m copy), and calibrate must fit that cost from isthmus-bench's copy_local.
from __future__ import annotations

import pytest

from isthmus.model import calibrate as C
from isthmus.model import schedule as S
from isthmus.model.loggp import LogGP
from isthmus.model.simulate import ScheduleError, check, predict

M = 65536
C_COPIES = {  # (coll, alg, p): bytes each member copies
    ("reduce", "binomial", 3): [0, 0, 0],
    ("reduce", "rabenseifner", 3): [M, M, M],
    ("reduce", "rabenseifner", 5): [M] * 5,
    ("reduce", "chain", 5): [0] * 5,
    ("allreduce", "recursive_doubling", 3): [M, 2 * M, M],
    ("allreduce", "recursive_doubling", 4): [0] * 4,
    ("allreduce", "recursive_doubling", 5): [M, M, 2 * M, 2 * M, M],
    ("allreduce", "rabenseifner", 3): [M, M + M // 2, M],
    ("allreduce", "rabenseifner", 5): [M, M, M + M // 4, M + M // 4, M],
    ("allreduce", "ring", 5): [M] * 5,
    ("allreduce", "knomial4", 5): [M, 0, 0, 0, 0],
    ("allreduce", "linear", 3): [M, 0, 0],
    ("allreduce", "exchange", 3): [2 * M] * 3,
    ("reduce_scatter", "ring", 3): [87376] * 3,
    ("reduce_scatter", "ring", 5): [78624] * 5,
    ("reduce_scatter", "recursive_halving", 3): [0, 152908, 87376],
    ("reduce_scatter", "recursive_halving", 5): [0, 144144, 78624, 78624, 78624],
    ("reduce_scatter", "pairwise", 3): [0, 0, 0],  # the commutative form folds into OUT
    ("reduce_scatter", "pairwise", 5): [0] * 5,
    ("scan", "recursive_doubling", 3): [M] * 3,
    ("scan", "recursive_doubling", 5): [M, 2 * M, M, 2 * M, M],
    ("scan", "chain", 3): [M] * 3,
    ("allgather", "ring", 5): [M] * 5,
    ("allgather", "recursive_doubling", 3): [4 * M] * 3,
    ("allgather", "bruck", 5): [6 * M] * 5,
    ("allgather", "exchange", 3): [M] * 3,
    ("alltoall", "pairwise", 5): [M] * 5,
    ("alltoall", "bruck", 3): [10 * M] * 3,
    ("alltoall", "bruck", 5): [20 * M] * 5,
}


def copied(s: S.Schedule) -> list[int]:
    return [sum(op[1] for op in s.ops[r] if op[0] == "copy") for r in range(s.p)]


@pytest.mark.parametrize("case", sorted(C_COPIES), ids=lambda c: "-".join(map(str, c)))
def test_each_algorithm_copies_what_the_c_builder_copies(case):
    coll, alg, p = case
    n = p * (M // p // 4 * 4) if coll == "reduce_scatter" else M
    s = S.build(coll, alg, p, n)
    assert copied(s) == C_COPIES[case]
    check(s, commutative=True)  # copies move no value: the data flow is still MPI's


def test_the_simulator_charges_each_copy_on_its_members_clock():
    lv = LogGP(L=1e-6, o_s=0.2e-6, o_r=0.3e-6, g=0.1e-6, G=0.1e-9)
    cp = LogGP(**{**lv.as_dict(), "copy0": 50e-9, "copy": 0.25e-9})
    for coll, alg in (("allgather", "ring"), ("alltoall", "pairwise")):
        s = S.build(coll, alg, 2, M)
        # both members copy their own block first, then exchange: the copy delays both
        assert predict(s, cp) - predict(s, lv) == pytest.approx(cp.copy_cost(M), rel=1e-9)
    s = S.build("allgather", "bruck", 2, M)   # and bruck puts 2 blocks back at the end
    assert predict(s, cp) - predict(s, lv) == pytest.approx(
        cp.copy_cost(M) + cp.copy_cost(2 * M), rel=1e-9)
    assert LogGP.from_dict(cp.as_dict()) == cp


def test_calibrate_fits_the_copy_cost():
    ow = {m: 1e-6 + m * 1e-10 for m in (1, 8, 64, 512, 1024, 65536)}
    recs = []
    for m, t in ow.items():
        for q, v in (("one_way", t), ("send_overhead", 2e-7), ("recv_overhead", 3e-7),
                     ("train", 49 * 5e-7 + t + ow[1]), ("copy_local", 40e-9 + m * 0.2e-9)):
            recs.append({"benchmark": "loggp", "quantity": q, "size": m, "iters": 50,
                         "status": "ok", "median": v * 1e6})
    lvl = C.fit_level(C.level_data(recs))
    assert lvl["params"]["copy0"] == pytest.approx(40e-9, rel=1e-6)
    assert lvl["params"]["copy"] == pytest.approx(0.2e-9, rel=1e-6)
    assert lvl["medians_s"]["copy_local"]["65536"] == pytest.approx(40e-9 + 65536 * 0.2e-9)
    again = C.fit_level(C.level_data_from_medians(lvl["medians_s"]))
    assert again["params"] == lvl["params"]
    # a calibration from before copy_local keeps a copy cost of 0
    old = [r for r in recs if r["quantity"] != "copy_local"]
    assert C.fit_level(C.level_data(old))["params"]["copy"] == 0.0


def test_scan_sends_only_the_partials_someone_needs():
    """As the C builder (b_scan.c): on 2 members one message, not an exchange."""
    want = {2: [1, 0], 3: [2, 1, 0], 4: [2, 2, 1, 1], 5: [3, 2, 2, 1, 0],
            9: [4, 3, 3, 3, 3, 2, 2, 2, 0]}
    for p, sends in want.items():
        s = S.build("scan", "recursive_doubling", p, 64)
        assert [sum(op[0] == "send" for op in s.ops[r]) for r in range(p)] == sends
        check(s, commutative=False)


def test_pairwise_reduce_scatter_has_a_form_for_each_kind_of_op():
    """For a non-commutative op the C builder folds in rank order through a partial and
    copies (my block into OUT, the right partial back); for a commutative one it folds
    each arrival into OUT as it comes and copies nothing. The model builds the one asked
    for, and each gives MPI's result for the op it is built for."""
    for p, want in ((3, [65532, 65532, 21844]), (5, [39312] * 4 + [13104])):
        n = p * (M // p // 4 * 4)
        ordered = S.build("reduce_scatter", "pairwise", p, n, commutative=False)
        assert copied(ordered) == want
        check(ordered, commutative=False)
        folded = S.build("reduce_scatter", "pairwise", p, n)
        assert copied(folded) == [0] * p
        with pytest.raises(ScheduleError):
            check(folded, commutative=False)
