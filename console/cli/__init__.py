"""The `lull` command line (Typer), one module per command group.

Every command reports bad input as one line on stderr (what, where, what was
expected) and exits non-zero; no traceback reaches the user.
"""

import typer

from sessions.flowfiles import DEFAULT_FLOW

# importing the modules registers their commands, in the order --help lists them
from . import rehearse, flows, incidents, sessions, corpus, bench, edges  # noqa: F401, I001  # isort: skip
from ._app import app, reflow_help


def _reflow_all_help(typer_app) -> None:
    for command in typer_app.registered_commands:
        if command.callback is not None:
            command.callback.__doc__ = reflow_help(command.callback.__doc__)
    for group in typer_app.registered_groups:
        _reflow_all_help(group.typer_instance)


_reflow_all_help(app)


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
