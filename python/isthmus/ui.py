# isthmus/ui.py: isthmus's own terminal output (rich, always on stderr). The job's output
# never goes through here: ranks write straight to the inherited stdout/stderr.
from __future__ import annotations

import sys

from rich.console import Console

_shared: tuple[object, Console] | None = None


def err_console() -> Console:
    """A rich console on the current sys.stderr (no markup guessing, no hard wrapping).
    The same one for as long as sys.stderr is the same stream: a progress bar shown on it
    (transfer.py) then keeps its place while other messages print above it. While a bar
    is up, rich has put a proxy of the stream in sys.stderr: that is still the same
    stream (a console of its own would write over the bar's line)."""
    global _shared
    stream = getattr(sys.stderr, "rich_proxied_file", sys.stderr)
    if _shared is None or _shared[0] is not stream:
        _shared = (stream, Console(stderr=True, highlight=False, soft_wrap=True))
    return _shared[1]
