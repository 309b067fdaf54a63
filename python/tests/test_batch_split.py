# tests/test_batch_split.py: a site file that leaves the split open ([split]: any_of, ratio,
# fill_first) without a scheduler: what is accepted and refused (with what was given and
# what is allowed), the ratio's arithmetic, the choice from given expected starts and
# sizes, and the --begin plan from given estimates. The real Slurm is in
# test_batch_slurm.py.
from __future__ import annotations

import pytest

from isthmus.batch.coalloc import plan_begin
from isthmus.batch.slurm import Estimate
from isthmus.batch.split import SAME_START, Offer, check_capacity, choose, ratio_shares
from isthmus.errors import IsthmusError
from isthmus.launch.sitefile import load_site_file

SITES = '''[[site]]
name = "A"
launch = "slurm"
gateway = "10.0.0.1:41000"
[site.slurm]
[[site]]
name = "B"
launch = "slurm"
gateway = "10.0.1.1:41000"
[site.slurm]
'''


def _load(tmp_path, split: str, sites: str = SITES):
    p = tmp_path / "job.toml"
    p.write_text(split + "\n" + sites)
    return load_site_file(p)


def _error(tmp_path, split: str, sites: str = SITES) -> str:
    with pytest.raises(IsthmusError) as e:
        _load(tmp_path, split, sites)
    return str(e.value)


@pytest.mark.parametrize("split,mode,ranks", [
    ('[split]\nranks = 6\nany_of = ["B", "A"]', "any_of", {"A": 6, "B": 6}),
    ('[split]\nranks = 8\nratio = { A = 1, B = 3 }', "ratio", {"A": 2, "B": 6}),
    ('[split]\nranks = 6\nfill_first = ["A", "B"]', "fill_first", {"A": 6, "B": 6}),
])
def test_split_accepted(tmp_path, split, mode, ranks):
    """Each form reads as written; before the choice a ratio's sites have their share,
    the others the most they may get."""
    sf = _load(tmp_path, split)
    assert sf.split is not None and sf.split.mode == mode
    assert {s.name: s.ranks for s in sf.layout.sites} == ranks


def test_split_with_a_fixed_site(tmp_path):
    """A site outside [split] keeps its own ranks."""
    sf = _load(tmp_path, '[split]\nranks = 4\nany_of = ["A", "B"]',
               SITES + '[[site]]\nname = "C"\nranks = 3\n')
    assert [(s.name, s.ranks) for s in sf.layout.sites] == [("A", 4), ("B", 4), ("C", 3)]


@pytest.mark.parametrize("split,sites,msg", [
    ('[split]\nany_of = ["A", "B"]', SITES, "[split]: 'ranks' is missing"),
    ('[split]\nranks = 0\nany_of = ["A", "B"]', SITES, "'ranks' must be a positive integer, got 0"),
    ('[split]\nranks = 4', SITES, "give exactly one of any_of = [sites]"),
    ('[split]\nranks = 4\nany_of = ["A", "B"]\nfill_first = ["A", "B"]', SITES,
     "got any_of and fill_first"),
    ('[split]\nranks = 4\nanyof = ["A", "B"]', SITES,
     "[split]: unknown key 'anyof' (allowed: any_of, fill_first, ranks, ratio)"),
    ('[split]\nranks = 4\nany_of = ["A"]', SITES, "'any_of' must be a list of at least 2 site names"),
    ('[split]\nranks = 4\nany_of = "A, B"', SITES, "got 'A, B'"),
    ('[split]\nranks = 4\nfill_first = ["A", "A"]', SITES, "'fill_first' names site 'A' twice"),
    ('[split]\nranks = 4\nratio = [1, 3]', SITES, "'ratio' must be a table of at least 2 sites"),
    ('[split]\nranks = 4\nratio = { A = 1, B = 0 }', SITES, "site 'B' has part 0; parts are positive"),
    ('[split]\nranks = 4\nratio = { A = 1, B = 1.5 }', SITES, "site 'B' has part 1.5"),
    ('[split]\nranks = 3\nratio = { A = 1, B = 9 }', SITES,
     "'ratio' 1 : 9 of 3 ranks leaves site 'A' with none"),
    ('[split]\nranks = 4\nany_of = ["A", "C"]', SITES,
     "[split]: names site 'C', which no [[site]] has (the sites: A, B)"),
    ('[split]\nranks = 4\nany_of = ["A", "B"]', SITES.replace('name = "B"\n', 'name = "B"\nranks = 2\n'),
     "site 'B': 'ranks' cannot be given: [split] chooses this site's ranks (4 ranks at any one of A, B)"),
    ('[split]\nranks = 4\nany_of = ["A", "B"]', SITES + '[[site]]\nname = "C"\n',
     "site 'C': 'ranks' is missing"),
    ('[split]\nranks = 4\nany_of = ["A", "B", "C"]', SITES + '[[site]]\nname = "C"\n',
     "site 'C': [split] names this site, so it needs launch = \"slurm\""),
    ('split = 3', SITES, "[split]: must be a table"),
])
def test_split_refused(tmp_path, split, sites, msg):
    assert msg in _error(tmp_path, split, sites)


