# isthmus/cli.py: the `isthmus` command group. Sub-commands live in isthmus/commands/,
# register themselves and are imported on first use; user-facing errors (IsthmusError)
# become "isthmus: <message>" on stderr with exit code 2.
from __future__ import annotations

import click

from . import __version__
from .commands import COMMANDS, load_command
from .errors import IsthmusError


class IsthmusGroup(click.Group):
    """The sub-commands are imported when asked for (commands.COMMANDS), not at start."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self.commands.get(cmd_name) or load_command(cmd_name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except IsthmusError as e:
            click.echo(f"isthmus: {e}", err=True)
            ctx.exit(e.exit_code)


@click.group(name="isthmus", cls=IsthmusGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="isthmus")
def main() -> None:
    """Run one unmodified MPI program across several clusters ("sites") as a single MPI job.

    Each site runs its own vendor MPI job (Open MPI or MPICH) made of application ranks plus
    gateway ranks; the gateways of different sites connect over TCP. Build programs with
    isthmus-cc, then start them with `isthmus run`.
    """

