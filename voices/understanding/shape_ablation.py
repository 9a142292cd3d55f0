"""What each kept word shape adds (`lull bench intents --yardstick FOLDER --shapes`).

The classifier reads a turn; a word shape (ladder.flow.understanding.caller_cues) may then
change its pick. For every phrasing of a yardstick's flows, as written and, where heard
before (`FOLDER/heard/SET/FLOW.CONDITION.json`), as spoken and down the line, the turn is
read with every shape and, where one decided, again without that shape (the next shape in
order may then apply). A shape's figure is the turns it makes right less those it makes
wrong, and the off-topic turns it makes accepted less those it turns away: the same as
reading every turn twice, once without that shape.
"""

from __future__ import annotations

from pathlib import Path

from .heard_phrasings import HeardCache, Hearer, prime_turns, question_options
from .phrasing_bench import NONE_KEY, PhrasingFileError, _build, _flow_intents, load_phrasings

CONDITIONS = ("text", "spoken", "line")


def _turns(folder: Path, set_name: str, flow_path: Path, flow, written: dict[str, list[str]], condition: str):  # noqa: ANN001
    """(intent, text) for a condition; None where what was heard is not in the folder."""
    if condition == "text":
        return [(intent, p) for intent, phrases in written.items() for p in phrases]
    from voices.line.pstn import LineSettings

    cache_path = folder / "heard" / set_name / f"{flow_path.stem}.{condition}.json"
    if not cache_path.is_file():
        return None
    hearer = Hearer(None, question_options(flow), HeardCache(cache_path), cached_only=True)
    line = LineSettings(kind="pstn") if condition == "line" else None
    try:
        return [(t.intent, t.heard) for t in hearer.phrasings(written, line)]
    except PhrasingFileError:
        return None  # heard in part: not a figure for the whole set


def _read(matcher, text: str, without: frozenset[str] | None = frozenset()):  # noqa: ANN001
    """(intent, what decided it) with the shapes `without` left out (None: every shape)."""
    if not text.strip():
        return None, "classifier"
    got, _, reader = matcher.explain(text, without)
    return got, reader


def shape_ablation(folder: Path, sets: tuple[str, ...] = ("dev", "sealed"), conditions: tuple[str, ...] = CONDITIONS) -> dict:
    """Per set and condition: each shape's turns decided, right turns added, off-topic
    turns accepted added (negative: turned away); and the same for every shape at once."""
    flows = sorted(folder.glob("*.json"))
    if not flows:
        raise PhrasingFileError(f"{folder}: no flow files (*.json) to measure")
    out: dict = {"folder": str(folder), "sets": {}}
    for set_name in sets:
        table: dict[str, dict] = {}
        for flow_path in flows:
            path = folder / set_name / flow_path.name
            if not path.is_file():
                raise PhrasingFileError(f"{path}: missing: every flow needs a {set_name} phrasing file beside it")
            flow, intents = _flow_intents(str(flow_path), True)
            written = load_phrasings(path, intents)
            matcher, _ = _build(intents, "classifier")
            for condition in conditions:
                turns = _turns(folder, set_name, flow_path, flow, written, condition)
                row = table.setdefault(condition, {"turns": 0, "flows": 0, "shapes": {},
                                                   "all_shapes": {"right": 0, "off_topic_accepted": 0}})
                if turns is None:
                    row.setdefault("flows_not_heard", []).append(flow_path.stem)
                    continue
                row["flows"] += 1
                row["turns"] += len(turns)
                prime_turns(matcher, [text for _, text in turns])
                for intent, text in turns:
                    got, reader = _read(matcher, text)
                    bare = _read(matcher, text, None)[0]  # no shape at all
                    _tally(row["all_shapes"], intent, got, bare)
                    if reader.startswith("shape:"):
                        shape = reader.split(":", 1)[1]
                        without = _read(matcher, text, frozenset({shape}))[0]
                        _tally(row["shapes"].setdefault(shape, {"decided": 0, "right": 0, "off_topic_accepted": 0}),
                               intent, got, without, decided=True)
        out["sets"][set_name] = table
    return out


def _tally(row: dict, intent: str, got: str | None, without: str | None, decided: bool = False) -> None:
    if decided:
        row["decided"] += 1
    if intent == NONE_KEY:
        row["off_topic_accepted"] += (got is not None) - (without is not None)
    else:
        row["right"] += (got == intent) - (without == intent)


__all__ = ["CONDITIONS", "shape_ablation"]
