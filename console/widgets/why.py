"""Why the ladder made a move: the rule, and the inputs that led to it."""

from __future__ import annotations

from rich.text import Text

from ..describe import describe, describe_input, explain, seconds
from .panel import Panel


def why_text(now: float, record: dict, before: list[tuple[float, dict]]) -> Text:
    """`before`: the call's records up to and including this one, oldest first."""
    text = Text()
    text.append(f"[{seconds(now)}] {describe(record, verbose=True) or record.get('kind', '')}\n", style="bold")
    text.append("rule: ", style="dim")
    text.append(explain(record) + "\n")
    trigger = next((r for _, r in reversed(before) if "effect" not in r and "event" in r), None)
    text.append("led to by: ", style="dim")
    text.append((describe_input(trigger["event"]) if trigger else "the call's start") + "\n")
    generation = record.get("generation")
    if generation is not None:
        armed = next(
            (
                (t, r)
                for t, r in reversed(before)
                if r.get("effect") == "Trace" and r.get("kind", "").endswith("_armed") and r.get("generation") == generation
            ),
            None,
        )
        if armed is not None:
            t, r = armed
            text.append("its timer: ", style="dim")
            text.append(
                f"{r.get('timer')} gen {generation} armed at {seconds(t)} from {r.get('origin')}, due {seconds(r.get('due'))}\n"
            )
    said = next(
        ((t, r) for t, r in reversed(before) if "effect" not in r and r.get("kind") == "caller_utterance"), None
    )
    if said is not None:
        text.append("caller last said: ", style="dim")
        text.append(f"“{said[1]['event'].get('text', '')}” at {seconds(said[0])}\n")
    for key in ("stage", "state", "episode", "token", "turn"):
        if record.get(key) is not None:
            text.append(f"{key} {record[key]}  ", style="dim")
    return text


class WhyPanel(Panel):
    def on_mount(self) -> None:
        self.set_content(Text("Choose a line of the event log (enter or click) to see the rule behind it.", style="dim"))

    def explain(self, now: float, record: dict, history) -> None:
        records = list(history.records)
        # the records up to this one (identity: the very dict the log holds)
        upto = next((i for i in range(len(records) - 1, -1, -1) if records[i][1] is record), len(records) - 1)
        self.set_content(why_text(now, record, records[max(0, upto - 400) : upto + 1]))
