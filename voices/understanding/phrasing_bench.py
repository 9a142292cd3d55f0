"""Any flow's intent matching measured against any phrasing file (`lull bench intents
FLOW --phrasings FILE`): how designers measure their own flows on how their callers talk.

A phrasing file is `{"intent": [phrases], ..., "none": [off-topic phrases]}`, its intent
names the flow's (`route:<id>` for a route). Each phrase goes through the matcher the
voice backends use, learning what they learn (Lull's shared phrases and the flow's own
examples: ladder.flow.understanding.shared_intents); a phrase is right when it comes back as its
intent, and an off-topic one is accepted when it comes back as any intent.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from ladder.flow.understanding.shared_intents import flow_intents

NONE_KEY = "none"


class PhrasingFileError(ValueError):
    """A phrasing file Lull cannot measure with: one line naming the file and the field."""


def _said(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def load_phrasings(path: Path, intents: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    """The phrasings, checked against the flow's intents (names, shapes, emptiness)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PhrasingFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise PhrasingFileError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise PhrasingFileError(f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not data:
        raise PhrasingFileError(f'{path}: expected an object of intent -> phrases, like {{"wait_request": ["hold on"], "none": ["what time is it"]}}')
    known = sorted(intents)
    for name, phrases in data.items():
        if name != NONE_KEY and name not in intents:
            raise PhrasingFileError(f"{path}: intent {name!r} is not one the flow's matcher knows; expected one of "
                                    f"{', '.join(known)} or {NONE_KEY!r} (off-topic)")
        if not isinstance(phrases, list) or not phrases or not all(isinstance(p, str) and p.strip() for p in phrases):
            raise PhrasingFileError(f"{path}: {name}: expected a non-empty list of phrases (non-empty strings)")
    return {name: list(phrases) for name, phrases in data.items()}


def _flow_intents(flow_ref: str, shared: bool):
    """The flow and the intents its matcher learns."""
    from sessions.flowfiles import load_flow

    flow = load_flow(flow_ref)
    return flow, (flow_intents(flow.spec) if shared else {k: tuple(v) for k, v in flow.spec.intents.items()})


def _build(intents, matcher_kind: str):
    """The matcher and how long it took to build (ms)."""
    from .interpret import make_matcher

    started = time.perf_counter()
    matcher = make_matcher(intents, None, matcher_kind)  # type: ignore[arg-type]
    return matcher, (time.perf_counter() - started) * 1000.0


def run_phrasing_bench(flow_ref: str, phrasings_path: Path, matcher_kind: str = "classifier", shared: bool = True) -> dict:
    """Right per intent and off-topic accepted, as JSON: {"intents": {name: {"right",
    "total"}}, "off_topic": {"accepted", "total"}}, with the misses, the phrasings found
    word for word in what the matcher learned, and the time a turn takes."""
    flow, intents = _flow_intents(flow_ref, shared)
    load_phrasings(phrasings_path, intents)  # a bad file says so before the models load
    return _measure(flow, intents, *_build(intents, matcher_kind), phrasings_path, matcher_kind, shared)


def _measure(flow, intents, matcher, build_ms: float, phrasings_path: Path, matcher_kind: str, shared: bool) -> dict:
    """One phrasing file through a matcher already built for its flow."""
    phrasings = load_phrasings(phrasings_path, intents)
    learned = {_said(p) for phrases in intents.values() for p in phrases}
    results: dict[str, dict] = {}
    misses: dict[str, dict[str, str]] = {}
    accepted: dict[str, str] = {}
    n = 0
    started = time.perf_counter()
    for name, phrases in phrasings.items():
        for phrase in phrases:
            got = matcher.match(phrase)[0]
            n += 1
            if name == NONE_KEY:
                if got is not None:
                    accepted[phrase] = got
                continue
            row = results.setdefault(name, {"right": 0, "total": 0})
            row["total"] += 1
            if got == name:
                row["right"] += 1
            else:
                misses.setdefault(name, {})[phrase] = got or "unclear"
    match_ms = (time.perf_counter() - started) * 1000.0 / max(1, n)
    right = sum(r["right"] for r in results.values())
    total = sum(r["total"] for r in results.values())
    weakest = min(results, key=lambda k: results[k]["right"] / results[k]["total"]) if results else None
    off_total = len(phrasings.get(NONE_KEY, ()))
    return {
        "flow": flow.spec.name,
        "phrasings": str(phrasings_path),
        "matcher": matcher_kind,
        "shared_phrases": shared,
        "intents": results,
        "off_topic": {"accepted": len(accepted), "total": off_total},
        "pooled": {"right": right, "total": total},
        "weakest": None if weakest is None else {"intent": weakest, **results[weakest]},
        "misses": misses,
        "off_topic_accepted": accepted,
        "learned_word_for_word": [p for ps in phrasings.values() for p in ps if _said(p) in learned],
        "examples_learned": sum(len(v) for v in intents.values()),
        "matcher_build_ms": round(build_ms, 1),
        "match_ms_per_turn": round(match_ms, 2),
    }


