"""The silence ladder: every stage with the current one lit, badges and two bars."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ladder.policy import LadderPolicy

BADGES = {
    "held": ("HOLD", "black on yellow"),
    "recovering": ("RECOVERY", "white on red"),
    "tool_wait": ("TOOL WAIT", "black on cyan"),
    "closing": ("CLOSING", "white on magenta"),
    "closed": ("CLOSED", "white on grey35"),
    "hearing": ("CALLER SPEAKING", "black on green"),
}


def bar(fraction: float, width: int = 24) -> str:
    fraction = min(max(fraction, 0.0), 1.0)
    filled = round(fraction * width)
    return "█" * filled + "░" * (width - filled)


class LadderPanel(Static):
    """Rendered from a controller snapshot; knows nothing of where it came from."""

    def show(self, snapshot: dict, policy: LadderPolicy, now: float) -> None:
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
        for i, stage in enumerate(policy.stages):
            lit = i == current
            marker = "▶ " if lit else "  "
            prompt = f" “{stage.prompt[:38]}…”" if stage.prompt and len(stage.prompt) > 38 else (f" “{stage.prompt}”" if stage.prompt else "")
            style = "bold reverse" if lit else ("dim" if current is not None and i < current else "")
            text.append(f"{marker}{i + 1}. {stage.name} ({stage.wait_ms / 1000:g}s){prompt}\n", style=style)
        if episode is not None:
            used = episode["hold_used_ms"]
            text.append(f"hold budget {bar(used / policy.hold_budget_ms)} {used / 1000:.1f}/{policy.hold_budget_ms / 1000:g}s\n")
            if episode["outcome"] is None:
                elapsed = now - episode["started_at"]
                text.append(f"episode     {bar(elapsed / policy.episode_ms)} {elapsed / 1000:.1f}/{policy.episode_ms / 1000:g}s")
            else:
                text.append(f"episode {episode['id']} ended: {episode['outcome']}", style="bold")
        else:
            text.append("no pending question", style="dim")
        self.update(text)
