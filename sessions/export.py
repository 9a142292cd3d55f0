"""Regression fixtures from recordings (S7): a session as an incident or a scenario.

An incident holds what the silence controller saw (for a flow session, the events the
flow fed it), so it exercises the ladder alone. A scenario holds the caller's, the
tools' and the media's inputs at their recorded times, plus the flow itself, so it
exercises the whole conversation. Both expect what the core decided in the recording.
"""

from __future__ import annotations

from pathlib import Path

from ladder import event_from_dict
from ladder.flow.runtime import FlowRuntime

from .incidents import incident_from_inputs
from .journal import read_journal
from .paired import ENDPOINT_KINDS
from .replay import build_core


def export_incident(path: Path, name: str) -> dict:
    journal = read_journal(path)
    core = build_core(journal)
    inputs = []
    for record in journal.records:
        if record["type"] == "input":
            event = event_from_dict(record["event"])
            if isinstance(core, FlowRuntime):
                core.handle(event, record["t_ms"])
            else:
                inputs.append((record["t_ms"], event))
    if isinstance(core, FlowRuntime):
        inputs = core.ladder_inputs
    policy = getattr(core, "ladder", core).policy.model_dump(mode="json")
    return incident_from_inputs(name, f"Exported from {Path(path).name}", inputs, policy, source=f"session {Path(path).name}")


def export_scenario(path: Path, name: str) -> dict:
    journal = read_journal(path)
    header = journal.header
    if header.get("flow_document") is None:
        raise ValueError(f"{path}: not a flow session (no flow document in its header); export it --as incident")
    steps: list[dict] = []
    now = 0.0
    closed = [r for r in journal.decisions() if r.get("effect") == "SessionClosed"]
    for record in journal.records:
        if record["type"] != "input" or record["kind"] in ENDPOINT_KINDS or record["kind"] == "start_call":
            continue
        if record["t_ms"] > now:
            steps.append({"silence_ms": round(record["t_ms"] - now, 3)})
            now = record["t_ms"]
        steps.append({"event": record["event"]})
    end = journal.records[-1]["t_ms"] if journal.records else now
    if end > now:
        steps.append({"silence_ms": round(end - now, 3)})  # until the recording ends
    expect: dict = {"ended": bool(closed)}
    if closed:
        expect["outcome"] = closed[-1]["outcome"]
    steps.append({"expect": expect})
    return {
        "schema": 1,
        "name": name,
        "title": f"Exported from {Path(path).name}",
        "flow": header["flow_document"],
        "steps": steps,
    }
