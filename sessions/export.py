"""Regression fixtures from recordings (S7): a session as an incident or a scenario.

An incident holds what the silence controller saw (for a flow session, the events the
flow fed it), so it exercises the ladder alone. A scenario holds the caller's, the
tools' and the media's inputs at their recorded times, plus the flow itself, so it
exercises the whole conversation. Both expect what the core decided in the recording.

A damaged journal exports the steps replay would use (up to the first lost input), and
a recording that stops before the call ended (the process was killed, or the call
was stopped) asserts only what it proves: stages completed, not that the call was
still open, since the simulated call goes on to settle what was in flight.
"""

from __future__ import annotations

from pathlib import Path

from ladder import event_from_dict
from ladder.flow.runtime import FlowRuntime

from .incidents import incident_from_inputs
from .paired import ENDPOINT_KINDS
from .replay import build_core, feed, read_session, session_steps


def _source_note(path: Path, stopped: str | None) -> str:
    note = f"Exported from {Path(path).name}"
    return note + (f" (up to {stopped}; the rest was not exported)" if stopped else "")


def export_incident(path: Path, name: str) -> dict:
    journal = read_session(path)
    core = build_core(journal)
    grouped = session_steps(journal)
    inputs = []
    for step in grouped.steps:
        if step.input is None:
            continue
        if isinstance(core, FlowRuntime):
            feed(core, step.input, journal.path)
        else:
            inputs.append((step.input["t_ms"], event_from_dict(step.input["event"])))
    if isinstance(core, FlowRuntime):
        inputs = core.ladder_inputs
    policy = getattr(core, "ladder", core).policy.model_dump(mode="json")
    return incident_from_inputs(
        name, _source_note(path, grouped.stopped), inputs, policy, source=f"session {Path(path).name}"
    )


def _stages_complete(decisions: list[dict]) -> list[str]:
    """Flow stages whose last trace is a completion (a reopened stage is not complete)."""
    status: dict[str, bool] = {}
    for record in decisions:
        if record.get("effect") is None and record.get("kind") in ("stage_entered", "stage_completed"):
            stage = (record.get("detail") or {}).get("flow_stage") or record.get("reason")
            if isinstance(stage, str):
                status.pop(stage, None)  # keep the order of the last change
                status[stage] = record["kind"] == "stage_completed"
    return [stage for stage, done in status.items() if done]


def export_scenario(path: Path, name: str) -> dict:
    journal = read_session(path)
    header = journal.header
    if header.get("flow_document") is None:
        raise ValueError(f"{path}: not a flow session (no flow document in its header); export it --as incident")
    grouped = session_steps(journal)
    steps: list[dict] = []
    decisions: list[dict] = []
    now = 0.0
    for step in grouped.steps:
        decisions += step.decisions
        record = step.input
        if record is None or record["kind"] in ENDPOINT_KINDS or record["kind"] == "start_call":
            continue
        if record["t_ms"] > now:
            steps.append({"silence_ms": round(record["t_ms"] - now, 3)})
            now = record["t_ms"]
        steps.append({"event": record["event"]})
    used = journal.records[: len(journal.records) - grouped.unused]
    end = used[-1]["t_ms"] if used else now
    if end > now:
        steps.append({"silence_ms": round(end - now, 3)})  # until the recording ends
    closed = [r for r in decisions if r.get("effect") == "SessionClosed"]
    expect: dict = {}
    if closed:
        expect = {"ended": True, "outcome": closed[-1]["outcome"]}
    else:
        # the recording stops with the call open; the simulation settles what was in
        # flight (and may end the call), so only what was already done is expected
        complete = _stages_complete(decisions)
        if complete:
            expect["stages_complete"] = complete
    steps.append({"expect": expect})
    return {
        "schema": 1,
        "name": name,
        "title": _source_note(path, grouped.stopped),
        "flow": header["flow_document"],
        "steps": steps,
    }
