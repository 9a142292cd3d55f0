"""The same race gives the same verdict through the core on its virtual clock, through
Pipecat and through LiveKit: a playback completion delivered twice for one prompt
reaches the core the second time and is rejected there as stale (L3). Through LiveKit
it was once dropped at the adapter, so the stale record the incident expects was
missing there alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions.incidents import load_incident, run_incident

INCIDENT = Path(__file__).parent / "incidents" / "duplicate_playback_completion.json"


def test_a_duplicated_completion_is_rejected_as_stale_on_the_virtual_clock():
    outcome = run_incident(load_incident(INCIDENT))
    assert outcome.passed, outcome.failures


def test_a_duplicated_completion_is_rejected_as_stale_through_pipecat():
    pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
    from voices.pipecat.incidents import run_incident_via_pipecat

    outcome, _ = run_incident_via_pipecat(load_incident(INCIDENT))
    assert outcome.passed, outcome.failures


def test_a_duplicated_completion_is_rejected_as_stale_through_livekit():
    pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")
    from voices.livekit.incidents import run_incident_via_livekit

    outcome, run = run_incident_via_livekit(load_incident(INCIDENT))
    assert outcome.passed, outcome.failures
    stale = [e for _, e in run.adapter.effects if type(e).__name__ == "Trace" and e.kind == "stale_rejected"]
    assert [t.token for t in stale] == [1]
