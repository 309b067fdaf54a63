# isthmus/commands/__init__.py: the sub-command registry. Every module in this package
# registers its click command with @register (or adds sub-commands to another module's
# group); COMMANDS says which modules make each top-level command, so that `isthmus run`
# imports only what `run` needs (importing every command, numpy and matplotlib included,
# cost about 0.6 s of CPU at every start, and the suite starts isthmus hundreds of times).
# python/tests/test_cli.py checks the table against what the modules register.
from __future__ import annotations

import importlib

import click

_registry: list[click.Command] = []

# top-level command -> the modules that define it and its sub-commands
COMMANDS: dict[str, tuple[str, ...]] = {
    "bench": ("bench", "bench_baseline"),
    "cancel": ("submit",),
    "copy": ("copy",),
    "demo": ("demo",),
    "link": ("link", "link_probe"),
    "model": ("model",),
    "noise": ("noise",),
    "run": ("run",),
    "status": ("submit",),
    "submit": ("submit",),
    "trace": ("trace",),
    "whatif": ("whatif",),
}


def register(command: click.Command) -> click.Command:
    """Decorator (put it above @click.command) adding a command to `isthmus`."""
    _registry.append(command)
    return command


def load_command(name: str) -> click.Command | None:
    """The top-level command `name`, its modules imported on first use; None if unknown."""
    modules = COMMANDS.get(name)
    if modules is None:
        return None
    for m in modules:
        importlib.import_module(f"{__name__}.{m}")
    return next((c for c in _registry if c.name == name), None)


def load_all() -> list[click.Command]:
    """Every module of this package imported (each registers itself); the commands."""
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return sorted(_registry, key=lambda c: c.name or "")
