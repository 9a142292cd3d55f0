"""The timer lane (armed windows, countdowns, rejected callbacks) and the prompt lane."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

STATUS_STYLE = {
    "requested": "yellow",
    "started": "bold green",
    "completed": "green",
    "cancelled_before_playback": "red",
    "interrupted": "magenta",
    "failed": "bold red",
}


class TimerLane(Static):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rejected: list[dict] = []

    def note(self, record: dict) -> None:
        if record.get("effect") == "Trace" and record.get("kind") in ("stale_rejected", "rejected"):
            self.rejected = (self.rejected + [record])[-4:]

    def show(self, snapshot: dict, now: float) -> None:
        text = Text()
        timers = snapshot["timers"]
        if not timers:
            text.append("no timer armed\n", style="dim")
        for kind, timer in sorted(timers.items(), key=lambda kv: kv[1]["due"]):
            left = (timer["due"] - now) / 1000
            origin = timer["origin"]
            style = "yellow" if origin == "estimated" else ""
            text.append(f"{kind:<17} gen {timer['generation']:<4} {origin:<22} ", style=style)
            text.append(f"{left:6.1f}s\n", style="bold" if left < 2 else "")
        for record in self.rejected:
            what = record.get("event", "?")
            ident = record.get("generation") if record.get("generation") is not None else record.get("token")
            text.append(f"✗ {what} {ident}: {record['reason']}\n", style="red")
        self.update(text)


class PromptLane(Static):
    def show(self, snapshot: dict) -> None:
        text = Text()
        prompts = snapshot["prompts"][-8:]
        if not prompts:
            text.append("no prompt yet", style="dim")
        for p in prompts:
            status = p["status"]
            est = " (completion estimated)" if p["completion_estimated"] else ""
            stage = f" {p['stage']}" if p["stage"] else ""
            text.append(f"#{p['token']:<3} {p['kind']:<15}{stage:<18} ")
            text.append(f"{status}{est}\n", style=STATUS_STYLE.get(status, ""))
        self.update(text)
