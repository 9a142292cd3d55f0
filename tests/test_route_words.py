"""A route named by its own words (ladder.flow.understanding.route_words): which words name a route,
when a turn names one, and that the classifier's unsure turns are decided by them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ladder.flow.understanding.route_words import chosen_by_words, content_words, named_route, route_cues
from ladder.flow.understanding.shared_intents import flow_intents
from sessions.flowfiles import load_flow

YARDSTICK = Path(__file__).resolve().parent / "flows" / "yardstick"


@pytest.fixture(scope="module")
def clinic():
    return load_flow(str(YARDSTICK / "clinic_checkin.json")).spec


@pytest.fixture(scope="module")
def water():
    return load_flow(str(YARDSTICK / "water_account.json")).spec


def test_a_route_keeps_only_the_words_that_are_its_alone(clinic):
    cues = route_cues(clinic)
    # the reception desk is what the go-on-without route offers; the nurse route has its own words
    assert {"reception", "desk", "name"} <= cues["route:no_ref"]
    assert "nurse" in cues["route:nurse"] and "reception" not in cues["route:nurse"]
    # the question's words and the value's names are nobody's cue
    for words in cues.values():
        assert not words & {"booking", "reference", "appointment", "digit", "text", "letter"}


def test_a_channel_brings_its_kin(water):
    # the route says "post" and "posted"; a caller may say "mail"
    assert {"post", "mail"} <= route_cues(water)["route:by_post"]


def test_only_a_route_that_is_another_way_is_chosen_by_words(clinic):
    assert chosen_by_words(clinic) == {"route:no_ref"}


@pytest.mark.parametrize(("said", "named"), [
    ("can reception look me up instead", "route:no_ref"),
    ("I'll just go to reception", "route:no_ref"),
    ("can I just give them my name", "route:no_ref"),
    # a question about the same thing is not asking for another way
    ("what time does reception open", None),
    ("is the front desk on the ground floor", None),
    # two routes named: nothing decided
    ("just put me through to the nurse at reception", None),
    # no route's words
    ("can I just check something", None),
])
def test_a_turn_names_a_route_only_when_it_asks_for_another_way(clinic, said, named):
    assert named_route(said, route_cues(clinic)) == named


def test_plurals_and_general_words():
    assert content_words("Can you post me the forms, please?") == {"post", "form"}
    assert content_words("I'll just sort it myself later") == set()


def test_the_matcher_learns_the_cues_with_the_flow(clinic):
    intents = flow_intents(clinic)
    assert intents.route_cues == route_cues(clinic)
    assert intents.chosen_by_words == chosen_by_words(clinic)


def test_the_classifier_takes_the_named_route_where_it_was_unsure_and_keeps_its_own_reading_elsewhere(clinic):
    from voices.understanding.interpret import make_matcher

    matcher = make_matcher(flow_intents(clinic), None, "classifier")
    named, _ = matcher.match("can reception look me up instead")
    assert named == "route:no_ref"
    # the words decide nothing without an ask for another way, nor over a sure reading
    assert matcher.match("what time does reception open")[0] is None
    assert matcher.match("put me through to reception please")[0] == "route:nurse"
    # without the route's words (nor the caller cues, which read "reception ... look me
    # up" as the route's own place that will know the caller) the classifier alone is unsure
    matcher.chosen_by_words = frozenset()
    assert matcher.match("can reception look me up instead")[0] == "route:no_ref"  # the cues still read it
    matcher.cues = None
    assert matcher.match("can reception look me up instead")[0] != "route:no_ref"
