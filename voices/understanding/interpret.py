"""Intent matching by sentence similarity (V5): wordllama embeddings, offline.

`EmbeddingMatcher` has the interface of `ladder.flow.understanding.text.LexicalMatcher`, so either can
interpret a caller turn; `make_matcher` picks one. Slot parsers stay in ladder.flow.understanding.text.
The same matcher can run on all-MiniLM-L6-v2 (voices.understanding.sentence_encoder, a real sentence
encoder in numpy) or on a blend of both: kinds "minilm" and "blend" (measured below).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ladder.flow.understanding.shared_intents import LearnedIntents
from ladder.flow.understanding.text import LexicalMatcher

from . import intent_classifier as ic
from . import yes_no_reader
from .caller_acts import with_caller_acts

# the embedders and the normalisation are their own modules; importable from here too
from .embedders import (  # noqa: F401
    BlendEmbedder,
    Embedder,
    InterpreterError,
    _cached_model,
    load_minilm,
    load_model,
)
from .normalise import CLARIFICATION, NEGATIONS, POLARITY_MISMATCH, negated, normalise  # noqa: F401

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
# call; a false "unclear" costs a reprompt. (Measured with max alone; scores are now the
# top-k blend below, on more examples, and 0.40 was measured again: 4/40 call-like
# accepted, none unrelated; 0.42 loses a held-out phrasing for one fewer false accept.)
DEFAULT_EMBEDDING_THRESHOLD = 0.40
# Best and runner-up within this are ambiguous: unclear, and the flow reprompts rather
# than guess. Right answers above the threshold led by at least 0.05; the close calls
# measured were wrong or coin-flips: "I found the code" ready 0.500 vs
# continue_without_code 0.499, "I can't find it" wait 0.487 vs ready 0.469.
DEFAULT_MARGIN = 0.03
# An intent's score blends its best example with the mean of its best TOP_K: a turn
# that shares one word with one example ("who am I speaking to" ~ "let me speak to
# someone") scores lower than one that several examples agree on. Measured on the
# reference_code flow (voices.understanding.intent_bench): against max alone, FRESH route:transfer
# and repeat_request went to 100 % and call-like false accepts stayed at 4/40, at the
# same threshold.
TOP_K = 3
TOP_K_WEIGHT = 0.5
LEXICAL_DEFAULT_THRESHOLD = 0.55  # FlowSpec.intent_threshold's default

# all-MiniLM-L6-v2 (kind "minilm") and a blend of its cosine with wordllama's (kind
# "blend": BLEND_MINILM_WEIGHT * MiniLM + the rest * wordllama), same scoring otherwise
# (normalisation, polarity, top-k blend). Tuned on the reference_code flow's examples
# (leave-one-out: each example matched against the others), HELD_OUT, FRESH and the
# off-topic lists only; UNSEEN and LATE were then measured once (voices.understanding.intent_bench):
#   leave-one-out on the 131 examples: wordllama 72 %, minilm 79 %, blend 79 %
#   held_out / fresh / unseen / late right, call-like accepted (of 40), unrelated (of 15):
#     wordllama 0.40: 39/39  41/44  37/46  33/37   4   0
#     minilm    0.45: 38/39  42/44  40/46  32/37   4   0
#     blend     0.40: 39/39  42/44  40/46  33/37   2   0
# MiniLM reads topic more than intent: "I've lost the letter" is nearest "I have the
# letter now" (ready), so it gains on UNSEEN and loses on LATE; no kind reaches 90 % on
# every intent of UNSEEN or LATE. Margin 0.03 for both: at 0 the leave-one-out wrong
# answers (not unclear) rise from 8 to 9 (minilm) and 5 to 9 (blend).
# Kind "classifier" (voices.understanding.intent_classifier): softmax regression over MiniLM trained
# on the examples plus its own off-topic "none" class, hyperparameters by 10-fold
# cross-validation on those only, then measured once (same columns):
#     classifier 0.55: 35/39  40/44  36/46  33/37   2   0
# Fewer right than blend on three sets (its misses are nearly all "unclear"), as many on
# LATE and off-topic, fewer wrong intents (2 over the four sets against blend's 5):
# "I've lost the letter" is unclear, not ready. Not the default.
DEFAULT_MINILM_THRESHOLD = 0.45
DEFAULT_BLEND_THRESHOLD = 0.40
BLEND_MINILM_WEIGHT = 0.7

class EmbeddingMatcher:
    """Intent by the most similar example phrases (cosine of wordllama embeddings): per
    intent, the best example's similarity blended with the mean of its best `top_k`."""

    def __init__(
        self,
        intents: dict[str, tuple[str, ...]],
        threshold: float = DEFAULT_EMBEDDING_THRESHOLD,
        *,
        model: Embedder | None = None,
        margin: float = DEFAULT_MARGIN,
        top_k: int = TOP_K,
        top_k_weight: float = TOP_K_WEIGHT,
    ) -> None:
        self.threshold = threshold
        self.margin = margin
        self.top_k = top_k
        self.top_k_weight = top_k_weight
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
        out = {}
        for i, name in enumerate(self._names):
            ranked = np.sort(sims[self._owner == i])[::-1]
            best, top = float(ranked[0]), float(ranked[: self.top_k].mean())
            out[name] = (1.0 - self.top_k_weight) * best + self.top_k_weight * top
        return out

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


