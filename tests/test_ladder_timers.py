"""Timer bookkeeping the journal relies on: every replaced timer is said to be stale,
and drivers ask the core which timer to fire instead of reading its store."""

from pathlib import Path

import pytest

from ladder import AskQuestion, Controller, PlaybackCompleted, TimerFired
from sessions.incidents import VirtualRun, library_paths, load_incident
from sessions.scenarios import load_scenario, run_scenario

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.json"))


def armed_without_notice(records: list[dict]) -> list[str]:
    """Timers armed over an armed timer of the same kind with no timer_invalidated first."""
    armed: dict[str, int] = {}
    problems = []
    for r in records:
        if r.get("effect") != "Trace":
            continue
        kind = r.get("kind", "")
        timer = r.get("timer")
        if kind == "timer_invalidated" or kind == "timer_fired":
            armed.pop(timer, None)
        elif kind.endswith("_armed") and timer:
            if timer in armed:
                problems.append(f"{timer} generation {armed[timer]} replaced by {r.get('generation')} at {r.get('at')}")
            armed[timer] = r.get("generation")
    return problems


@pytest.mark.parametrize("path", library_paths(), ids=[p.stem for p in library_paths()])
def test_a_rearmed_timer_is_invalidated_in_the_trace_in_every_incident(path):
    run = VirtualRun(load_incident(path))
    run.run()
    assert armed_without_notice(run.call.records) == []


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_a_rearmed_timer_is_invalidated_in_the_trace_in_every_scenario(path):
    outcome = run_scenario(load_scenario(path), path)
    assert armed_without_notice(outcome.call.records) == []


def test_the_core_names_the_timer_to_fire():
    c = Controller()
    c.handle(AskQuestion("q", "What is your reference code?"), now=0)
    c.handle(PlaybackCompleted(token=1), now=1600)
    deadline = c.next_deadline()
    assert c.next_due_timer(deadline - 1) is None
    event = c.next_due_timer(deadline)
    assert isinstance(event, TimerFired) and event.timer == "window"
    assert event.generation == c.timer("window").generation
