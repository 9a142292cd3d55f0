"""The silence ladder: every stage with the current one lit, badges and two bars."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text

from ladder.policy import LadderPolicy

from .panel import Panel

BADGES = {
    "held": ("HOLD", "black on yellow"),
    "recovering": ("RECOVERY", "white on red"),
    "tool_wait": ("TOOL WAIT", "black on cyan"),
    "closing": ("CLOSING", "white on magenta"),
    "closed": ("CLOSED", "white on grey35"),
    "hearing": ("CALLER SPEAKING", "black on green"),
}


def bar(fraction: float, width: int = 20) -> str:
    fraction = min(max(fraction, 0.0), 1.0)
    filled = round(fraction * width)
    return "█" * filled + "░" * (width - filled)


def shorten(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary (never mid-word), with "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rsplit(" ", 1)[0].rstrip(" ,.;:")
    return (cut or text[:limit]) + "…"


def hold_used_ms(snapshot: dict, now: float) -> float:
    """The hold budget used so far, counting a hold that is still running (the core adds
    a hold's time to `hold_used_ms` when it ends)."""
    episode = snapshot.get("episode") or {}
    used = float(episode.get("hold_used_ms") or 0.0)
    started = episode.get("hold_started_at")
    if started is not None:
        until = episode.get("hold_until")
        used += max(0.0, min(now, until if until is not None else now) - started)
    return used


def amount(used_ms: float, total_ms: float) -> str:
    """"12/90s": whole seconds (the panel redraws once a second), tenths for short bounds."""
    digits = 1 if total_ms < 10_000 else 0
    return f"{used_ms / 1000:.{digits}f}/{total_ms / 1000:g}s"


class LadderPanel(Panel):
    """Rendered from a controller snapshot; knows nothing of where it came from."""

    _last: tuple | None = None

    def show(self, snapshot: dict, policy: LadderPolicy, now: float, words: list[str] | None = None) -> None:
        """`words`: what each stage would say now (`Controller.stage_words`: after a
        partial answer, the rest asked for and the partial close), where the caller has a
        live controller; else each stage's wording composed from the policy."""
        self._last = (snapshot, policy, now, words)
        self.set_content(ladder_text(snapshot, policy, now, width=self.content_region.width, words=words))

    def on_resize(self) -> None:
        if self._last is not None:  # the words are laid out for the width: lay them out again
            self.show(*self._last)


QUOTE_INDENT = 5  # under the stage's name: "▶ 1. " is five cells
UNSIZED_QUOTE = 34  # characters of a stage's words before the panel has a width


def stage_lines(head: str, spoken: str, width: int) -> list[str]:
    """A stage's line, and its words in quotes: beside it when both fit the width,
    else on one line of their own under the stage's name, shortened at a word to fit
    (so the panel never wraps a line, and a long prompt takes two lines, not three)."""
    if not spoken:
        return [head]
    if width <= 0:
        return [f"{head} “{shorten(spoken, UNSIZED_QUOTE)}”"]
    beside = f"{head} “{spoken}”"
    if cell_len(beside) <= width:
        return [beside]
    room = max(8, width - QUOTE_INDENT - 2)
    return [head, " " * QUOTE_INDENT + f"“{shorten(spoken, room - 1 if len(spoken) > room else room)}”"]


def ladder_text(snapshot: dict, policy: LadderPolicy, now: float, width: int = 0, words: list[str] | None = None) -> Text:
    text = Text()
    state = snapshot["state"]
    text.append("state ", style="dim")
    text.append(f"{state}", style="bold")
    badge = BADGES.get(state)
    if badge:
        text.append("  ")
        text.append(f" {badge[0]} ", style=badge[1])
    text.append("\n")
    episode = snapshot.get("episode")
    current = episode["stage_index"] if episode and episode["outcome"] is None else None
    holding = state == "held" or bool(episode and episode.get("held") and "hold" in snapshot.get("timers", {}))
    for i, stage in enumerate(policy.stages):
        here = i == current
        # the words as the agent would say them now: {routes} composed from the routes
        # available, a sentence naming a switched-off route left out
        spoken = words[i] if words is not None and i < len(words) else (policy.compose(stage)[0] if stage.prompt else "")
        if here and holding:
            marker, style = "⏸ ", "bold"  # the ladder waits on the hold: no stage is running
        elif here:
            marker, style = "▶ ", "bold reverse"
        else:
            marker, style = "  ", "dim" if current is not None and i < current else ""
        head = f"{marker}{i + 1}. {stage.name} ({stage.wait_ms / 1000:g}s)"
        if stage.prompt and not spoken:
            head += " (says nothing now)"
        for line in stage_lines(head, spoken, width):
            text.append(f"{line}\n", style=style)
    if holding and current is not None:
        text.append("⏸ on hold: the ladder resumes here when the hold ends\n", style="black on yellow")
    if episode is not None:
        used = hold_used_ms(snapshot, now)
        text.append(f"hold    {bar(used / policy.hold_budget_ms)} {amount(used, policy.hold_budget_ms)}\n")
        if episode["outcome"] is None:
            elapsed = max(0.0, now - episode["started_at"])
            text.append(f"episode {bar(elapsed / policy.episode_ms)} {amount(elapsed, policy.episode_ms)}")
        else:
            text.append(f"episode {episode['id']} ended: {episode['outcome']}", style="bold")
    else:
        text.append("no pending question", style="dim")
    return text
