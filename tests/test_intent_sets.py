"""The matcher's normalisation rules and the bench's later held-out sets (UNSEEN, LATE),
with the real wordllama (and all-MiniLM-L6-v2, kinds "minilm" and "blend", when its
wheel is installed). The 90 % target is not met on those sets (see `lull bench
intents`); these tests hold the floor reached so that a change cannot quietly lower it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ladder.flow.understanding.text import words
from voices.understanding.intent_bench import HELD_OUT_SETS, POOLED, run_intent_bench
from voices.understanding.interpret import CLARIFICATION, DEFAULT_EMBEDDING_THRESHOLD, EmbeddingMatcher, make_matcher, normalise

FLOW = Path(__file__).resolve().parents[1] / "ladder" / "flow" / "library" / "reference_code.json"
INTENTS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in json.loads(FLOW.read_text())["intents"].items()}
SETS = HELD_OUT_SETS


@pytest.fixture(scope="module")
def embedding() -> EmbeddingMatcher:
    return EmbeddingMatcher(INTENTS, DEFAULT_EMBEDDING_THRESHOLD)


def test_later_sets_are_not_examples() -> None:
    examples = {" ".join(words(p)) for phrases in INTENTS.values() for p in phrases}
    reduced = {normalise(p, spellings=False) for phrases in INTENTS.values() for p in phrases}
    for name, held in SETS.items():
        if name == "held_out":  # written before normalise; tests/test_voices_interpret.py checks its words
            continue
        assert set(held) == set(INTENTS)
        said = [p for phrases in held.values() for p in phrases]
        assert not [p for p in said if " ".join(words(p)) in examples or normalise(p, spellings=False) in reduced]


@pytest.mark.parametrize(("text", "expected"), [
    ("uh huh", "uh huh"), ("Uh-huh.", "uh huh"), ("mhm", "mm hmm"), ("Mm-hmm, yes", "mm hmm yes"),
    ("yep", "yeah"), ("OK", "okay"), ("okay then", "okay then"), ("right, okay", "right okay"),
    ("okay, I've got it", "i've got it"), ("huh?", CLARIFICATION), ("What?", CLARIFICATION),
    ("excuse me?", CLARIFICATION), ("hmm?", CLARIFICATION), ("hmm", "hmm"), ("sorry", "sorry"),
])
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


@pytest.mark.parametrize("text", ["huh?", "what?", "eh?", "excuse me?", "pardon?", "hm?"])
def test_bare_clarification_asks_to_repeat(embedding: EmbeddingMatcher, text: str) -> None:
    assert embedding.match(text)[0] == "repeat_request"


@pytest.mark.parametrize("text", ["uh huh", "mhm", "yep", "Mm-hmm."])
def test_grunts_of_assent_are_backchannel(embedding: EmbeddingMatcher, text: str) -> None:
    assert embedding.match(text)[0] == "backchannel"


def test_top_k_blend_scores_between_best_and_mean(embedding: EmbeddingMatcher) -> None:
    only_best = EmbeddingMatcher(INTENTS, DEFAULT_EMBEDDING_THRESHOLD, model=embedding.model, top_k_weight=0.0)
    text = "who am I speaking to"  # one example pulls it ("let me speak to someone"), few agree
    assert embedding.scores(text)["route:transfer"] < only_best.scores(text)["route:transfer"]


# Measured when these were written (lull bench intents): UNSEEN 37/46 (80 %; 36/46 since the
# flow lost the example "secs"), LATE 33/37 (89 %);
# the misses are mostly "unclear" (a reprompt), two per set a wrong intent.
@pytest.mark.parametrize(("name", "floor", "wrong_at_most"), [("unseen", 0.78, 2), ("late", 0.85, 2)])
def test_later_sets_hold_their_floor(embedding: EmbeddingMatcher, name: str, floor: float, wrong_at_most: int) -> None:
    held = SETS[name]
    got = {p: embedding.match(p)[0] for phrases in held.values() for p in phrases}
    right = sum(got[p] == i for i, phrases in held.items() for p in phrases)
    wrong = {p: got[p] for i, phrases in held.items() for p in phrases if got[p] not in (i, None)}
    print(f"\n{name}: {right}/{len(got)} right, wrong: {wrong}")
    assert right / len(got) >= floor
    assert len(wrong) <= wrong_at_most, wrong


def test_bench_reports_every_set_pooled_and_off_topic() -> None:
    result = run_intent_bench(matcher_kind="classifier")  # the kind the voice backends use
    assert list(result["sets"]) == [*SETS, POOLED]
    assert result["phrasings_that_are_flow_examples"] == []
    pooled = result["sets"][POOLED]
    for intent, row in pooled.items():
        assert row["right"] == sum(result["sets"][name][intent]["right"] for name in SETS)
        assert row["of"] == sum(len(held[intent]) for held in SETS.values())
    # one unrelated turn is let in since each class's similarity was learned (README,
    # "Callers the team did not write", candidate G): the caller-act writers' "forgot my
    # password so i can't see it" goes on without the value, and this turn is nearest it
    assert result["unrelated_accepted"] == {"my password doesn't work": "route:continue_without_code"}
    assert len(result["call_like_accepted"]) <= 0.1 * result["call_like_of"]
    missed = [t for t, met in result["targets"].items() if not met]
    assert missed == ["clearly unrelated: none accepted"], result["targets"]
    assert min(row["accuracy"] for row in pooled.values()) >= 0.9


# MiniLM kinds at their default thresholds, measured after the flow's examples went from
# 130 to 443 (lull bench intents --matcher all): right per set held_out / fresh / unseen /
# late / blind, call-like off-topic accepted:
#   minilm 39/39  44/44  44/46  36/37  43/47  11/40 (4/40 before the new examples)
#   blend  38/39  43/44  45/46  35/37  45/47   8/40 (2/40 before)
# Floors a little under those. Nearest-example kinds accept more off-topic turns as
# examples are added; the classifier (the kind in use) does not (test_intent_classifier).
# Issue 27 moved blind's "uh huh, go on" and "okay, go on" from backchannel to ready (a
# caller telling the agent to go on is ready; outside a wait the core hears it as a
# backchannel): the nearest-example kinds, which learn the flow's examples only, still
# read them as backchannels: blind 41/47 (minilm) and 43/47 (blend), two wrong more.
@pytest.mark.parametrize(("kind", "floors", "wrong_at_most", "call_like_at_most"), [
    ("minilm", {"held_out": 0.97, "fresh": 0.97, "unseen": 0.93, "late": 0.94, "blind": 0.85}, 3, 11),
    ("blend", {"held_out": 0.97, "fresh": 0.95, "unseen": 0.95, "late": 0.91, "blind": 0.89}, 3, 8),
])
def test_minilm_kinds_hold_their_floor(kind: str, floors: dict[str, float], wrong_at_most: int, call_like_at_most: int) -> None:
    result = run_intent_bench(matcher_kind=kind)
    assert result["matcher"] == kind
    for name, floor in floors.items():
        table = result["sets"][name]
        right = sum(r["right"] for r in table.values())
        of = sum(r["of"] for r in table.values())
        wrong = {p: g for r in table.values() for p, g in r["misses"].items() if g != "unclear"}
        print(f"\n{kind} {name}: {right}/{of} right, wrong: {wrong}")
        assert right / of >= floor
        assert len(wrong) <= wrong_at_most, wrong
    assert result["unrelated_accepted"] == {}
    assert len(result["call_like_accepted"]) <= call_like_at_most, result["call_like_accepted"]


@pytest.mark.parametrize("kind", ["minilm", "blend"])
def test_minilm_kinds_keep_the_normalisation_rules(kind: str) -> None:
    matcher = make_matcher(INTENTS, None, kind)  # type: ignore[arg-type]
    for text in ("huh?", "pardon?", "excuse me?"):
        assert matcher.match(text)[0] == "repeat_request", text
    for text in ("uh huh", "mhm", "yep"):
        assert matcher.match(text)[0] == "backchannel", text
    assert matcher.match("")[0] is None
    assert matcher.match("what's the weather in Paris")[0] is None
