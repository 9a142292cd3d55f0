"""The episode on one time axis: a picture, not a list.

Rows: listening windows (with their generation), holds, the agent's prompts (queued
from requested to started, then playing until completed, cancelled or interrupted),
the caller's turns and tool calls. A designer sees a reminder overlapping an answer at
a glance. Fed flat records (live) or journal records (a recording, up to the cursor).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from .panel import Panel

LABEL = 7  # "window " etc.


@dataclass
class Span:
    row: str  # window, hold, agent, caller, tools
    start: float
    end: float | None = None
    due: float | None = None  # a timer's deadline while it is still armed
    label: str = ""
    how: str = ""  # fired, invalidated, completed, cancelled, interrupted, estimated, ok...
    played: float | None = None  # a prompt: when playback started


def normal(record: dict) -> dict:
    """A journal record in the live (flat) shape: traces carry effect "Trace" and their detail."""
    if "effect" in record:
        return record
    if record.get("type") == "input":
        return {"at": record.get("t_ms", 0.0), "input": record.get("kind"), "event": record.get("event", {})}
    detail = record.get("detail") or {}
    return {"effect": "Trace", "at": record.get("t_ms", record.get("at", 0.0)), **record, **detail}


class TimelineModel:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._open: dict[tuple, Span] = {}
        self.episode_start: float | None = None
        self.episode_end: float | None = None
        self.last_at = 0.0

    def add(self, now: float, record: dict) -> None:
        r = normal(record)
        at = r.get("at", now) if r.get("at") is not None else now
        self.last_at = max(self.last_at, at)
        effect, kind = r.get("effect"), r.get("kind")
        if effect == "RequestPrompt":
            span = Span("agent", at, label=f"#{r['token']}", how="requested")
            self.spans.append(span)
            self._open[("prompt", r["token"])] = span
        elif effect == "CallTool":
            span = Span("tools", at, label=r.get("tool", "tool"), how="running")
            self.spans.append(span)
            self._open[("tool", r.get("call"))] = span
        elif effect != "Trace":
            return
        elif kind in ("window_armed", "hold_armed"):
            timer = r.get("timer") or kind.removesuffix("_armed")
            self._close(("timer", timer), at, "rearmed")
            span = Span(timer, at, due=r.get("due"), label=f"g{r.get('generation')}")
            self.spans.append(span)
            self._open[("timer", timer)] = span
        elif kind == "still_waiting_armed":
            # the hold's cadence: a mark on the hold row where its next line is due
            self._close(("timer", "still_waiting"), at, "rearmed")
            span = Span("still", at, due=r.get("due"), label=f"g{r.get('generation')}")
            self.spans.append(span)
            self._open[("timer", "still_waiting")] = span
        elif kind in ("timer_fired", "timer_invalidated") and r.get("timer") in ("window", "hold", "still_waiting"):
            span = self._open.get(("timer", r["timer"]))
            if span is not None and span.label == f"g{r.get('generation')}":
                self._close(("timer", r["timer"]), at, "fired" if kind == "timer_fired" else "invalidated")
        elif kind == "prompt_started":
            span = self._open.get(("prompt", r.get("token")))
            if span is not None:
                span.played, span.how = at, "playing"
        elif kind in ("prompt_completed", "prompt_cancelled_before_playback", "prompt_interrupted", "playback_completion_missing"):
            how = {
                "prompt_completed": "completed", "prompt_cancelled_before_playback": "cancelled",
                "prompt_interrupted": "interrupted", "playback_completion_missing": "estimated",
            }[kind]
            self._close(("prompt", r.get("token")), at, how)
        elif kind == "turn_started":
            span = Span("caller", at, label=str(r.get("turn") or ""))
            self.spans.append(span)
            self._open[("turn", r.get("turn"))] = span
        elif kind == "turn_ended":
            self._close(("turn", r.get("turn")), at, "ended")
        elif kind == "tool_finished" or (kind or "").startswith("tool_") and r.get("call") and kind not in ("tool_started", "tool_called"):
            self._close(("tool", r.get("call")), at, r.get("reason", ""))
        elif kind == "episode_started":
            self.episode_start, self.episode_end = at, None
            # an episode's picture starts with it: older spans stay for a recording's cursor
        elif kind == "episode_ended":
            self.episode_end = at

    def _close(self, key: tuple, at: float, how: str) -> None:
        span = self._open.pop(key, None)
        if span is not None:
            span.end, span.how = at, how

    def render(self, now: float, width: int, cursor: float | None = None) -> Text:
        width = max(LABEL + 10, width)
        cols = width - LABEL
        start = self.episode_start if self.episode_start is not None else 0.0
        start = max(0.0, start - 500)
        settled = self.episode_end is not None and not self._open
        end = self.episode_end + 1000 if settled else max(now, self.episode_end or 0.0)  # a still picture once settled
        for span in self.spans:
            if span.end is None and span.due is not None and span.start >= start:
                end = max(end, span.due)
        end = max(end, start + 4000)
        scale = cols / (end - start)

        def col(t: float) -> int:
            return max(0, min(cols - 1, int((t - start) * scale)))

        rows = {name: [" "] * cols for name in ("window", "hold", "agent", "caller", "tools")}
        styles = {name: [""] * cols for name in rows}

        def paint(row: str, a: float, b: float, char: str, style: str) -> None:
            if b < start:
                return
            for c in range(col(max(a, start)), col(b) + 1):
                rows[row][c] = char
                styles[row][c] = style

        def label(row: str, at: float, text: str, style: str) -> None:
            c = col(max(at, start))
            if c + len(text) <= cols and all(ch in " ━█╌" for ch in rows[row][c : c + len(text)]):
                for i, ch in enumerate(text):
                    rows[row][c + i] = ch
                    styles[row][c + i] = style

        for span in self.spans:
            if span.row in ("window", "hold"):
                until = span.end if span.end is not None else min(now, span.due or now)
                style = "cyan" if span.row == "window" else "yellow"
                paint(span.row, span.start, until, "━", style)
                if span.end is None and span.due is not None and span.due > now:
                    paint(span.row, now, span.due, "╌", style)
                if span.end is not None:
                    paint(span.row, span.end, span.end, "✕" if span.how == "fired" else "┤", style)
            elif span.row == "agent":
                played = span.played
                queued_until = played if played is not None else (span.end if span.end is not None else now)
                paint("agent", span.start, queued_until, "·", "yellow")
                if played is not None:
                    paint("agent", played, span.end if span.end is not None else now, "█", "green")
                if span.how == "cancelled":
                    paint("agent", span.end, span.end, "✗", "red")
                elif span.how == "interrupted":
                    paint("agent", span.end, span.end, "/", "magenta")
                elif span.how == "estimated":
                    paint("agent", span.end, span.end, "?", "yellow")
            elif span.row == "still":
                if span.how == "fired":
                    paint("hold", span.end, span.end, "◆", "bold yellow")
                elif span.end is None and span.due is not None:
                    paint("hold", span.due, span.due, "◇", "yellow")
            elif span.row == "caller":
                paint("caller", span.start, span.end if span.end is not None else now, "▒", "green")
            elif span.row == "tools":
                paint("tools", span.start, span.end if span.end is not None else now, "≈", "cyan")
        for span in self.spans:  # labels last, where they fit
            if span.row in ("window", "hold"):
                label(span.row, span.start, span.label, "bold cyan" if span.row == "window" else "bold yellow")
        marks = [" "] * cols
        for t in _ticks(start, end, cols):
            c = col(t)
            tick = f"{t / 1000:g}s"
            if c + len(tick) <= cols and all(m == " " for m in marks[max(0, c - 1) : c + len(tick) + 1]):
                marks[c : c + len(tick)] = list(tick)
        here = col(cursor if cursor is not None else now)
        text = Text()
        for name in ("window", "hold", "agent", "caller", "tools"):
            text.append(f"{name:<{LABEL}}", style="dim")
            for c, (ch, style) in enumerate(zip(rows[name], styles[name], strict=True)):
                if c == here and ch == " ":
                    text.append("│", style="dim")
                else:
                    text.append(ch, style=style)
            text.append("\n")
        text.append(" " * LABEL + "".join(marks), style="dim")
        text.append("\n")
        text.append(
            "━ window/hold (gNN: generation) ╌ still armed ✕ fired ┤ invalidated ◇◆ still-waiting due/said  · queued █ playing "
            "✗ cancelled / cut ? estimated  ▒ caller  ≈ tool  │ " + ("cursor" if cursor is not None else "now"),
            style="dim",
        )
        return text


def _ticks(start: float, end: float, cols: int) -> list[float]:
    span = end - start
    step = 1000.0
    for candidate in (1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000):
        step = candidate
        if span / candidate * 6 <= cols:
            break
    first = (start // step + 1) * step
    return [first + i * step for i in range(int((end - first) // step) + 1)]


class Timeline(Panel):
    """The timeline panel: live (the rehearse screen) or at a cursor (a recording)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.model = TimelineModel()
        self._now = 0.0
        self._cursor: float | None = None

    def reset(self) -> None:
        self.model = TimelineModel()
        self._shown = None

    def add(self, now: float, record: dict) -> None:
        self.model.add(now, record)

    def show(self, now: float, cursor: float | None = None) -> None:
        self._now, self._cursor = now, cursor
        width = self.content_region.width or 60
        self.set_content(self.model.render(now, width, cursor))

    def on_resize(self) -> None:
        self._shown = None
        self.show(self._now, self._cursor)
