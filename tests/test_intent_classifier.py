"""Kind "classifier" (voices.intent_classifier): softmax regression trained at matcher
construction on the flow's examples and an off-topic "none" class. The training maths
runs on synthetic data; the matcher itself needs the all-MiniLM-L6-v2 wheel (skipped
when it is not installed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from voices import intent_classifier as ic
from voices.intent_bench import CALL_LIKE_OFF_TOPIC, UNRELATED, run_intent_bench
from voices.interpret import MATCHER_KINDS, make_matcher, normalise

FLOW = Path(__file__).resolve().parents[1] / "ladder" / "flow" / "library" / "reference_code.json"
INTENTS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in json.loads(FLOW.read_text())["intents"].items()}


def _toy(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 8)) * 3
    y = np.repeat(np.arange(3), 20)
    return centres[y] + rng.normal(size=(60, 8)), y


def test_softmax_training_fits_and_is_deterministic() -> None:
    x, y = _toy()
    w1, b1 = ic.train_softmax(x, y, 3, 1e-2)
    w2, b2 = ic.train_softmax(x, y, 3, 1e-2)
    assert np.array_equal(w1, w2) and np.array_equal(b1, b2)
    model = ic.SoftmaxModel(["a", "b", ic.NONE], w1, b1)
    assert (model.proba(x).argmax(axis=1) == y).mean() >= 0.95
    assert np.allclose(model.proba(x).sum(axis=1), 1.0)


def test_softmax_training_reaches_the_minimum() -> None:
    """At the minimum the gradient of the regularised loss is zero (biases unpenalised)."""
    x, y = _toy(1)
    l2 = 1e-2
    w, b = ic.train_softmax(x, y, 3, l2)
    onehot = np.eye(3)[y]
    residual = ic.softmax(x @ w + b) - onehot
    assert np.abs(x.T @ residual / len(y) + l2 * w).max() < 1e-5
    assert np.abs(residual.mean(axis=0)).max() < 1e-5


def test_folds_are_stratified() -> None:
    labels = np.array([0] * 12 + [1] * 5 + [2] * 30)
    fold = ic.folds(labels, 10)
    for c in (0, 1, 2):
        counts = np.bincount(fold[labels == c], minlength=10)
        assert counts.max() - counts.min() <= 1


def test_none_or_low_probability_is_unclear() -> None:
    names = ["a", "b", ic.NONE]
    assert ic.decide(np.array([0.2, 0.1, 0.7]), names, 0.5) is None
    assert ic.decide(np.array([0.45, 0.4, 0.15]), names, 0.5) is None
    assert ic.decide(np.array([0.8, 0.1, 0.1]), names, 0.5) == "a"


def test_off_topic_training_is_not_a_bench_set() -> None:
    bench = {normalise(t) for t in (*UNRELATED, *CALL_LIKE_OFF_TOPIC)}
    examples = {normalise(p) for phrases in INTENTS.values() for p in phrases}
    own = [normalise(t) for t in ic.OFF_TOPIC_TRAINING]
    assert len(set(own)) == len(own)
    assert not set(own) & bench
    assert not set(own) & examples


def test_classifier_is_a_kind_in_all() -> None:
    assert "classifier" in MATCHER_KINDS


def test_classifier_construction_is_deterministic(monkeypatch) -> None:
    monkeypatch.setenv("LULL_CACHE_DIR", "off")  # computed each time, not loaded
    texts = ["give me a second", "I've lost the letter", "who am I speaking to", "okay then", "huh?"]
    ic._model_cache.clear()
    started = time.perf_counter()
    first = make_matcher(INTENTS, None, "classifier")
    took = time.perf_counter() - started
    a = [first.scores(t) for t in texts]
    ic._model_cache.clear()
    ic._text_cache.clear()
    started = time.perf_counter()
    second = make_matcher(INTENTS, None, "classifier")
    took_uncached = time.perf_counter() - started
    assert second.model is not first.model
    assert [second.scores(t) for t in texts] == a
    assert [second.match(t) for t in texts] == [first.match(t) for t in texts]
    started = time.perf_counter()
    third = make_matcher(INTENTS, None, "classifier")
    took_cached = time.perf_counter() - started
    assert third.model is second.model
    print(f"\nclassifier construction: {took * 1000:.0f} ms (first), {took_uncached * 1000:.0f} ms "
          f"(embedding the {sum(map(len, INTENTS.values())) + len(ic.OFF_TOPIC_TRAINING)} training texts and training), "
          f"{took_cached * 1000:.1f} ms cached")


def test_classifier_keeps_the_normalisation_rules() -> None:
    matcher = make_matcher(INTENTS, None, "classifier")
    for text in ("huh?", "pardon?", "excuse me?"):
        assert matcher.match(text)[0] == "repeat_request", text
    for text in ("uh huh", "mhm", "yep"):
        assert matcher.match(text)[0] == "backchannel", text
    assert matcher.match("") == (None, 0.0)
    assert matcher.match("what's the weather in Paris")[0] is None
    assert make_matcher(INTENTS, 0.8, "classifier").threshold == 0.8


def test_constants_are_what_cross_validation_chose() -> None:
    # summed over the shipped flow and three designers' flows, each learning what the
    # voice backends learn (Lull's shared phrases and its own examples): their training
    # sets only, never a held-out phrasing
    from pathlib import Path

    from ladder.flow.shared_intents import flow_intents
    from sessions.flowfiles import load_flow

    own = Path(__file__).parent / "flows"
    refs = ["reference_code", *(str(own / f"{n}.json") for n in ("pharmacy_refill", "meter_reading", "card_activation"))]
    sets = [flow_intents(load_flow(r).spec) for r in refs]
    best = ic.cross_validate_flows(sets, [1e-5, 3e-5, 1e-4], [round(0.4 + 0.05 * i, 2) for i in range(8)])["best"]
    print(f"\ncross-validation best: {best}")
    # the L2 is cross-validation's; the lexical scale and the threshold were then chosen on
    # the dev phrasings of tests/flows/yardstick (test_yardstick checks the README's figures)
    assert best["l2"] == ic.CLASSIFIER_L2
    assert ic.BALANCED and ic.OWN_EMPHASIS
    assert not ic.CLASSIFIER_WORDLLAMA and not ic.CLASSIFIER_NEGATION


# Measured once, after the cross-validation (lull bench intents --matcher all): right
# held_out 35/39, fresh 40/44, unseen 36/46, late 33/37 on the flow's first 130 examples.
# On its 442 (issue 10's last round; blind measured once, before "sorry" became a
# leading marker: 45/48), with the constants cross-validation chose again: held_out
# 38/39, fresh 43/44, unseen 46/46, late 37/37, blind 44/47, every miss "unclear",
# call-like off-topic accepted 4/40, unrelated 0/15, pooled at least 92 % every intent.
def test_classifier_holds_its_floor() -> None:
    result = run_intent_bench(matcher_kind="classifier")
    assert result["matcher"] == "classifier"
    floors = {"held_out": 38, "fresh": 43, "unseen": 45, "late": 36, "blind": 43}
    for name, floor in floors.items():
        table = result["sets"][name]
        right = sum(r["right"] for r in table.values())
        wrong = {p: g for r in table.values() for p, g in r["misses"].items() if g != "unclear"}
        print(f"\nclassifier {name}: {right}/{sum(r['of'] for r in table.values())} right, wrong: {wrong}")
        assert right >= floor
        assert len(wrong) <= 1, wrong
    assert len(result["call_like_accepted"]) <= 4, result["call_like_accepted"]
