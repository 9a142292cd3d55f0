"""The scenario corpus runs as tests: every seed-002 behaviour and the default flow."""

from pathlib import Path

import pytest
from console_fixtures import journal_text_without_clocks

from sessions.scenarios import load_scenario, run_scenario

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.json"))

# the behaviours the flows issue names, by the scenario that shows each
REQUIRED = {
    "corrected_slot_reopens_confirmation",
    "repeated_barge_ins_escalate_to_handoff",
    "verbatim_paraphrase_then_exact",
    "verbatim_paraphrase_alone_never_completes",
    "retried_commit_charges_once",
    "failed_commit_runs_compensation",
    "silence_reprompts_once_per_silence",
    "slow_tool_cues_filler",
    "fast_tool_no_filler",
    "uninterruptible_stage_holds_the_floor",
    "digressions_resume_restart_terminate",
    "safety_handoff_terminates_and_denies_tools",
    "redacted_keys_stay_out_of_the_journal",
    "default_answer_at_once",
    "default_hold_then_answer",
    "default_silence_to_safe_close",
    "default_transport_failure",
}


def test_the_corpus_covers_every_required_behaviour():
    assert REQUIRED <= {p.stem for p in SCENARIOS}


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_passes(path):
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert any(step.expect is not None for step in scenario.steps), "a scenario must check something"
    outcome = run_scenario(scenario, path)
    assert outcome.passed, "\n".join(outcome.failures)


def test_a_recorded_scenario_journal_is_redacted_and_readable(tmp_path):
    from sessions.journal import read_journal

    path = next(p for p in SCENARIOS if p.stem == "default_answer_at_once")
    run_scenario(load_scenario(path), path, record_to=tmp_path / "s")
    journal = read_journal(tmp_path / "s")
    assert journal.skipped == []
    text = journal_text_without_clocks(tmp_path / "s" / "journal.jsonl")
    assert "4821" not in text and "4 8 2 1" not in text
    assert "[redacted]" in text
    kinds = [r["kind"] for r in journal.inputs()]
    assert kinds[0] == "start_call" and "caller_utterance" in kinds
