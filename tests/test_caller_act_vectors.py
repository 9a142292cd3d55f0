"""The caller-act phrasings' vectors, built at setup: they cover every phrasing, they are the
encoder's own, a flow's build takes them instead of embedding, and another encoder does not."""

from __future__ import annotations

import numpy as np

import voices.understanding.intent_classifier as ic
from voices.understanding.caller_acts import caller_acts
from voices.understanding.caller_acts import vectors
from voices.understanding.interpret import load_minilm
from voices.understanding.normalise import normalise


class CountingEncoder:
    def __init__(self, fingerprint: str | None = None) -> None:
        self.model = load_minilm()
        self.fingerprint = fingerprint or self.model.fingerprint
        self.embedded: list[str] = []

    def embed(self, texts, norm=True):
        self.embedded += list(texts)
        return self.model.embed(texts, norm=norm)


def fresh_classifier(intents, encoder) -> ic.ClassifierMatcher:
    ic._model_cache.clear()
    ic._text_cache.clear()
    return ic.ClassifierMatcher(intents, 0.5, featuriser=ic.Featuriser(encoder, None, False), l2=ic.CLASSIFIER_L2)


def test_the_shipped_file_serves_every_phrasing_as_the_writers_left_them():
    assert vectors.stale() is None
    assert vectors.main(["--check"]) == 0


def test_they_are_the_encoders_own_vectors():
    said = vectors.texts()
    sample = said[:: max(1, len(said) // 12)][:12]
    fresh = np.asarray(load_minilm().embed(sample, norm=False), dtype=np.float64)
    fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
    shipped = vectors.shipped(load_minilm().fingerprint)
    got = np.stack([shipped[t] for t in sample])
    assert np.abs(got - fresh).max() < 2e-3  # float16 rounding, nothing more
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=2e-3)


def test_a_flow_learns_them_without_embedding_them(monkeypatch, tmp_path):
    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "cache"))
    acts = caller_acts()
    intents = {"wait_request": (*acts["wait_request"][:20], "let me grab the paperwork from the car"),
               "ready": acts["ready"][:20]}
    encoder = CountingEncoder()
    matcher = fresh_classifier(intents, encoder)
    shipped_texts = {normalise(p) for p in (*acts["wait_request"][:20], *acts["ready"][:20])}
    assert not shipped_texts & set(encoder.embedded)
    assert "let me grab the paperwork from the car" in encoder.embedded
    assert matcher.match(acts["wait_request"][0])[0] == "wait_request"


def test_another_encoder_embeds_them_itself(monkeypatch, tmp_path):
    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "cache"))
    acts = caller_acts()
    intents = {"wait_request": acts["wait_request"][:5], "ready": acts["ready"][:5]}
    encoder = CountingEncoder(fingerprint="another encoder")
    fresh_classifier(intents, encoder)
    assert {normalise(p) for p in (*acts["wait_request"][:5], *acts["ready"][:5])} <= set(encoder.embedded)
