# isthmus/commands/__init__.py: the sub-command registry. Every module in this package
# registers its click command with @register; cli.py imports them all and adds them.
from __future__ import annotations

import importlib
import pkgutil

import click

_registry: list[click.Command] = []


def register(command: click.Command) -> click.Command:
    """Decorator (put it above @click.command) adding a command to `isthmus`."""
    _registry.append(command)
    return command


def load_commands() -> list[click.Command]:
    """Import every module of this package (each registers itself); return the commands."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return sorted(_registry, key=lambda c: c.name or "")