Matcher = EmbeddingMatcher | LexicalMatcher  # or voices.understanding.intent_classifier.ClassifierMatcher (kind "classifier")


MatcherKind = Literal["embedding", "minilm", "blend", "classifier", "lexical"]
MATCHER_KINDS: tuple[str, ...] = ("embedding", "minilm", "blend", "classifier", "lexical")


# The caller-act phrasings written outside the team (voices/understanding/caller_acts: 3,844) in each
# flow's classifier. Measured on yardstick2's sealed sets (README, "Callers the team did
# not write"): as text 503/576 without them (A), 521/576 with them (E, at a threshold of
# 0.55); spoken and down the line more right too, fewer off-topic turns let in. Their
# vectors are built at setup (caller_acts/vectors.py), so a flow's first build only fits
# on them. Off with LULL_CALLER_ACTS=0 or `lull bench intents --no-caller-acts`.
CALLER_ACTS = os.environ.get("LULL_CALLER_ACTS", "").strip().lower() not in ("0", "off", "no", "false")


def make_matcher(
    intents: dict[str, tuple[str, ...]],
    threshold: float | None,
    kind: MatcherKind = "embedding",
) -> Matcher:
    """An intent matcher; threshold None takes that kind's default (the scales differ).
    "embedding" is wordllama, "minilm" all-MiniLM-L6-v2, "blend" both (see above),
    "classifier" a softmax classifier over MiniLM trained at construction
    (voices.understanding.intent_classifier; threshold is on its probability)."""
    if kind != "classifier" and isinstance(intents, LearnedIntents):
        # Lull's shared phrases are for the trained classifier: a nearest-example kind
        # with them accepts far more off-topic turns (shipped flow, call-like off-topic:
        # minilm 16/40, blend 21/40, wordllama 21/40, against 11, 8 and 17 without)
        intents = intents.own_only()
    if kind == "embedding":
        return EmbeddingMatcher(intents, DEFAULT_EMBEDDING_THRESHOLD if threshold is None else threshold)
    if kind == "minilm":
        return EmbeddingMatcher(intents, DEFAULT_MINILM_THRESHOLD if threshold is None else threshold,
                                model=load_minilm())
    if kind == "blend":
        model = BlendEmbedder(load_minilm(), load_model(), BLEND_MINILM_WEIGHT)
        return EmbeddingMatcher(intents, DEFAULT_BLEND_THRESHOLD if threshold is None else threshold, model=model)
    if kind == "classifier":
        featuriser = ic.Featuriser(load_minilm(), load_model() if ic.CLASSIFIER_WORDLLAMA else None,
                                   ic.CLASSIFIER_NEGATION, ic.CLASSIFIER_LEXICAL)
        off_topic = ic.OFF_TOPIC_TRAINING
        if CALLER_ACTS:  # the acts every flow shares, as callers outside the team say them
            intents, off_topic = with_caller_acts(intents, off_topic)
        matcher = ic.ClassifierMatcher(intents, ic.DEFAULT_CLASSIFIER_THRESHOLD if threshold is None else threshold,
                                       featuriser=featuriser, l2=ic.CLASSIFIER_L2, off_topic=off_topic)
        if yes_no_reader.ENABLED and getattr(intents, "asks_yes_no", False):
            # the flow asks a yes/no: the learned yes/no reader on the same features, trained
            # here (a build runs off the call's loop) rather than at the first yes/no answer
            matcher.yes_no_reader = yes_no_reader.reader_for(featuriser)
        return matcher
    if kind == "lexical":
        return LexicalMatcher(intents, LEXICAL_DEFAULT_THRESHOLD if threshold is None else threshold)
    raise ValueError(f"unknown matcher kind {kind!r} ({', '.join(MATCHER_KINDS)})")


