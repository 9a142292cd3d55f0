"""Replay a recorded session through the core and compare the decisions (S2).

A journal keeps inputs (caller, media, tool and timer events) apart from decisions.
Replaying feeds the inputs, at their recorded times, to a fresh core built from the
header (the ladder policy, or the flow document) and compares what it decides with
what was recorded: CLEAN, or DRIFT with the first differing record. Observations
(turn latency and other measurements) are neither, and are left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ladder import Controller, LadderPolicy, event_from_dict
from ladder.flow.runtime import FlowRuntime

from .flowfiles import check_data, load_flow
from .journal import Journal, read_journal

OWN_FIELDS = ("seq", "t_ms", "wall", "type")


class ReplayError(ValueError):
    """A journal that cannot be replayed: one line saying why."""


@dataclass
class Replay:
    path: Path
    verdict: str  # CLEAN or DRIFT
    inputs: int
    decisions: int
    first_difference: dict | None  # {"seq", "t_ms", "expected", "got"}
    report: str  # what the journal reader skipped, if anything

    def describe(self) -> str:
        if self.verdict == "CLEAN":
            return f"{self.path}: CLEAN ({self.inputs} inputs, {self.decisions} decisions replayed identically)"
        d = self.first_difference or {}
        return (
            f"{self.path}: DRIFT at journal seq {d.get('seq')} ({d.get('t_ms')} ms): "
            f"recorded {json.dumps(d.get('expected'), sort_keys=True)[:200]} "
            f"but the core now decides {json.dumps(d.get('got'), sort_keys=True)[:200]}"
        )


def build_core(journal: Journal, flow_override=None):
    """A fresh core for this journal: its ladder policy, or its flow (or another one)."""
    header = journal.header
    if flow_override is not None:
        return FlowRuntime(flow_override)
    if header.get("source") == "incident":
        return Controller(LadderPolicy.model_validate(header["ladder_policy"]))
    document = header.get("flow_document")
    if document is not None:
        report = check_data(document, f"{journal.path}: header flow_document")
        if report.flow is None:
            raise ReplayError(report.errors[0].line())
        return FlowRuntime(report.flow)
    name = header.get("flow")
    if not name:
        raise ReplayError(f"{journal.path}: the header names no flow and holds no flow document")
    return FlowRuntime(load_flow(name))


def _clean(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in OWN_FIELDS}


def replay(path: Path, flow_override=None) -> Replay:
    journal = read_journal(path)
    core = build_core(journal, flow_override)
    redact = getattr(core, "redact", lambda r: r)
    pending: list[tuple[int, float, dict]] = []  # recorded decisions not yet matched
    produced: list[dict] = []
    inputs = decisions = 0
    first: dict | None = None

    cut_short = any(skip.reason == "truncated final line" for skip in journal.skipped)

    def compare(last: bool = False) -> None:
        nonlocal first, decisions
        for (seq, t_ms, expected), got in zip(pending, produced, strict=False):
            decisions += 1
            if first is None and expected != got:
                first = {"seq": seq, "t_ms": t_ms, "expected": expected, "got": got}
        if last and cut_short and len(produced) > len(pending):
            del produced[len(pending):]  # decided after the process was killed: not recorded
        if first is None and len(pending) != len(produced):
            extra = pending[len(produced)] if len(pending) > len(produced) else None
            first = {
                "seq": extra[0] if extra else None,
                "t_ms": extra[1] if extra else None,
                "expected": extra[2] if extra else None,
                "got": produced[len(pending)] if len(produced) > len(pending) else None,
            }
        pending.clear()
        produced.clear()

    for record in journal.records:
        if record["type"] == "input":
            compare()
            inputs += 1
            event = event_from_dict(record["event"])
            produced.extend(redact(e.to_dict()) for e in core.handle(event, record["t_ms"]))
        elif record.get("effect") != "Observation":
            pending.append((record["seq"], record["t_ms"], _clean(record)))
    compare(last=True)
    return Replay(path, "CLEAN" if first is None else "DRIFT", inputs, decisions, first, journal.report())
