"""The timer lane (armed windows, countdowns, rejected callbacks) and the prompt lane.

Both are tables that wrap at word boundaries in whatever width the panel has, and both
redraw only when what they show changed (countdowns move once a second).
"""

from __future__ import annotations

import math

from rich.table import Table
from rich.text import Text

from .panel import Panel

STATUS_STYLE = {
    "requested": "yellow",
    "started": "bold green",
    "completed": "green",
    "cancelled_before_playback": "red",
    "interrupted": "magenta",
    "failed": "bold red",
}


def countdown(left_ms: float) -> str:
    """Whole seconds, rounded up: what is left until the timer fires."""
    return f"{max(0, math.ceil(left_ms / 1000 - 1e-9))}s"


def _grid(*columns: str, wrap: str) -> Table:
    """Identifier columns never wrap (a timer kind is not cut mid-word); only `wrap`,
    whose words are separated by spaces, wraps at the panel's width."""
    table = Table.grid(padding=(0, 1))
    for name in columns:
        if name == wrap:
            table.add_column(name, overflow="fold", ratio=1)  # fold only a word wider than the panel
        else:
            table.add_column(name, no_wrap=True)
    return table


def words_of(identifier: str) -> str:
    """"estimate_from_start" -> "estimate from start": wraps at words, not mid-name."""
    return identifier.replace("_", " ")


def timer_lines(snapshot: dict, now: float, rejected: list[dict], ended: bool = False) -> tuple[list[tuple], list[str]]:
    rows = []
    for kind, timer in sorted(snapshot["timers"].items(), key=lambda kv: kv[1]["due"]):
        when = f"due {timer['due'] / 1000:.1f}s" if ended else countdown(timer["due"] - now)
        origin = words_of(timer["origin"])
        origin = origin if " from " in f" {origin} " else f"from {origin}"  # "estimate from start"
        rows.append((kind, f"gen {timer['generation']}", when, origin, timer["origin"] == "estimated"))
    rejects = []
    for record in rejected:
        what = record.get("event", "?")
        ident = record.get("generation") if record.get("generation") is not None else record.get("token")
        rejects.append(f"✗ {what} {ident}: {record['reason']}")
    return rows, rejects


ORIGIN_INDENT = 3  # an origin on a line of its own starts under the timer's name


def timer_table(rows: list[tuple], width: int | None):
    """The armed timers: the origin beside each where its longest word fits the width,
    else on an indented line of its own (at 80x24 the origin column had six cells, and
    "estimate" was cut into "estima"/"te")."""
    ids = [max(len(str(row[i])) for row in rows) for i in range(3)]
    longest_word = max(len(word) for row in rows for word in row[3].split())
    if width and sum(ids) + 3 + longest_word > width:
        text = Text()
        for n, (kind, gen, when, origin, estimated) in enumerate(rows):
            style = "yellow" if estimated else ""
            if n:
                text.append("\n")
            text.append(kind.ljust(ids[0]), style=style)
            text.append(f" {gen.ljust(ids[1])} ")
            text.append(when, style="bold")
            text.append("\n" + " " * ORIGIN_INDENT)
            text.append(origin, style=style)
        return text
    table = _grid("timer", "gen", "left", "origin", wrap="origin")
    for kind, gen, when, origin, estimated in rows:
        style = "yellow" if estimated else ""
        table.add_row(Text(kind, style=style), gen, Text(when, style="bold"), Text(origin, style=style))
    return table


class TimerLane(Panel):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rejected: list[dict] = []
        self._last: tuple | None = None

    def note(self, record: dict) -> None:
        if record.get("effect") == "Trace" and record.get("kind") in ("stale_rejected", "rejected"):
            self.rejected = (self.rejected + [record])[-4:]

    def show(self, snapshot: dict, now: float, ended: bool = False) -> None:
        """`ended`: the run is over, so timers still armed are shown with their due time,
        not a countdown that would never reach zero."""
        self._last = (snapshot, now, ended)
        rows, rejects = timer_lines(snapshot, now, self.rejected, ended)
        width = self.content_region.width
        key = (tuple(rows), tuple(rejects), ended, width)
        if key == self._shown:
            return
        parts = []
        if not rows:
            parts.append(Text("no timer armed", style="dim"))
        else:
            if ended:
                parts.append(Text("the run ended with these still armed (they never fire):", style="dim"))
            parts.append(timer_table(rows, width))
        for line in rejects:
            parts.append(Text(line, style="red"))
        from rich.console import Group

        self.set_content(Group(*parts), key=key)

    def on_resize(self) -> None:
        if self._last is not None:  # laid out for the width: lay it out again
            self.show(*self._last)


def prompt_status(prompt: dict, ended: bool) -> tuple[str, str]:
    """A prompt's lifecycle in words, and its style. A prompt whose completion was never
    reported ends on the estimate: it is shown as finished, and as an estimate."""
    status = prompt["status"]
    if prompt["completion_estimated"] and status in ("started", "requested"):
        return "completed (estimated: no report from the endpoint)", "yellow"
    if prompt["completion_estimated"] and status == "completed":
        return "completed (estimated; the report came late)", "green"
    if ended and status in ("requested", "started"):
        return f"{status}, never completed (the call ended)", "dim"
    return status, STATUS_STYLE.get(status, "")


STATUS_INDENT = 3  # a status on a line of its own starts under the prompt's kind


class PromptLane(Panel):
    """Each prompt's token, kind, stage and lifecycle: the status beside them where its
    longest word fits the panel's width, else on an indented line of its own (at 80x24
    the status column had four cells, and "completed" was cut into "comp"/"lete"/"d")."""

    _last: tuple | None = None

    def show(self, snapshot: dict, ended: bool = False, newest: int = 8) -> None:
        self._last = (snapshot, ended, newest)
        prompts = snapshot["prompts"][-newest:]
        rows = tuple(
            (f"#{p['token']}", p["kind"], p["stage"] or "", *prompt_status(p, ended or snapshot.get("state") == "closed"))
            for p in prompts
        )
        width = self.content_region.width
        if (rows, width) == self._shown:
            return
        if not rows:
            self.set_content(Text("no prompt yet", style="dim"), key=(rows, width))
            return
        ids = [max(len(row[i]) for row in rows) for i in range(3)]
        longest_word = max(len(word) for row in rows for word in row[3].split())
        if width and sum(ids) + 3 + longest_word > width:
            text = Text()
            for n, (token, kind, stage, status, style) in enumerate(rows):
                if n:
                    text.append("\n")
                text.append(" ".join(part for part in (token.ljust(ids[0]), kind, stage) if part).rstrip())
                text.append("\n" + " " * STATUS_INDENT)
                text.append(status, style=style)
            self.set_content(text, key=(rows, width))
            return
        table = _grid("token", "kind", "stage", "status", wrap="status")
        for token, kind, stage, status, style in rows:
            table.add_row(token, kind, stage, Text(status, style=style))
        self.set_content(table, key=(rows, width))

    def on_resize(self) -> None:
        if self._last is not None:  # laid out for the width: lay it out again
            self.show(*self._last)
