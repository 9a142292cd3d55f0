"""The transcript and the filterable event log."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, RichLog

from ..describe import describe, seconds


class Transcript(RichLog):
    def add(self, who: str, text: str, detail: str = "") -> None:
        line = Text()
        line.append(f"{who:>6} ", style="bold cyan" if who == "agent" else "bold green")
        line.append(text)
        if detail:
            line.append(f"  {detail}", style="dim")
        self.write(line)


class EventLog(Vertical):
    """Every record in plain words; the filter keeps lines containing its text."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lines: list[str] = []
        self.filter = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter the event log (e.g. REJECTED, hold, gen 7)", id="log-filter")
        yield RichLog(id="log-lines", max_lines=2000)

    def add(self, now: float, record: dict, verbose: bool = False) -> None:
        text = describe(record, verbose)
        if text is None:
            return
        line = f"[{seconds(now):>6}] {text}"
        self.lines.append(line)
        if self.filter.lower() in line.lower():
            self.query_one("#log-lines", RichLog).write(line)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "log-filter":
            return
        self.filter = event.value
        log = self.query_one("#log-lines", RichLog)
        log.clear()
        for line in self.lines:
            if self.filter.lower() in line.lower():
                log.write(line)
