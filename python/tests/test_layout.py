# tests/test_layout.py: the job layout: even split, --ranks-per-site, ports, validation.
import pytest

from isthmus.errors import IsthmusError
from isthmus.launch.layout import (
    Layout,
    Site,
    default_site_names,
    embedded_layout,
    parse_ranks_per_site,
    split_ranks,
)


def test_default_site_names():
    assert default_site_names(3) == ["A", "B", "C"]
    names = default_site_names(28)
    assert names[25:] == ["Z", "AA", "AB"]


@pytest.mark.parametrize(
    "n,sites,expected",
    [(4, 2, [2, 2]), (5, 2, [3, 2]), (7, 3, [3, 2, 2]), (3, 3, [1, 1, 1]), (1, 1, [1])],
)
def test_even_split(n, sites, expected):
    assert split_ranks(n, sites) == expected
    layout = embedded_layout(n, sites=sites)
    assert [s.ranks for s in layout.sites] == expected
    assert layout.total_ranks == n


def test_global_ranks_by_site_then_local_rank():
    layout = embedded_layout(5, sites=2)
    assert layout.rank_range(0) == range(0, 3)
    assert layout.rank_range(1) == range(3, 5)
    assert layout.first_rank(1) == 3


def test_defaults():
    layout = embedded_layout(4)
    assert [s.name for s in layout.sites] == ["A", "B"]
    for s in layout.sites:
        assert s.gateways == 1 and s.host == "127.0.0.1" and s.launcher == "local"
        assert s.mpi == "auto" and s.port is None
    assert layout.transport == "tcp"


def test_ranks_per_site_overrides_even_split():
    layout = embedded_layout(4, sites=2, ranks_per_site="3,1")
    assert [s.ranks for s in layout.sites] == [3, 1]
    layout = embedded_layout(6, sites=3, ranks_per_site=[1, 2, 3])
    assert [s.ranks for s in layout.sites] == [1, 2, 3]


def test_port_base_gives_consecutive_blocks():
    layout = embedded_layout(4, sites=2, gateways=2, port=41000)
    assert [s.port for s in layout.sites] == [41000, 41002]
    assert layout.sites[1].gateway_addr == "127.0.0.1:41002"


def test_ipv6_gateway_addr_in_brackets():
    site = Site(name="A", ranks=1, host="::1", port=5000)
    assert site.gateway_addr == "[::1]:5000"


@pytest.mark.parametrize(
    "kwargs,fragment",
    [
        (dict(n=1, sites=2), "-n 1 is less than the number of sites (2)"),
        (dict(n=0, sites=1), "-n must be at least 1"),
        (dict(n=4, sites=0), "--sites must be at least 1"),
        (dict(n=4, sites=2, gateways=0), "--gateways must be at least 1, got 0"),
        (dict(n=4, sites=2, ranks_per_site="1,1,2"), "--ranks-per-site has 3 entries but there are 2 sites"),
        (dict(n=4, sites=2, ranks_per_site="4,0"), "site B would have 0 ranks"),
        (dict(n=4, sites=2, ranks_per_site="3,-1"), "site B would have -1 ranks"),
        (dict(n=4, sites=2, ranks_per_site="2,3"), "--ranks-per-site adds up to 5 but -n is 4"),
        (dict(n=4, sites=2, ranks_per_site="2,x"), "not a comma-separated list of integers"),
        (dict(n=4, sites=2, port=70000), "--port must be 1-65535"),
        (dict(n=4, sites=2, port=65535), "run past 65535"),
    ],
)
def test_embedded_validation_errors(kwargs, fragment):
    with pytest.raises(IsthmusError) as exc:
        embedded_layout(**kwargs)
    assert fragment in str(exc.value)


def test_parse_ranks_per_site_spaces():
    assert parse_ranks_per_site(" 2, 3 ") == [2, 3]


@pytest.mark.parametrize(
    "sites,fragment",
    [
        ((), "the job has no sites"),
        ((Site("A", 0),), "site 'A': needs at least 1 rank, got 0"),
        ((Site("A", 1, gateways=0),), "site 'A': needs at least 1 gateway, got 0"),
        ((Site("A", 1), Site("A", 1)), "site name 'A' is used twice"),
        ((Site("A,B", 1),), "name 'A,B' is not valid"),
        ((Site("", 1),), "name '' is not valid"),
        ((Site("A", 1, port=0),), "gateway port must be 1-65535, got 0"),
        ((Site("A", 1, launcher="pbs"),), "launcher 'pbs' is not one of local, ssh, slurm"),
        ((Site("A", 1, launcher="slurm"),), "launch 'slurm' needs its request ([site.slurm])"),
        ((Site("A", 1, mpi="intel"),), "mpi 'intel' is not one of"),
        ((Site("A", 1, launcher="ssh", port=4000),), "launch 'ssh' needs an ssh host"),
        ((Site("A", 1, launcher="ssh", ssh_host="h"),), "needs an explicit gateway host:port"),
        ((Site("A", 1, ssh_host="h"),), "only allowed with launch 'ssh'"),
        ((Site("A", 1, gateways=2, port=4000), Site("B", 1, port=4001)), "both use gateway ports on 127.0.0.1 (4000-4001 and 4001)"),
    ],
)
def test_layout_validate_errors(sites, fragment):
    with pytest.raises(IsthmusError) as exc:
        Layout(sites=sites).validate()
    assert fragment in str(exc.value)


def test_same_ports_on_different_hosts_are_fine():
    Layout(sites=(Site("A", 1, host="10.0.0.1", port=4000), Site("B", 1, host="10.0.0.2", port=4000))).validate()


def test_bad_transport():
    with pytest.raises(IsthmusError, match="transport 'quic' is not supported"):
        Layout(sites=(Site("A", 1),), transport="quic").validate()
    assert Layout(sites=(Site("A", 1),), transport="udp").validate().transport == "udp"
