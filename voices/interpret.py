"""Intent matching by sentence similarity (V5): wordllama embeddings, offline.

`EmbeddingMatcher` has the interface of `ladder.flow.text.LexicalMatcher`, so either can
interpret a caller turn; `make_matcher` picks one. Slot parsers stay in ladder.flow.text.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from ladder.flow.text import LexicalMatcher, words

# Scores are max cosine similarity (wordllama l2_supercat_256, normalised embeddings)
# between the utterance and each intent's example phrases, so LexicalMatcher's scale
# (and the flow's intent_threshold, 0.55 by default) does not carry over. Measured on
# the reference_code flow with tests/test_voices_interpret.py's phrasings:
#   39 held-out phrasings, best intent right (34): median 0.68, 10th pct 0.48; below
#     that only "pardon?" 0.10, "mhm" 0.28, "connect me with a representative" 0.31
#   best intent wrong (5): 0.18, 0.27, 0.30, 0.31, and 0.47 ("okay, I have the code in
#     front of me" -> continue_without_code: "the code" is shared with "carry on without
#     the code", and averaged word vectors weigh shared words, not meaning)
#   15 clearly unrelated ("what's the weather in Paris"...): median 0.15, max 0.28
#   40 off-topic but call-like ("who am I speaking to"...): median 0.17, p90 0.36,
#     max 0.60 (a shared word pulls: "is this the right number" -> backchannel "right")
# No right answer scored between 0.31 and 0.48. 0.40 sits in that gap: it rejects every
# clearly unrelated turn and cuts call-like false accepts from 7/40 (at 0.30) to 4/40,
# among them the consequential ones ("that's not what I asked" -> continue_without_code
# 0.35); the cost is one held-out phrasing (0.31). A false route ends or diverts the
# call; a false "unclear" costs a reprompt.
DEFAULT_EMBEDDING_THRESHOLD = 0.40
# Best and runner-up within this are ambiguous: unclear, and the flow reprompts rather
# than guess. Right answers above the threshold led by at least 0.05; the close calls
# measured were wrong or coin-flips: "I found the code" ready 0.500 vs
# continue_without_code 0.499, "I can't find it" wait 0.487 vs ready 0.469.
DEFAULT_MARGIN = 0.03
LEXICAL_DEFAULT_THRESHOLD = 0.55  # FlowSpec.intent_threshold's default

# A leading discourse marker ("okay, I've got it") says little about intent, but in an
# averaged word embedding it pulls the turn toward the one-word backchannel examples
# ("okay", "right"). It is dropped when something follows it; alone it is kept.
_LEADING_MARKERS = frozenset(
    {"ok", "okay", "alright", "right", "yeah", "yes", "yep", "so", "well", "oh", "um", "uh", "er", "erm", "mm", "hmm"}
)


# An averaged word embedding cannot tell "I've got it" from "I haven't got it": the
# words are the same but one. So polarity is compared explicitly: an example whose
# polarity differs from the utterance's (one negated, the other not) has its similarity
# scaled by this, and "I haven't got it" reads as having no code, not as ready.
NEGATIONS = frozenset(
    "not no never nothing without cannot can't cant don't dont didn't didnt haven't havent hasn't "
    "hasnt isn't isnt wasn't wasnt won't wont doesn't doesnt couldn't couldnt aren't arent".split()
)
POLARITY_MISMATCH = 0.75


def negated(text: str) -> bool:
    """Does the normalised text deny something ("I haven't got it", "carry on without it")?"""
    return any(w in NEGATIONS for w in text.split())


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


def normalise(text: str) -> str:
    """Lowercase words, punctuation dropped, leading discourse markers removed.

    STT casing and punctuation vary and the tokenizer is case-sensitive, so examples
    and utterances go through the same normalisation.
    """
    said = words(text.replace("-", " "))
    start = 0
    while start < len(said) and said[start] in _LEADING_MARKERS:
        start += 1
    return " ".join(said[start:] if start < len(said) else said)


class EmbeddingMatcher:
    """Intent by the most similar example phrase (cosine of wordllama embeddings)."""

    def __init__(
        self,
        intents: dict[str, tuple[str, ...]],
        threshold: float = DEFAULT_EMBEDDING_THRESHOLD,
        *,
        model: Embedder | None = None,
        margin: float = DEFAULT_MARGIN,
    ) -> None:
        self.threshold = threshold
        self.margin = margin
        self.model = model if model is not None else load_model()
        self._names = [name for name, phrases in intents.items() if phrases]
        phrases = [normalise(p) for name in self._names for p in intents[name]]
        self._owner = np.array([i for i, name in enumerate(self._names) for _ in intents[name]])
        self._negated = np.array([negated(p) for p in phrases], dtype=bool)
        self._examples = self._unit(phrases)  # embedded once: (n_examples, dim)

    def _unit(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = np.asarray(self.model.embed(texts, norm=False), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)  # empty text: zero vector, not NaN

    def scores(self, text: str) -> dict[str, float]:
        said = normalise(text)
        if not said or not self._names:
            return {name: 0.0 for name in self._names}
        sims = self._examples @ self._unit([said])[0]
        sims = np.where(self._negated == negated(said), sims, sims * POLARITY_MISMATCH)
        best = np.full(len(self._names), -1.0, dtype=np.float32)
        np.maximum.at(best, self._owner, sims)
        return {name: float(best[i]) for i, name in enumerate(self._names)}

    def match(self, text: str) -> tuple[str | None, float]:
        """The best intent and its score, or (None, score) when unclear: below the
        threshold, or within `margin` of the runner-up (ambiguous)."""
        ranked = sorted(self.scores(text).items(), key=lambda kv: kv[1], reverse=True)
        if not ranked:
            return None, 0.0
        name, score = ranked[0]
        runner_up = ranked[1][1] if len(ranked) > 1 else -1.0
        clear = score >= self.threshold and score - runner_up >= self.margin
        return (name if clear else None), round(score, 3)


Matcher = EmbeddingMatcher | LexicalMatcher


def make_matcher(
    intents: dict[str, tuple[str, ...]],
    threshold: float | None,
    kind: Literal["embedding", "lexical"] = "embedding",
) -> Matcher:
    """An intent matcher; threshold None takes that kind's default (the scales differ)."""
    if kind == "embedding":
        return EmbeddingMatcher(intents, DEFAULT_EMBEDDING_THRESHOLD if threshold is None else threshold)
    if kind == "lexical":
        return LexicalMatcher(intents, LEXICAL_DEFAULT_THRESHOLD if threshold is None else threshold)
    raise ValueError(f"unknown matcher kind {kind!r} (embedding or lexical)")
