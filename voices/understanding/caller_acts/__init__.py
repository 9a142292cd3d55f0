"""Phrasings of the acts every flow shares, written outside the team (README.md here):
data a learned reader trains on beside a flow's own examples and Lull's shared phrases.

`caller_acts()` is the data, read once: act -> phrases, for "wait_request", "ready",
"repeat_request", "backchannel", "person", "go_on_without" and "off_topic";
`yes_no_answers()` the answers to yes/no questions of `yes_no/`.
`with_caller_acts(intents)` is a flow's intents with each act's phrases under the flow's
name for it (`LearnedIntents.act_names`: a route's role under its route), and the
off-topic phrases for the reader's "none" class.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

ACTS = ("wait_request", "ready", "repeat_request", "person", "go_on_without", "backchannel", "off_topic")
_HERE = Path(__file__).parent
# The first writers' brief gave "go on" as a backchannel. To Lull, a caller saying "go on"
# is telling the agent to go on: ready (outside a wait the core takes ready as a
# backchannel anyway, W7). Such phrases are read as ready, not as the brief had them.
GO_ON = re.compile(r"\b(go on|go ahead|carry on|fire away|keep going)\b")


@lru_cache(maxsize=1)
def caller_acts() -> dict[str, tuple[str, ...]]:
    """Every writer's phrases, per act, each phrase once (in file order: reproducible)."""
    acts: dict[str, dict[str, None]] = {act: {} for act in ACTS}
    for path in sorted(_HERE.glob("writer_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for act in ACTS:
            for phrase in data.get(act, ()):
                if isinstance(phrase, str) and phrase.strip():
                    said = phrase.strip()
                    acts["ready" if act == "backchannel" and GO_ON.search(said.lower()) else act][said] = None
    return {act: tuple(phrases) for act, phrases in acts.items()}


YES_NO_MEANINGS = ("yes", "no", "neither")


@lru_cache(maxsize=1)
def yes_no_answers() -> tuple[tuple[str, str], ...]:
    """Answers to yes/no questions (`yes_no/writer_*.json`): (what the caller said, "yes" |
    "no" | "neither"), every writer's, once each, in file order."""
    rows: dict[str, str] = {}
    for path in sorted((_HERE / "yes_no").glob("writer_*.json")):
        for entry in json.loads(path.read_text(encoding="utf-8")):
            said, means = str(entry.get("said", "")).strip(), entry.get("means")
            if said and means in YES_NO_MEANINGS:
                rows.setdefault(said, means)
    return tuple(rows.items())


def with_caller_acts(intents, off_topic: tuple[str, ...]):  # noqa: ANN001
    """(intents with the acts' phrases added under the flow's names, off-topic phrases
    for the "none" class). A phrase already under another intent is not added twice."""
    names = getattr(intents, "act_names", None)
    if not names:
        return intents, off_topic
    acts = caller_acts()
    taken = {p for phrases in intents.values() for p in phrases}
    merged = type(intents)(intents)
    for attr in ("own", "own_by_intent", "route_cues", "chosen_by_words", "cues", "act_names", "asks_yes_no"):
        if hasattr(intents, attr):
            setattr(merged, attr, getattr(intents, attr))
    for act, name in names.items():
        if name in merged:
            extra = [p for p in acts.get(act, ()) if p not in taken]
            merged[name] = tuple(dict.fromkeys([*merged[name], *extra]))
            taken.update(extra)
    none = tuple(dict.fromkeys([*off_topic, *(p for p in acts["off_topic"] if p not in taken)]))
    return merged, none


__all__ = ["ACTS", "caller_acts", "with_caller_acts"]