class BackgroundMatcher:
    """A matcher built in a thread: building one embeds every example (and the classifier
    trains), 2-3 s for the shipped flow on a quiet 2-core machine, up to 7 s under load.

    The text backend lets it build during the greeting (the first caller turn comes after
    the greeting, the disclosure and the question); the voice backends `get()` it before
    the call, having started it while their models loaded. `match` and `scores` wait for
    the build, so an event loop asks `ready` first and, if not, has its turn interpreted
    `when_ready` (as a slow recogniser would have it); an error in the build is raised by
    `match`."""

    def __init__(self, build: Callable[[], Matcher]) -> None:
        self._future: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            self._future.set_running_or_notify_cancel()
            try:
                matcher = build()
            except BaseException as exc:  # noqa: BLE001 - raised again by match()
                self._future.set_exception(exc)
            else:
                self._future.set_result(matcher)

        # a daemon thread: quitting the console while the build runs must not wait for it
        # (a ThreadPoolExecutor's threads are joined at exit: ctrl+q hung for the build)
        threading.Thread(target=run, name="lull-matcher", daemon=True).start()

    @property
    def ready(self) -> bool:
        return self._future.done()

    def get(self) -> Matcher:
        return self._future.result()

    @property
    def failed(self) -> bool:
        return self._future.done() and self._future.exception() is not None

    def when_ready(self, loop, callback: Callable[[], None]) -> None:
        """`callback` on `loop` once the build has ended (at once if it has); nothing if
        the loop has closed by then (the console quit while the build ran)."""

        def hand_over(_done) -> None:
            try:
                loop.call_soon_threadsafe(callback)
            except RuntimeError:
                pass  # the loop is closed: no call is left to feed

        self._future.add_done_callback(hand_over)

    @property
    def threshold(self) -> float:
        return self.get().threshold

    def scores(self, text: str) -> dict[str, float]:
        return self.get().scores(text)

    def match(self, text: str) -> tuple[str | None, float]:
        return self.get().match(text)

    def explain(self, text: str) -> tuple[str | None, float, str]:
        return read_turn(self.get(), text)

    def yes_no(self, text: str) -> tuple[bool | None, float]:
        return read_yes_no(self.get(), text)


def read_yes_no(matcher, text: str) -> tuple[bool | None, float]:  # noqa: ANN001
    """A turn's yes or no as the learned yes/no reader takes it (the classifier's; other
    matchers have none): (True, p), (False, p), or (None, p) for neither or unsure."""
    reading = getattr(matcher, "yes_no", None)
    if reading is None or not text.strip():
        return None, 0.0
    return reading(text)


def read_turn(matcher, text: str) -> tuple[str | None, float, str]:  # noqa: ANN001
    """A turn's intent, its score and what decided it: the classifier's `explain`
    ("classifier", "route_words", "shape:<name>"), or for a matcher without one its
    kind ("embedding", "lexical"), so the journal and the console can say what read it."""
    explain = getattr(matcher, "explain", None)
    if explain is not None:
        return explain(text)
    intent, score = matcher.match(text)
    return intent, score, getattr(matcher, "kind", None) or type(matcher).__name__


@dataclass(frozen=True)
class TurnReading:
    """A caller turn's words as Lull reads them, all at once: the intent, its score,
    what decided it (`read_turn`), and the learned yes/no reading (`read_yes_no`)."""

    intent: str | None
    score: float
    reader: str | None  # None: no words to read
    yes_no: bool | None = None
    yes_no_score: float = 0.0  # the yes/no reader's probability of its reading


def read_words(matcher, text: str) -> TurnReading:  # noqa: ANN001
    """`read_turn` and `read_yes_no` together: one trip off an event loop, not two (the
    yes/no reading is a dot product on the features the intent reading just made)."""
    intent, score, reader = read_turn(matcher, text)
    yes_no, yes_no_score = read_yes_no(matcher, text)
    return TurnReading(intent, score, reader, yes_no, yes_no_score if yes_no is not None else 0.0)


_builds_lock = threading.Lock()
_builds: dict[tuple, BackgroundMatcher] = {}  # the latest few, so a second ask shares the first build
_BUILDS_KEPT = 4


def make_matcher_soon(
    intents: dict[str, tuple[str, ...]],
    threshold: float | None,
    kind: MatcherKind = "embedding",
) -> Matcher | BackgroundMatcher:
    """`make_matcher` for a call that is starting: the models load now (a missing one
    raises InterpreterError here, so the caller can fall back at once), the examples
    are embedded and the classifier trained in a thread (BackgroundMatcher). The same
    intents, threshold and kind asked again share that build: `lull rehearse` starts it
    while whisper and piper load, and the backend's `get()` then waits for what is left."""
    if kind == "lexical":
        return make_matcher(intents, threshold, kind)
    if kind not in MATCHER_KINDS:
        raise ValueError(f"unknown matcher kind {kind!r} ({', '.join(MATCHER_KINDS)})")
    if kind in ("minilm", "blend", "classifier"):
        load_minilm()
    if kind in ("embedding", "blend"):
        load_model()
    key = (kind, threshold, tuple((name, tuple(phrases)) for name, phrases in intents.items()))
    with _builds_lock:
        build = _builds.get(key)
        if build is None or build.failed:  # a failed build is not shared: the next call tries again
            build = BackgroundMatcher(lambda: make_matcher(intents, threshold, kind))
            _builds[key] = build
            while len(_builds) > _BUILDS_KEPT:
                _builds.pop(next(iter(_builds)))
        return build
