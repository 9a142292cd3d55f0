"""The `lull` command line (Typer), one module per command group.

Every command reports bad input as one line on stderr (what, where, what was
expected) and exits non-zero; no traceback reaches the user.
"""

# importing the modules registers their commands, in the order --help lists them
from . import rehearse, flows, incidents, sessions, bench, edges  # noqa: F401, I001  # isort: skip
from ._app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
