"""What every command shares: the app, the two consoles, and the one-line failure."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

app = typer.Typer(
    name="lull",
    help="Design how a voice agent behaves when the caller goes quiet.",
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode="rich",
)

# piped output keeps whole rows: tables are for reading and for grep
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def fail(message: str, code: int = 2) -> None:
    """One clear line and a non-zero exit."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@app.callback(invoke_without_command=True)
def main_callback(ctx: typer.Context) -> None:
    """Design how a voice agent behaves when the caller goes quiet.

    With no command, Lull opens the console on its default flow (the reference-code
    task): rehearse it live, edit its prompts, run incidents, step through recordings.
    """
    if ctx.invoked_subcommand is None:
        from sessions.flowfiles import DEFAULT_FLOW

        from .rehearse import rehearse

        ctx.invoke(rehearse, flow=DEFAULT_FLOW)
