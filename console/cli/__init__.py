"""The `lull` command line (Typer), one module per command group.

Every command reports bad input as one line on stderr (what, where, what was
expected) and exits non-zero; no traceback reaches the user.
"""

import typer

from sessions.flowfiles import DEFAULT_FLOW

# importing the modules registers their commands, in the order --help lists them
from . import rehearse, flows, incidents, sessions, bench, edges  # noqa: F401, I001  # isort: skip
from ._app import app


@app.callback(invoke_without_command=True)
def main_callback(ctx: typer.Context) -> None:
    """Design how a voice agent behaves when the caller goes quiet.

    With no command, Lull opens the console on its default flow (the reference-code
    task): rehearse it live, edit its prompts, run incidents, step through recordings.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(rehearse.rehearse, flow=DEFAULT_FLOW)


def main() -> None:
    app()


__all__ = ["app", "main"]