__all__ = ["NONE_KEY", "PhrasingFileError", "load_phrasings", "run_phrasing_bench"]


# Issue 27's targets for understanding on phrasings nobody tuned against
TARGET_POOLED = 0.95
TARGET_EVERY_INTENT = 0.85
TARGET_OFF_TOPIC = 1 / 12  # at most 1 of 12 off-topic turns accepted, per flow
TARGET_MS_PER_TURN = 20.0


def run_yardstick(folder: Path, sets: tuple[str, ...] = ("dev", "sealed"), matcher_kind: str = "classifier") -> dict:
    """Every flow in `folder` (*.json) against its phrasing file in each of `sets`
    (folder/dev/NAME.json, folder/sealed/NAME.json): per flow and set the figures of
    `run_phrasing_bench`, pooled per set, and per set each target MET or MISSED."""
    flows = sorted(folder.glob("*.json"))
    if not flows:
        raise PhrasingFileError(f"{folder}: no flow files (*.json) to measure")
    out: dict = {"folder": str(folder), "matcher": matcher_kind, "flows": {}, "sets": {}}
    for flow in flows:
        for name in sets:
            path = folder / name / flow.name
            if not path.is_file():
                raise PhrasingFileError(f"{path}: missing: every flow needs a {name} phrasing file beside it")
        # one matcher a flow, measured on each set (building it is most of the cost)
        flow_spec, intents = _flow_intents(str(flow), True)
        matcher, build_ms = _build(intents, matcher_kind)
        for name in sets:
            result = _measure(flow_spec, intents, matcher, build_ms, folder / name / flow.name, matcher_kind, True)
            out["flows"].setdefault(flow.stem, {})[name] = {
                k: result[k] for k in ("intents", "off_topic", "pooled", "weakest", "misses", "off_topic_accepted",
                                       "learned_word_for_word", "match_ms_per_turn")}
    for name in sets:
        rows = [out["flows"][f.stem][name] for f in flows]
        right = sum(r["pooled"]["right"] for r in rows)
        total = sum(r["pooled"]["total"] for r in rows)
        worst = min(((f.stem, i, v["right"] / v["total"]) for f, r in zip(flows, rows, strict=True)
                     for i, v in r["intents"].items()), key=lambda t: t[2])
        worst_off = max(r["off_topic"]["accepted"] / max(1, r["off_topic"]["total"]) for r in rows)
        ms = max(r["match_ms_per_turn"] for r in rows)
        out["sets"][name] = {
            "pooled": {"right": right, "total": total},
            "weakest": {"flow": worst[0], "intent": worst[1], "share": round(worst[2], 3)},
            "off_topic": {"accepted": sum(r["off_topic"]["accepted"] for r in rows),
                          "total": sum(r["off_topic"]["total"] for r in rows), "worst_share": round(worst_off, 3)},
            "targets": {
                f"pooled >= {TARGET_POOLED:.0%}": right / total >= TARGET_POOLED,
                f"every intent >= {TARGET_EVERY_INTENT:.0%}": worst[2] >= TARGET_EVERY_INTENT,
                "at most 1 of 12 off-topic accepted, every flow": worst_off <= TARGET_OFF_TOPIC + 1e-9,
                f"under {TARGET_MS_PER_TURN:.0f} ms a turn": ms < TARGET_MS_PER_TURN,
            },
        }
    return out


__all__ += ["run_yardstick"]
