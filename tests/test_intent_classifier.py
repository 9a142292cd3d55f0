"""Kind "classifier" (voices.understanding.intent_classifier): softmax regression trained at matcher
construction on the flow's examples and an off-topic "none" class. The training maths
runs on synthetic data; the matcher itself needs the all-MiniLM-L6-v2 wheel (skipped
when it is not installed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from voices.understanding import intent_classifier as ic
from voices.understanding.intent_bench import CALL_LIKE_OFF_TOPIC, UNRELATED, run_intent_bench
from voices.understanding.interpret import MATCHER_KINDS, make_matcher, normalise

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
    # four examples an intent: the same embedding and training from scratch, twice, at a
    # third of the full flow's cost
    intents = {k: v[:4] for k, v in INTENTS.items()}
    texts = ["give me a second", "I've lost the letter", "who am I speaking to", "okay then", "huh?"]
    ic._model_cache.clear()
    ic._text_cache.clear()
    started = time.perf_counter()
    first = make_matcher(intents, None, "classifier")
    took = time.perf_counter() - started
    a = [first.scores(t) for t in texts]
    ic._model_cache.clear()
    ic._text_cache.clear()
    started = time.perf_counter()
    second = make_matcher(intents, None, "classifier")
    took_uncached = time.perf_counter() - started
    assert second.model is not first.model
    assert [second.scores(t) for t in texts] == a
    assert [second.match(t) for t in texts] == [first.match(t) for t in texts]
    started = time.perf_counter()
    third = make_matcher(intents, None, "classifier")
    took_cached = time.perf_counter() - started
    assert third.model is second.model
    print(f"\nclassifier construction: {took * 1000:.0f} ms (first), {took_uncached * 1000:.0f} ms "
          f"(embedding the {sum(map(len, intents.values())) + len(ic.OFF_TOPIC_TRAINING)} training texts and training), "
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


# The L2 (3e-5) came from `cross_validate_flows` before issue 27 (`python -m
# voices.understanding.intent_classifier` runs it again); the lexical features and the threshold were
# then chosen on the yardstick's dev phrasings, and test_yardstick re-measures the
# figures they give. The cross-validation itself is not in the suite: over the grown
# training sets it took 15 minutes of a core.
def test_classifier_holds_its_floor() -> None:
    result = run_intent_bench(matcher_kind="classifier")
    assert result["matcher"] == "classifier"
    # fresh 43 -> 42 with the caller-act phrasings learned at 0.55 (issue 48): held_out 39
    # -> 38, fresh 43 -> 42, late 36 -> 37; 211 -> 210 of 213 pooled
    floors = {"held_out": 38, "fresh": 42, "unseen": 45, "late": 36, "blind": 43}
    for name, floor in floors.items():
        table = result["sets"][name]
        right = sum(r["right"] for r in table.values())
        wrong = {p: g for r in table.values() for p, g in r["misses"].items() if g != "unclear"}
        print(f"\nclassifier {name}: {right}/{sum(r['of'] for r in table.values())} right, wrong: {wrong}")
        assert right >= floor
        # "fresh" reads "yeah, go on" (written as a backchannel) as ready, as A did and as the
        # caller-act phrasings take "go on", and with them "got it" (written as ready) as a
        # backchannel: two, each a reading a person might give
        assert len(wrong) <= (2 if name == "fresh" else 1), wrong
    assert len(result["call_like_accepted"]) <= 4, result["call_like_accepted"]