@pytest.mark.parametrize("total,weights,want", [
    (16, (1, 3), [4, 12]), (10, (1, 2), [3, 7]), (7, (1, 1, 1), [3, 2, 2]), (5, (2, 2), [3, 2]),
    (1000, (1, 2, 7), [100, 200, 700]),
])
def test_ratio_shares(total, weights, want):
    assert ratio_shares(total, weights) == want and sum(want) == total


def _offers(**starts):
    """Offers by site: (seconds until its expected start, room for ranks)."""
    return {s: Offer(s, room, t, f"T+{t:g}", 1, 2) for s, (t, room) in starts.items()}


def _split(tmp_path, text):
    return _load(tmp_path, text).split


def test_any_of_picks_the_first_to_start_and_says_why(tmp_path):
    split = _split(tmp_path, '[split]\nranks = 6\nany_of = ["A", "B"]')
    c = choose(split, _offers(A=(3600, 7), B=(0, 7)))
    assert c.ranks == {"A": 0, "B": 6}
    assert c.reason == "site B for all 6 ranks: it starts first (A expected T+3600 (in 60 min))"


def test_any_of_among_equal_starts_takes_the_first_listed(tmp_path):
    split = _split(tmp_path, '[split]\nranks = 6\nany_of = ["B", "A"]')
    c = choose(split, _offers(A=(0, 7), B=(SAME_START - 1, 7)))
    assert c.ranks == {"A": 0, "B": 6} and "the first listed" in c.reason


def test_fill_first_fills_the_first_to_start(tmp_path):
    split = _split(tmp_path, '[split]\nranks = 10\nfill_first = ["A", "B"]')
    c = choose(split, _offers(A=(900, 7), B=(0, 7)))
    assert c.ranks == {"A": 3, "B": 7}
    assert c.reason.startswith("as many as possible first where they start first: B 7 "), c.reason
    # all of it fits at the first: the other is not needed
    c = choose(split, _offers(A=(0, 12), B=(0, 7)))
    assert c.ranks == {"A": 10, "B": 0} and c.reason.endswith("; B not needed")


def test_ratio_is_the_ratio_whatever_the_starts(tmp_path):
    split = _split(tmp_path, '[split]\nranks = 8\nratio = { A = 1, B = 3 }')
    assert choose(split, _offers(A=(0, 7), B=(5000, 7))).ranks == {"A": 2, "B": 6}


@pytest.mark.parametrize("text,room,msg", [
    ('any_of = ["A", "B"]', {"A": 7, "B": 5},
     "site B: any_of needs room for the whole job, 6 ranks; its request holds 5"),
    ('ratio = { A = 1, B = 2 }', {"A": 7, "B": 3}, "site B: the ratio gives it 4 of 6 ranks; its request holds 3"),
    ('fill_first = ["A", "B"]', {"A": 2, "B": 3},
     "fill_first: 6 ranks, but the sites' requests hold 5 together (A 2, B 3)"),
])
def test_capacity_refused(tmp_path, text, room, msg):
    split = _split(tmp_path, f"[split]\nranks = 6\n{text}")
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        check_capacity(split, room, lambda s: f"site {s}")
    check_capacity(split, {s: 6 for s in room}, lambda s: f"site {s}")


def test_plan_begin_only_past_the_gap():
    est = {"A": Estimate("a", 0, 100.0, ""), "B": Estimate("b", 3600, 101.0, ""),
           "C": Estimate("c", 3400, 100.0, "")}
    assert plan_begin(est, 300) == {"A": 3701.0}
    assert plan_begin(est, 100) == {"A": 3701.0, "C": 3701.0}
    assert plan_begin(est, float("inf")) == {}
