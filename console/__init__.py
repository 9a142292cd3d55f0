"""The Typer CLI and the Textual console."""
