"""A yes or a no where the caller's words hold no yes/no word: the learned yes/no reader
(voices.understanding.yes_no_reader) and how the flow takes its reading."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ladder.events import CallerUtterance
from test_requests_are_not_values import asked

FLOWS = Path(__file__).parent / "flows" / "yardstick2"


# -- the flow takes the reading only where the words and the intent leave room -------------

@pytest.mark.parametrize("said, intent, score, yes_no, value, read_by_it", [
    ("please do", None, 0.3, True, True, True),  # no yes/no word: the reading answers
    ("mm hmm", "backchannel", 0.9, True, True, True),  # "uh huh" to "is it red?" is a yes
    ("go on then, i'm looking at it", "ready", 0.8, True, True, True),
    ("no need", None, 0.3, True, False, False),  # the words' own no stands over the reading
    ("i'd rather speak to a technician", "route:technician", 0.8, True, None, False),  # a route is no yes
    ("let me go and look", "wait_request", 0.95, True, None, False),
    ("what colour is it meant to be", None, 0.3, None, None, False),  # neither: nothing to fill
])
def test_a_learned_reading_answers_only_where_the_words_and_the_intent_leave_room(said, intent, score, yes_no, value,
                                                                                   read_by_it):
    runtime = asked("broadband_fault")
    effects = runtime.handle(CallerUtterance("user-1", 1, said, intent, score, yes_no=yes_no), 1000)
    assert runtime.state.get("router_red") == value
    learned = [e for e in effects if getattr(e, "kind", None) == "yes_no_read"]
    assert bool(learned) == read_by_it  # the journal says what read it


def test_what_read_the_turn_is_said_with_the_readers_probability():
    from console.describe import describe, explain, how_read

    runtime = asked("broadband_fault")
    effects = runtime.handle(CallerUtterance("user-1", 1, "uh huh", "backchannel", 0.99, yes_no=True,
                                             yes_no_score=0.8312), 1000)
    records = {e.kind: {"effect": "Trace", "kind": e.kind, "reason": e.reason, **e.detail}
               for e in effects if getattr(e, "kind", None) in ("yes_no_read", "utterance")}
    assert records["yes_no_read"]["score"] == 0.831
    assert describe(records["yes_no_read"]) == "router_red read as yes by the learned yes/no reader 0.83 (no yes/no word in the words)"
    assert how_read(records["utterance"]) == " (yes, read by the learned yes/no reader 0.83)"
    assert "learned yes/no reader" in explain(records["yes_no_read"])  # the why panel's rule
    # a yes in the words: the words read it, and the record says no more than that
    runtime = asked("broadband_fault")
    effects = runtime.handle(CallerUtterance("user-1", 1, "yes it is", "backchannel", 0.99, yes_no=True,
                                             yes_no_score=0.9), 1000)
    utterance = next(e for e in effects if getattr(e, "kind", None) == "utterance")
    assert "yes_no_score" not in utterance.detail
    assert how_read({"kind": "utterance", "reason": utterance.reason, **utterance.detail}) == " (a value for the pending question)"


def test_a_reading_at_a_question_that_is_not_a_yes_no_fills_nothing():
    runtime = asked("table_booking")
    runtime.handle(CallerUtterance("user-1", 1, "please do", None, 0.3, yes_no=True), 1000)
    assert runtime.state.get("party_size") is None


def test_the_reading_travels_in_the_event_and_an_old_journal_without_it_reads_as_before():
    from ladder.events import event_from_dict

    event = CallerUtterance("user-1", 1, "aye", None, 0.3, reader="classifier", yes_no=True)
    record = event.to_dict()
    assert record["yes_no"] is True and event_from_dict(record) == event
    del record["yes_no"]  # a journal written before the reader
    assert event_from_dict(record).yes_no is None


# -- the reader itself: real MiniLM, trained once a worker ---------------------------------

@pytest.fixture(scope="module")
def matcher():
    from voices.understanding.phrasing_bench import _build, _flow_intents

    _, intents = _flow_intents(str(FLOWS / "broadband_fault.json"), True)
    return _build(intents, "classifier")[0]


def test_the_data_is_answers_then_acts_and_off_topic_as_neither():
    from voices.understanding.intent_classifier import OFF_TOPIC_TRAINING
    from voices.understanding.yes_no_reader import CLASSES, answers, training_rows

    rows = answers()
    assert len(rows) > 1300 and {m for _, m in rows} == set(CLASSES)
    said, labels = training_rows(OFF_TOPIC_TRAINING)
    counts = {c: int((labels == i).sum()) for i, c in enumerate(CLASSES)}
    assert counts["yes"] > 500 and counts["no"] > 500 and counts["neither"] > 3000
    # backchannels and "go on" are not taught as neither: said to a yes/no question they answer it
    assert "go on then" not in said[len(rows):] and "uh huh" not in said[len(rows):]


def test_the_held_out_answers_were_not_learned():
    from voices.understanding.yes_no_reader import answers

    learned = {" ".join(s.lower().split()) for s, _ in answers()}
    for name in ("yes_no_dev.json", "yes_no_sealed.json"):
        held = {" ".join(x["said"].lower().split()) for x in json.loads((FLOWS / "answers" / name).read_text())}
        assert not learned & held, name


@pytest.mark.parametrize("said, meaning", [
    ("aye", True),
    ("that would be great thanks", True),
    ("what time do you shut on a sunday", None),
    ("the bins weren't collected last week", None),
    ("my neighbour has the same router", None),
])
def test_the_reader_takes_answers_without_a_yes_no_word_and_leaves_other_turns(matcher, said, meaning):
    from ladder.flow.understanding.text import parse_yes_no

    assert parse_yes_no(said) is None  # the words alone say nothing
    got, p = matcher.yes_no(said)
    assert got is meaning, (said, got, p)


def test_a_typed_call_answers_a_yes_no_in_its_own_words(tmp_path):
    from console.headless import rehearse_headless
    from sessions.flowfiles import load_flow
    from sessions.journal import read_journal
    from sessions.live import LiveSession
    from voices.backends.text import TextBackend

    lines, stream = [], []
    backend = TextBackend(ms_per_word=20, start_delay_ms=10, matcher_kind="classifier",
                          on_line=lambda who, text: lines.append((who, text)))
    session = LiveSession(load_flow(str(FLOWS / "broadband_fault.json")), backend, journal_dir=tmp_path / "take")
    asyncio.run(asyncio.wait_for(rehearse_headless(session, backend.say, lines=iter(["aye"]), write=stream.append,
                                                   speaking=lambda: backend.speaking), timeout=60))
    assert session.runtime.state.get("router_red") is True
    # the event stream (and the console's log) says what read it
    assert any("router_red read as yes by the learned yes/no reader" in line for line in stream), stream
    journal = read_journal(tmp_path / "take")
    said = [r for r in journal.inputs() if r["kind"] == "caller_utterance"]
    assert said and said[0]["event"]["yes_no"] is True
