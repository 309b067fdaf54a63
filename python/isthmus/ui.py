# isthmus/ui.py: isthmus's own terminal output (rich, always on stderr). The job's output
# never goes through here: ranks write straight to the inherited stdout/stderr.
from __future__ import annotations

from rich.console import Console


def err_console() -> Console:
    """A rich console on the current sys.stderr (no markup guessing, no hard wrapping)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)
