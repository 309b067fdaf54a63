# isthmus/netemu: the WAN link emulator's Python side: link spec parsing (spec.py), the
# per-pair matrix (matrix.py), namespaces plus the isthmus-linkemu process as a context
# manager (emulation.py), and small network probes for tests and benchmarks (probe.py).
from .emulation import Emulation, check_privileges
from .matrix import LinkMatrix, load_matrix
from .spec import LinkSpec, parse_link_spec

__all__ = ["Emulation", "LinkMatrix", "LinkSpec", "check_privileges", "load_matrix", "parse_link_spec"]
