"""Beside an LLM in Pipecat, the model's turn-completion markers are its decisions for
the caller's turns, and they drive Lull's ladder (W8, seed 001): ○ holds, ◐ keeps
listening, ● is an answer the LLM replies to and Lull says nothing over. Each runs a
whole agent on virtual time (tests/llm_pipeline.py): Pipecat's user aggregator with
`FilterIncompleteUserTurnStrategies`, a table LLM with the real turn-completion mixin,
`LullProcessor`, a speaker and the assistant aggregator."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed")

from pipecat.turns.user_turn_completion_mixin import UserTurnCompletionConfig  # noqa: E402

from console_fixtures import journal_text_without_clocks  # noqa: E402
from llm_pipeline import run_agent  # noqa: E402
from model_reading_policy import POLICY, Reader  # noqa: E402
from sessions.replay import replay  # noqa: E402
from voices.understanding.model_reading import HOLD_NOTE  # noqa: E402
from voices.pipecat import LullProcessor  # noqa: E402


def lull(meanings: dict[str, str] | None = None, **kwargs) -> LullProcessor:
    return LullProcessor(POLICY, matcher=Reader(meanings or {}), model_reads_turns=True, **kwargs)


def test_needs_time_from_the_model_holds_the_caller_though_lulls_reader_hears_an_answer():
    # "my wife has the card" reads as an answer to Lull's reader; the model says the caller needs time
    run = run_agent([("wife", "○"), ("found", "● Great, go ahead.")],
                    [(3.0, "my wife has the card", 1.0), (25.0, "found it", 0.8)], seconds=30, lull=lull())
    assert run.lull_said() == ["Sure, take your time."]  # one acknowledgement; no reminder in the 20 s held
    assert run.llm_said() == ["Hello! What is your account number?", "Great, go ahead."]
    first = run.readings()[0]
    assert (first["model"], first["lull"], first["agree"], first["marker"]) == ("wait_request", "answer", False, "○")
    assert "held" in [t.state for t in run.traces("state")]


def test_complete_from_the_model_is_an_answer_and_lull_says_nothing_over_the_llms_reply():
    run = run_agent([("moment", "● Of course. Take all the time you need.")],
                    [(3.0, "just a moment", 1.0)], seconds=9, lull=lull({"just a moment": "wait_request"}))
    assert run.lull_said() == []  # no "Sure, take your time." on top of the LLM's reply
    assert run.llm_said()[-1] == "Of course. Take all the time you need."
    reading = run.readings()[0]
    assert (reading["model"], reading["lull"], reading["agree"]) == ("answer", "wait_request", False)
    assert "held" not in [t.state for t in run.traces("state")]


def test_two_needs_time_in_one_pause_get_one_acknowledgement():
    run = run_agent([("hold", "○"), ("sec", "○")],
                    [(3.0, "hold on", 0.6), (8.0, "one sec", 0.5)], seconds=14, lull=lull())
    assert run.lull_said() == ["Sure, take your time."]
    assert [r["model"] for r in run.readings()] == ["wait_request", "wait_request"]
    assert [r["turn"] for r in run.readings()] == ["user-1", "user-2"]


def test_a_decision_for_an_older_turn_after_the_caller_spoke_again_is_stale():
    # every pause ends a turn here; the model takes 2 s to mark the first, and by then the
    # caller has begun the next
    run = run_agent([("ready", "● Great."), ("hmm", "○", 2.0)],
                    [(3.0, "hmm", 0.4), (4.0, "okay ready", 0.6)], seconds=10, lull=lull(), gated=False)
    stale = [r for r in run.readings() if r["stale"]]
    assert [(r["turn"], r["model"]) for r in stale] == [("user-1", "wait_request")]
    rejected = run.traces("stale_rejected")
    assert [t.reason for t in rejected] == ["superseded_turn"]
    assert "Sure, take your time." not in run.lull_said()


def test_cut_off_mid_thought_keeps_listening_and_the_caller_going_on_gets_no_prompt():
    run = run_agent([("number is", "◐"), ("four", "● Thanks, that's 4821.")],
                    [(3.0, "my account number is", 1.2), (6.5, "four eight two one", 1.5)], seconds=12, lull=lull())
    assert run.lull_said() == []  # no "Go ahead, I'm listening" from anyone
    assert [r["model"] for r in run.readings()] == ["cut_off", "answer"]
    assert run.readings()[0]["agree"] is None  # Lull has no such reading to compare
    assert run.llm_said()[-1] == "Thanks, that's 4821."


def test_after_cut_off_a_caller_who_stays_silent_gets_the_ladder_not_the_mixins_reprompt():
    run = run_agent([("number is", "◐")], [(3.0, "my account number is", 1.2)], seconds=20, lull=lull())
    # the ladder's own reminder, in its own time, for a caller cut off mid-answer
    assert run.lull_said()[:1] == ["What's the rest?"]
    assert len(run.llm.contexts) == 2  # the greeting and the one turn: the LLM was not run again


def test_the_mixins_own_reprompt_never_fires_while_lull_owns_no_input():
    table = [("hold", "○"), ("paused", "● Go ahead, I'm listening."), ("quiet", "● No rush!")]
    owned = run_agent(table, [(3.0, "hold on", 0.6)], seconds=30, lull=lull())
    assert len(owned.llm.contexts) == 2 and not [n for n, _ in owned.lull.notes if n == "second_no_input_owner"]
    # without lull_turn_completion() the mixin re-prompts after 10 s of its own: Lull sees
    # the run go by and journals a second owner of no-input
    mixins = run_agent(table, [(3.0, "hold on", 0.6)], seconds=30, lull=lull(), config=UserTurnCompletionConfig())
    assert len(mixins.llm.contexts) == 3
    assert [n for n, _ in mixins.lull.notes if n == "second_no_input_owner"]


def test_while_the_caller_is_held_the_model_is_told_and_the_note_is_withdrawn_after():
    run = run_agent([("hold", "○"), ("back", "● Great. What is your account number?"), ("four", "● Thanks.")],
                    [(3.0, "hold on a second", 1.0), (12.0, "okay I'm back", 0.8), (17.0, "four eight two one", 1.5)],
                    seconds=22, lull=lull())
    notes = [[m.get("content") == HOLD_NOTE for m in context] for context in run.llm.contexts]
    assert [any(n) for n in notes] == [False, False, True, False]  # there when the turn after the hold is read
    assert not any(m.get("content") == HOLD_NOTE for m in run.context.get_messages())


def test_a_call_beside_an_llm_journals_both_readings_masked_and_replays_clean(tmp_path):
    folder = tmp_path / "call"
    run = run_agent([("hold", "○"), ("four", "● Thanks.")],
                    [(3.0, "hold on", 0.6), (10.0, "it is four eight two one 4821", 1.5)], seconds=16,
                    lull=lull({"it is four eight two one 4821": "wait_request"}, journal_dir=folder))
    run.lull.close_journal()
    text = journal_text_without_clocks(folder / "journal.jsonl")  # a timestamp's digits are no leak
    assert "4821" not in text and "four eight two one" not in text
    records = [json.loads(line) for line in text.splitlines()[1:]]
    readings = [r for r in records if r.get("effect") == "Observation" and r["kind"] == "model_reading"]
    # the reader (scripted) made a wait of the code, but words that are mostly digits answer
    # (model_reading.lull_meaning): the two readings agree there
    assert [(r["model"], r["lull"], r["agree"]) for r in readings] == [
        ("wait_request", "answer", False), ("answer", "answer", True)]
    assert replay(folder).verdict == "CLEAN"
