"""The transcript and the filterable event log: text that wraps at the panel's width.

A `RichLog` lays text out once, when it is written, at `min_width` (78) or wider, so a
line in a narrower panel loses its middle and a resize never re-wraps it. `WrappingLog`
keeps what was written and lays it out again at the panel's own width whenever that
width changes: every word stays on screen at every terminal size.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.events import Resize
from textual.message import Message
from textual.widgets import Input, OptionList, RichLog
from textual.widgets.option_list import Option

from ..describe import describe, seconds

MAX_ENTRIES = 2000


class WrappingLog(RichLog):
    """A log of rich Text entries (or grids of them; never parsed as markup), wrapped at
    its own width."""

    def __init__(self, *, max_entries: int = MAX_ENTRIES, **kwargs) -> None:
        kwargs.setdefault("wrap", True)
        super().__init__(markup=False, highlight=False, min_width=1, **kwargs)
        self.entries: deque[RenderableType] = deque(maxlen=max_entries)
        self._layout_width = 0

    def add_text(self, text: RenderableType) -> None:
        entry = Text(text) if isinstance(text, str) else text
        self.entries.append(entry)
        if self._layout_width:
            self.write(entry, width=self._layout_width)
            if len(self.lines) > 4 * len(self.entries) + 200:  # old entries fell off: lay out again
                self._relayout(self._layout_width)

    def replace(self, entries) -> None:
        """Show exactly these entries (the event log's filter)."""
        self.entries.clear()
        self.entries.extend(e if isinstance(e, Text) else Text(e) for e in entries)
        if self._layout_width:
            self._relayout(self._layout_width)

    def text_lines(self) -> list[str]:
        """What is shown, one string per screen line (tests read this)."""
        return [strip.text.rstrip() for strip in self.lines]

    def on_resize(self, event: Resize) -> None:
        width = max(1, self.scrollable_content_region.width)
        if event.size.width and width != self._layout_width:
            self._relayout(width)

    def _relayout(self, width: int) -> None:
        self._layout_width = width
        super().clear()
        for entry in self.entries:
            self.write(entry, width=width)


class Transcript(WrappingLog):
    """Who said it in a column of its own, so a wrapped line stays under its words."""

    def add(self, who: str, text: str, detail: str = "") -> None:
        words = Text(text)
        if detail:
            words.append(f"  {detail}", style="dim")
        row = Table.grid(padding=(0, 1, 0, 0))
        row.add_column(width=6, justify="right", no_wrap=True)
        row.add_column(ratio=1, overflow="fold")
        row.add_row(Text(who, style="bold cyan" if who == "agent" else "bold green"), words)
        self.add_text(row)


def _hanging(line: str) -> RenderableType:
    """"[  7.7s] window armed gen 5 from observed, due 15.7s" with its continuation lines
    under the words, not under the time (they wrapped to the panel's first column)."""
    stamp, sep, words = line.partition("] ")
    if not sep or not stamp.startswith("["):
        return Text(line)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    grid.add_row(Text(stamp + "]"), Text(words))
    return grid


class EventLog(Vertical):
    """Every record in plain words; the filter keeps lines containing its text. A line
    can be chosen (enter or click) to see why the ladder made that move."""

    @dataclass
    class Chosen(Message):
        now: float
        record: dict
        index: int  # the record's place in the call history (absolute)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        # (serial, line, now, record, history index)
        self.lines: deque[tuple[int, str, float, dict, int]] = deque(maxlen=MAX_ENTRIES)
        self.filter = ""
        self._serial = 0

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter (e.g. REJECTED, hold, gen 7)", id="log-filter")
        yield OptionList(id="log-lines")

    def add(self, now: float, record: dict, verbose: bool = False, index: int = -1) -> None:
        text = describe(record, verbose)
        if text is None:
            return
        self.add_line(f"[{seconds(now):>6}] {text}", now, record, index)

    def add_line(self, line: str, now: float = 0.0, record: dict | None = None, index: int = -1) -> None:
        self._serial += 1
        entry = (self._serial, line, now, record or {}, index)
        self.lines.append(entry)
        if self.filter.lower() in line.lower():
            options = self.query_one("#log-lines", OptionList)
            at_end = options.scroll_offset.y >= options.max_scroll_y - 1
            options.add_option(Option(_hanging(line), id=f"e{entry[0]}"))
            if options.option_count > MAX_ENTRIES:
                options.remove_option_at_index(0)
            if at_end:
                options.scroll_end(animate=False, immediate=False)

    def shown(self) -> list[str]:
        options = self.query_one("#log-lines", OptionList)
        by_id = {f"e{e[0]}": e[1] for e in self.lines}
        return [by_id.get(options.get_option_at_index(i).id or "", "") for i in range(options.option_count)]

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "log-filter":
            return
        event.stop()
        self.filter = event.value
        wanted = self.filter.lower()
        options = self.query_one("#log-lines", OptionList)
        options.clear_options()
        options.add_options(Option(_hanging(e[1]), id=f"e{e[0]}") for e in self.lines if wanted in e[1].lower())
        options.scroll_end(animate=False, immediate=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        for serial, line, now, record, index in self.lines:
            if f"e{serial}" == event.option.id:
                self.post_message(self.Chosen(now, record, index))
                return
