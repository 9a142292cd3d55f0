"""Words in, values out: slot parsers, verbatim similarity, a lexical intent matcher.

All pure and model-free. The live agent may swap the lexical matcher for sentence
embeddings (voices); the slot parsers and the verbatim check are the same everywhere.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

VERBATIM_MIN_SIMILARITY = 0.9

_WORD = re.compile(r"[a-z0-9']+")
_DIGIT_WORDS = {
    "zero": "0", "oh": "0", "o": "0", "nought": "0", "one": "1", "two": "2", "three": "3",
    "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_YES = {"yes", "yeah", "yep", "yup", "correct", "right", "sure", "affirmative", "exactly", "ok", "okay"}
_NO = {"no", "nope", "nah", "wrong", "incorrect", "not"}


def words(text: str) -> list[str]:
    """Lowercased words with punctuation dropped (apostrophes kept inside words)."""
    return [w.strip("'") for w in _WORD.findall(text.lower()) if w.strip("'")]


def parse_digits(text: str) -> str | None:
    """Digits written or spoken: "4 8 2 1", "four eight two one", "double five"."""
    out: list[str] = []
    repeat = 1
    for word in words(text.replace("-", " ")):
        if word.isdigit():
            out.append(word * repeat)
            repeat = 1
        elif word in _DIGIT_WORDS:
            out.append(_DIGIT_WORDS[word] * repeat)
            repeat = 1
        elif word in ("double", "triple"):
            repeat = 2 if word == "double" else 3
    digits = "".join(out)
    return digits or None


def parse_yes_no(text: str) -> bool | None:
    said = set(words(text))
    yes, no = bool(said & _YES), bool(said & _NO)
    if yes == no:
        return None  # neither, or both ("yes, no, wait"): not an answer
    return yes


def parse_number(text: str) -> int | None:
    """A whole number, written ("23") or spoken ("twenty three", "two hundred")."""
    total, current, seen = 0, 0, False
    for word in words(text.replace("-", " ")):
        if word.isdigit():
            return int(word)
        small = _TEENS.get(word) or _TENS.get(word)
        if small is None and word in _DIGIT_WORDS and word not in ("o", "oh"):
            small = int(_DIGIT_WORDS[word])
        if small is not None:
            current += small
            seen = True
        elif word == "hundred" and seen:
            current *= 100
        elif word == "thousand" and seen:
            total, current = total + current * 1000, 0
    return total + current if seen else None


def word_similarity(played: str, required: str) -> float:
    """1 - word edit distance / length of the longer text (G2)."""
    a, b = words(played), words(required)
    if not a and not b:
        return 1.0
    previous = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        current = [i]
        for j, wb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (wa != wb)))
        previous = current
    return 1 - previous[-1] / max(len(a), len(b))


def verbatim_passes(played: str, required: str) -> bool:
    return word_similarity(played, required) >= VERBATIM_MIN_SIMILARITY


class LexicalMatcher:
    """Intent by the closest example phrase (character-level ratio of the word lists).

    Deterministic and model-free: the simulator's interpreter, and the fallback when
    no embedding model is loaded.
    """

    def __init__(self, intents: dict[str, tuple[str, ...]], threshold: float) -> None:
        self.threshold = threshold
        self._examples = [(name, " ".join(words(p))) for name, phrases in intents.items() for p in phrases]

    def scores(self, text: str) -> dict[str, float]:
        said = " ".join(words(text))
        best: dict[str, float] = {}
        for name, example in self._examples:
            score = SequenceMatcher(None, said, example).ratio()
            best[name] = max(best.get(name, 0.0), score)
        return best

    def match(self, text: str) -> tuple[str | None, float]:
        """The best intent and its score, or (None, score) below the threshold: unclear."""
        scores = self.scores(text)
        if not scores:
            return None, 0.0
        name, score = max(scores.items(), key=lambda kv: kv[1])
        return (name if score >= self.threshold else None), round(score, 3)
