"""Coverage over a corpus of journals (`lull sessions coverage`): per flow, how often each
stage, ladder stage, route and intent was reached, and which never were.

What counts as reached, from the records every journal holds:
- a flow stage: `stage_entered` (the runtime made it active);
- a ladder stage: the first when an episode starts, the next at each `stage_advanced`;
- a route: a `RouteTaken` effect (the caller took it);
- an intent: an `utterance` the matcher read as it (a flow's intent names, shared ones
  included), or, in a session with no flow (an incident), a `turn_interpreted` intent.

Beside an LLM, the agent's own model reads the caller's turns too: its readings and how
often Lull's agreed are counted per flow (sessions.model_readings).

What could have been reached comes from the journal's header: the flow document it
carries (compiled as it was recorded) or the incident's ladder policy. A journal that
cannot be read is named with why, never half-read; one read up to damage (lines
skipped, records missing) counts what it holds and is named too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ladder import LadderPolicy
from ladder.events import INTENTS
from ladder.flow.understanding.shared_intents import flow_intents
from ladder.policy import ABSENT_FROM_OLD_POLICIES

from .corpus import map_sessions, named, verdict
from .flowfiles import check_data
from .journal import JournalScan, Unread, iter_records, reason_of
from .model_readings import ModelReadings, is_model_reading

KINDS = ("stages", "ladder_stages", "routes", "intents")
ANSWERS = ("answer", "partial_answer", "decline")  # a turn read as a value: no intent reached
INCIDENTS = "(incidents: the ladder alone)"


@dataclass
class FlowCoverage:
    sessions: int = 0
    known: dict[str, set[str]] = field(default_factory=lambda: {k: set() for k in KINDS})
    reached: dict[str, Counter] = field(default_factory=lambda: {k: Counter() for k in KINDS})
    model_readings: ModelReadings = field(default_factory=ModelReadings)

    def to_dict(self) -> dict:
        out: dict = {"sessions": self.sessions}
        for kind in KINDS:
            names = sorted(self.known[kind] | set(self.reached[kind]))
            out[kind] = {name: self.reached[kind][name] for name in names}
        out["never"] = {kind: [n for n, c in out[kind].items() if c == 0] for kind in KINDS}
        out["model_readings"] = self.model_readings.to_dict()
        return out


@dataclass
class Coverage:
    flows: dict[str, FlowCoverage] = field(default_factory=dict)
    sessions: int = 0
    unreadable: list[Unread] = field(default_factory=list)  # not counted
    read_in_part: list[Unread] = field(default_factory=list)  # counted up to their damage

    def note_unreadable(self, unread: Unread) -> None:
        self.unreadable.append(unread)

    def add(self, other: Coverage) -> None:
        self.sessions += other.sessions
        self.unreadable += other.unreadable
        self.read_in_part += other.read_in_part
        for name, theirs in other.flows.items():
            mine = self.flows.setdefault(name, FlowCoverage())
            mine.sessions += theirs.sessions
            for kind in KINDS:
                mine.known[kind] |= theirs.known[kind]
                mine.reached[kind].update(theirs.reached[kind])
            mine.model_readings.add(theirs.model_readings)

    def to_dict(self) -> dict:
        return {"sessions": self.sessions, "verdict": verdict(self.sessions, self.unreadable, self.read_in_part),
                "unreadable": named(self.unreadable), "read_in_part": named(self.read_in_part),
                "flows": {name: c.to_dict() for name, c in sorted(self.flows.items())}}


def _known_from_flow(header: dict) -> tuple[str, dict[str, set[str]]] | None:
    document = header.get("flow_document")
    if not isinstance(document, dict):
        return None
    report = check_data(document, "header flow_document", ladder_defaults=header.get("ladder_defaults", 1))
    if report.flow is None:
        return None
    flow = report.flow
    ladder_stages = {s.name for s in flow.ladder.stages}
    for policy in flow._stage_policies.values():
        ladder_stages |= {s.name for s in policy.stages}
    known = {
        "stages": {sid for layer in (flow.main, *flow.overlays) for sid in layer.order},
        "ladder_stages": ladder_stages,
        "routes": {r.id for r in flow.ladder.routes},
        "intents": set(flow_intents(flow.spec)),
    }
    return flow.spec.name, known


def _known_from_policy(header: dict) -> dict[str, set[str]]:
    known = {k: set() for k in KINDS}
    data = header.get("ladder_policy")
    if isinstance(data, dict):
        try:
            policy = LadderPolicy.model_validate({**ABSENT_FROM_OLD_POLICIES, **data})
        except ValueError:
            return known
        known["ladder_stages"] = {s.name for s in policy.stages}
        known["routes"] = {r.id for r in policy.routes}
    known["intents"] = set(INTENTS)
    return known


def session_coverage(path: Path, into: Coverage) -> None:
    """One session's reach, added to `into` under its flow."""
    scan = JournalScan()
    reached = {k: Counter() for k in KINDS}
    readings = ModelReadings()
    flowless = None  # known from the header, which iter_records reads before any record
    try:
        for record in iter_records(path, scan):
            if flowless is None:
                flowless = "flow_document" not in (scan.header or {})
            if record.get("type") != "decision":
                continue
            kind, effect = record.get("kind"), record.get("effect")
            detail = record.get("detail") or {}
            if effect == "RouteTaken":
                reached["routes"][record.get("route")] += 1
            elif is_model_reading(record):
                readings.feed(record)
            elif effect is not None:
                continue
            elif kind == "stage_entered":
                reached["stages"][detail.get("flow_stage") or record.get("reason")] += 1
            elif kind == "episode_started" and record.get("stage"):
                reached["ladder_stages"][record["stage"]] += 1
            elif kind == "stage_advanced" and record.get("stage"):
                reached["ladder_stages"][record["stage"]] += 1
            elif kind == "utterance" and detail.get("matched") and detail.get("ladder_intent", record.get("reason")) \
                    not in ANSWERS:
                # a "yes" to a yes/no question is an answer, whatever the matcher's nearest
                # intent was (backchannel): it reached no intent
                reached["intents"][detail["matched"]] += 1
            elif kind == "turn_interpreted" and flowless and detail.get("intent"):
                reached["intents"][detail["intent"]] += 1
    except (ValueError, OSError) as exc:
        into.unreadable.append(Unread(str(path), reason_of(exc, path)))
        return
    damage = scan.damage()
    if damage:
        into.read_in_part.append(Unread(str(path), damage))
    header = scan.header or {}
    found = _known_from_flow(header)
    if found is not None:
        name, known = found
    else:
        source = header.get("source") or "unknown"
        # a session with no flow: the ladder alone, grouped by where it came from
        name = INCIDENTS if source == "incident" else (header.get("flow") or f"({source}: the ladder alone)")
        known = _known_from_policy(header)
    flow = into.flows.setdefault(name, FlowCoverage())
    flow.sessions += 1
    into.sessions += 1
    for kind in KINDS:
        flow.known[kind] |= known[kind]
        flow.reached[kind].update({k: v for k, v in reached[kind].items() if k})
    readings.end_session()
    flow.model_readings.add(readings)


def _one(path: Path) -> Coverage:
    part = Coverage()
    session_coverage(path, part)
    return part


def coverage(roots: list[Path], workers: int | None = None, progress: Callable[[int], None] | None = None,
             scheduler: Any = None) -> Coverage:
    """Every session under `roots` (session folders, archives, or folders of them)."""
    return map_sessions(roots, _one, Coverage(), workers, progress, scheduler)


__all__ = ["INCIDENTS", "KINDS", "Coverage", "FlowCoverage", "coverage", "session_coverage"]
