"""Words in, values out: slot parsers, verbatim similarity, a lexical intent matcher.

All pure and model-free. The live agent may swap the lexical matcher for sentence
embeddings (voices); the slot parsers and the verbatim check are the same everywhere.
"""

from __future__ import annotations

import re
import sys
from array import array
from difflib import SequenceMatcher

VERBATIM_MIN_SIMILARITY = 0.9

_WORD = re.compile(r"[a-z0-9']+")
_DIGIT_WORDS = {
    "zero": "0", "nought": "0", "one": "1", "two": "2", "three": "3",
    "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
}
# What whisper writes for a spoken digit that is also an ordinary word: a digit only in
# a digit context (`_readings`). "oh" is one too: "Oh, it's 4 8 2 1".
_HOMOPHONES = {"oh": "0", "o": "0", "won": "1", "to": "2", "too": "2", "for": "4", "ate": "8"}
# "four" with its /f/ lost (a clipped onset: the caller talking over the agent, whose echo
# canceller suppresses the first fricative) comes out as "or": a digit only where a code
# begins ("Or 8 2 1"), never between digits ("2 or 3").
_CLIPPED = {"or": "4"}
_REPEATS = {"double": 2, "triple": 3}
# Words said around a code that say nothing against it being the code: after one of
# them a homophone may begin the digits ("it's for 8 2 1"), and they do not count
# against an utterance being an answer ("um, the code is 4 8 2 1").
LEAD_INS = frozenset(
    "it's its it is was the code number reference my um uh er erm ah so yes yeah yep ok okay "
    "and then that's thats sorry no actually mean think right wait oops".split()
)
# A caller correcting or restarting the code: what follows replaces digits heard before.
_RESTARTS = frozenset("no sorry actually mean again over scratch wrong oops instead start".split())
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


def _digits_of(word: str, in_digits: bool = False) -> str | None:
    """The digits one lowercased word stands for, as the digit parser reads it.

    `in_digits`: the word stands in a digit context (`_readings`), where whisper's
    homophones of spoken digits ("for", "to", "too", "oh", "won", "ate") are digits."""
    if word.isdigit():
        return word
    digits = _DIGIT_WORDS.get(word)
    if digits is None and in_digits:
        digits = _HOMOPHONES.get(word)
    return digits


def _readings(tokens: list[str]) -> list[str | None]:
    """The digits each word stands for, in context; None for a word that is no digit.

    A homophone is a digit right after a digit or after "double"/"triple" ("33 for 692",
    "double oh"), or, at the start or after a lead-in ("it's", "um"), when digits follow
    and nothing else follows them ("to 9", "it's for 8 2 1"). Elsewhere it is the word
    ("go to 5", "for 3 days", "I won 5 dollars"). "or" (a clipped "four") is a digit only
    where a code begins ("Or 8 2 1", not "2 or 3").

    The masked text (`mask_digits`) reads the same: a word read as digits becomes
    numerals, which are digits in any context, and a homophone read as a word keeps
    the neighbours that made it one.
    """
    n = len(tokens)

    def digits_follow(j: int) -> bool:
        """Digits follow, and only digits (or lead-ins) to the end: "to 9", not "for 3 days"."""
        while j < n and tokens[j] in _HOMOPHONES:
            j += 1
        if j >= n or _digits_of(tokens[j]) is None:
            return False
        while j < n and (tokens[j] in _HOMOPHONES or tokens[j] in _REPEATS or _digits_of(tokens[j]) is not None):
            j += 1
        return all(w in LEAD_INS for w in tokens[j:])

    out: list[str | None] = []
    for i, word in enumerate(tokens):
        digits = _digits_of(word)
        if digits is None and (word in _HOMOPHONES or word in _CLIPPED):
            prev = tokens[i - 1] if i else None
            after_digit = word in _HOMOPHONES and i > 0 and (out[-1] is not None or prev in _REPEATS)
            if after_digit or ((prev is None or prev in LEAD_INS) and digits_follow(i + 1)):
                digits = _digits_of(word, in_digits=True) or _CLIPPED.get(word)
        out.append(digits)
    return out


def parse_digits(text: str) -> str | None:
    """Digits written or spoken: "4 8 2 1", "four eight two one", "double five",
    "29 340", "293.40", and whisper's homophones in a digit context ("33 for 692")."""
    out: list[str] = []
    repeat = 1
    tokens = words(text.replace("-", " "))
    for word, digits in zip(tokens, _readings(tokens), strict=True):
        if digits is not None:
            out.append(digits * repeat)
            repeat = 1
        elif word in _REPEATS:
            repeat = _REPEATS[word]
    digits = "".join(out)
    return digits or None


def digit_answer_evidence(text: str, answer_phrase: bool = False) -> bool:
    """Is this utterance about digits at all, so its digits may be (part of) an answer?

    Yes when the flow's answer phrases matched (`answer_phrase`), or when the utterance
    is mostly digits: more digits than other words, not counting lead-ins ("um, it's
    4 8"). "go forward 10 meters" is no answer; "to 9" and "the code is 4821" are.
    Masking (`mask_digits`) keeps the decision: it keeps every word and the count of
    digits."""
    tokens = words(text.replace("-", " "))
    readings = _readings(tokens)
    digits = sum(len(d) * (_REPEATS.get(tokens[i - 1], 1) if i else 1) for i, d in enumerate(readings) if d)
    if not digits:
        return False
    if answer_phrase:
        return True
    others = sum(1 for w, d in zip(tokens, readings, strict=True) if d is None and w not in LEAD_INS and w not in _REPEATS)
    return digits > others


def restarts(text: str) -> bool:
    """Does the caller correct or restart ("no, sorry, 4 8 2 2", "let me start again")?
    Digits in it replace a partial answer instead of being appended to it."""
    return any(w in _RESTARTS for w in words(text))


# A word as `words()` finds it, located in the original text (re.IGNORECASE would also
# match a few non-ASCII letters that fold to ASCII, so positions come from the lowered
# text when lowering keeps its length, which it does for everything but rare letters).
_TOKEN = re.compile(r"[a-z0-9']+")


def _tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, word) of each word, the span excluding stripped apostrophes."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return []
    out = []
    for m in _TOKEN.finditer(lowered):
        word = m.group(0)
        core = word.strip("'")
        if core:
            start = m.start() + (len(word) - len(word.lstrip("'")))
            out.append((start, start + len(core), core))
    return out


def mask_digits(text: str, cipher: dict[str, str]) -> str:
    """`text` with every digit the digit parser would read replaced through `cipher`.

    `cipher` maps each real digit to a stand-in digit; a digit seen for the first time
    takes the next unused one ("4821" -> "0123"), so distinct digits stay distinct and
    `parse_digits(mask_digits(t))` is `parse_digits(t)` with each digit replaced: the
    slot logic decides the same (length, equality, corrections, partial answers) while
    the value never appears. Spoken digits become numerals ("four" -> "0"). Words that
    carry no digit are kept as they are. The cipher is updated in place.
    """
    if len(text.lower()) != len(text):
        # lowering changed the length (rare letters): fall back to the parser's words
        found = words(text.replace("-", " "))
        return " ".join(_mask_word(w, d, cipher) for w, d in zip(found, _readings(found), strict=True))
    tokens = _tokens(text)
    readings = _readings([word for _, _, word in tokens])
    out, last = [], 0
    for (start, end, word), digits in zip(tokens, readings, strict=True):
        masked = _mask_word(word, digits, cipher)
        if masked != word:
            out.append(text[last:start])
            out.append(masked)
            last = end
    out.append(text[last:])
    return "".join(out)


_NUMBER_WORD = re.compile(r"\b(" + "|".join([*_TENS, *_TEENS]) + r")\b", re.IGNORECASE)


def mask_number_words(text: str, cipher: dict[str, str]) -> str:
    """`text` with each tens and teens word ("fifty", "fifteen") replaced through `cipher`
    by another of its kind, the first seen by the first of the kind ("fifty" -> "twenty",
    "fifteen" -> "ten"): with `mask_digits`, a count said in words ("two hundred and
    fifty") does not leave the call, and `parse_number` still reads a number, distinct
    numbers staying distinct. Digit words are `mask_digits`'s. The cipher is updated in place."""

    def stand_in(m: re.Match) -> str:
        word = m.group(1).lower()
        if word not in cipher:
            kind = list(_TENS) if word in _TENS else list(_TEENS)
            used = sum(1 for w in cipher if (w in _TENS) == (word in _TENS))
            cipher[word] = kind[used % len(kind)]
        return cipher[word]

    return _NUMBER_WORD.sub(stand_in, text)


def _mask_word(word: str, digits: str | None, cipher: dict[str, str]) -> str:
    """`word` as the parser reads it (`digits`, from `_readings`), through the cipher."""
    if digits is None:
        return word
    masked = []
    for d in digits:
        if d not in cipher:
            cipher[d] = str(len(cipher))
        masked.append(cipher[d])
    return "".join(masked)


# a digit, or a digit word inside any word: every text a digit run could be read from
# matches (a superset: "phone" holds "one"), so a text that does not match has none
_MAY_HOLD_DIGITS = re.compile("[0-9]|" + "|".join(_DIGIT_WORDS))  # searched in lowered text


def hide_digit_values(text: str, secrets: set[str] | frozenset[str], mark: str) -> str:
    """`text` with each run of digit words that contains a secret replaced by `mark`.

    A run is consecutive words that carry digits, in any form the parser reads
    ("4 8 2 1", "four eight two one", "48-21", "4821"), so a value read back or quoted
    is hidden however it was spelled. Other numbers stay.
    """
    if not secrets:
        return text
    lowered = text.lower()
    if len(lowered) == len(text) and not _MAY_HOLD_DIGITS.search(lowered):
        return text  # most of a journal's strings ("prompt_started"): no word to read
    return _hide_digit_runs(text, secrets, mark)


def _hide_digit_runs(text: str, secrets: set[str] | frozenset[str], mark: str) -> str:
    """`hide_digit_values` without its shortcut for texts with no digit in them."""
    if len(text.lower()) != len(text):
        text = " ".join(words(text))
    tokens = _tokens(text)
    runs: list[tuple[int, int, str]] = []
    for start, end, word in tokens:
        digits = _digits_of(word)
        if digits is None:
            continue
        if runs and runs[-1][1] <= start and _joins(text[runs[-1][1]:start]):
            s, _, d = runs[-1]
            runs[-1] = (s, end, d + digits)
        else:
            runs.append((start, end, digits))
    out, last = [], 0
    for start, end, digits in runs:
        if any(secret in digits for secret in secrets):
            out.append(text[last:start])
            out.append(mark)
            last = end
    out.append(text[last:])
    return "".join(out)


def _joins(gap: str) -> bool:
    """Does the text between two digit words keep them in one run ("4 8", "48-21")?"""
    return len(gap) <= 3 and all(c in " \t-.,/" for c in gap)


def parse_yes_no(text: str) -> bool | None:
    said = set(words(text))
    yes, no = bool(said & _YES), bool(said & _NO)
    if yes == no:
        return None  # neither, or both ("yes, no, wait"): not an answer
    return yes


# what callers put before a free-text value: fillers, then "it's", "his name is", "we call her"
_FILLERS = re.compile(r"^(?:(?:um+|uh+|erm*|er|so|well|oh|okay|ok|right|sure|yeah|yes)\b[,.!]?\s*)+", re.IGNORECASE)
_LEAD_IN = re.compile(
    r"^(?:(?:it|that)(?:'s| is| was) called|(?:it|that)(?:'s| is)|(?:he|she|it)(?:'s| is) called|they(?:'re| are) called"
    r"|(?:his|her|their|its|the|my|our) (?:\w+(?:'s|s')? )?name(?:'s| is)|we call (?:him|her|them|it)"
    r"|(?:he|she|it)(?:'s| is)|call (?:him|her|them|it))\b[,:]?\s+",
    re.IGNORECASE,
)


def parse_text(text: str) -> str | None:
    """A free-text value as the caller said it, without what they put before it: "um,
    it's Biscuit the Second." -> "Biscuit the Second"; "her name is Bella" -> "Bella". What
    is left when nothing follows the lead-in is the turn as said."""
    said = " ".join(text.split()).strip()
    value = _LEAD_IN.sub("", _FILLERS.sub("", said), count=1).strip().rstrip(".!?,;:").strip()
    return value or said.rstrip(".!?,;:").strip() or None


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


def _pack(values: list[int]) -> int:
    """Non-negative integers below 2**16 as one integer, 16 bits each, the first lowest."""
    return int.from_bytes(array("H", values).tobytes() if sys.byteorder == "little" else _swapped(values), "little")


def _swapped(values: list[int]) -> bytes:
    packed = array("H", values)
    packed.byteswap()
    return packed.tobytes()


class LexicalMatcher:
    """Intent by the closest example phrase (character-level ratio of the word lists).

    Deterministic and model-free: the simulator's interpreter, and the fallback when
    no embedding model is loaded.
    """

    def __init__(self, intents: dict[str, tuple[str, ...]], threshold: float) -> None:
        self.threshold = threshold
        self._examples = [(name, " ".join(words(p))) for name, phrases in intents.items() for p in phrases]
        # One matcher per example with the example as its second sequence, whose index
        # SequenceMatcher builds once: only the turn changes from call to call (the same
        # ratios as a fresh SequenceMatcher(None, said, example), a fraction of the work)
        self._matchers = [(name, SequenceMatcher(None, "", example)) for name, example in self._examples]
        self._exact: dict[str, int] = {}  # an example's words -> its first index: ratio 1.0, nothing beats it
        for i, (_, example) in enumerate(self._examples):
            self._exact.setdefault(example, i)
        # SequenceMatcher.quick_ratio of every example at once: per character c and count
        # k, one integer packs min(k, count of c) of every example in a 16-bit field, so a
        # turn's shared-character counts are a few big-integer sums (pure Python: the
        # ladder does without numpy)
        n = len(self._examples)
        per_char: dict[str, list[int]] = {}
        for i, (_, example) in enumerate(self._examples):
            for c in example:
                per_char.setdefault(c, [0] * n)[i] += 1
        self._packed: dict[str, list[int]] = {}
        for c, counts in per_char.items():
            self._packed[c] = [_pack([min(k, x) for x in counts]) for k in range(1, max(counts) + 1)]
        self._lengths = [len(e) for _, e in self._examples]

    def scores(self, text: str) -> dict[str, float]:
        said = " ".join(words(text))
        best: dict[str, float] = {}
        for (name, matcher), bound in zip(self._matchers, self._bounds(said), strict=True):
            so_far = best.get(name, -1.0)
            # upper bounds first: an example that cannot beat the intent's best is skipped
            if bound > so_far or so_far < 0:
                matcher.set_seq1(said)
                best[name] = max(so_far, matcher.ratio())
        return best

    def _bounds(self, said: str) -> list[float]:
        """SequenceMatcher(None, said, example).quick_ratio() of every example, the same
        floats (2 * shared characters / total length), each at least the example's ratio."""
        shared = 0
        for c in set(said):
            packed = self._packed.get(c)
            if packed is not None:
                shared += packed[min(said.count(c), len(packed)) - 1]
        n = len(self._lengths)
        counts = array("H", shared.to_bytes(2 * n, "little")) if n else array("H")
        if sys.byteorder != "little":
            counts.byteswap()
        said_length = len(said)
        return [2.0 * m / (t + said_length) if t + said_length else 1.0 for m, t in zip(counts, self._lengths, strict=True)]

    def match(self, text: str) -> tuple[str | None, float]:
        """The best intent and its score, or (None, score) below the threshold: unclear.

        The best over all examples, the first in the flow's order on a tie (as max over
        `scores` has it), found by branch and bound on quick_ratio's upper bounds,
        computed for all examples at once."""
        said = " ".join(words(text))
        if said in self._exact:
            return self._matchers[self._exact[said]][0], 1.0
        if not self._matchers:
            return None, 0.0
        bounds = self._bounds(said)
        # branch and bound: the examples in falling order of their bound, so the best is
        # met early and the search stops where no bound can beat it
        order = sorted(range(len(bounds)), key=lambda i: (-bounds[i], i))
        best, score = -1, -1.0
        for i in order:
            bound = bounds[i]
            if bound < score:
                break
            # an example wins only with a higher ratio, or an equal one earlier in the flow
            if bound == score and i > best:
                continue
            matcher = self._matchers[i][1]
            matcher.set_seq1(said)
            ratio = matcher.ratio()
            if ratio > score or (ratio == score and i < best):
                best, score = i, ratio
        name = self._matchers[best][0]
        return (name if score >= self.threshold else None), round(score, 3)


def replaced_partial(text: str, digits: str, partial: str, min_length: int | None, max_length: int | None) -> str | None:
    """Why the `digits` heard in `text` replace the `partial` code heard before, not
    continue it, or None (they continue it): "restart" ("no, sorry, 5 5"), "whole_value"
    (a code of the allowed length on its own), or "overrun" (the two together would be
    longer than any code: the caller started again, perhaps because the first part was
    misheard ("193" for "one nine three five", then the caller's "two zero ...").)"""
    if not partial:
        return None
    if restarts(text):
        return "restart"
    if (min_length or 1) <= len(digits) <= (max_length or len(digits)):
        return "whole_value"
    if max_length and len(partial) + len(digits) > max_length >= len(digits):
        return "overrun"
    return None


# The intents beside which a learned yes/no reading answers (CallerUtterance.yes_no): none
# at all, a backchannel ("uh huh" to "is it red?") or being back ("go on then"). A route,
# a wait or anything else the reader saw is not a yes or a no.
YES_NO_READ_WITH = (None, "backchannel", "ready")


def learned_yes_no(words_reading: bool | None, learned: bool | None, intent: str | None) -> bool | None:
    """The yes or no a turn gives a yes/no question: its words' own (`parse_yes_no`),
    else the learned reader's where the intent reader saw nothing that is not an answer."""
    if words_reading is not None:
        return words_reading
    return learned if intent in YES_NO_READ_WITH else None


def answer_progress(
    kind: str,
    text: str,
    *,
    min_length: int | None = None,
    max_length: int | None = None,
    partial: str = "",
    answer_phrase: bool = False,
    learned: bool | None = None,
    intent: str | None = None,
) -> str | None:
    """How far `text` answers a pending slot of this kind, read as the flow reads it:
    "complete" (a code of the allowed length, a clear yes or no, a number), "partial"
    (digits short of `min_length`, counting the `partial` already heard unless the
    words restart), or None (no value, or words not about the slot). For a slot-aware
    end of turn: a complete value may end the turn at the pause, a partial one keeps
    it open. `learned` and `intent`: the learned yes/no reading and the intent read, so
    "please do" ends a yes/no turn as "yes" does, where the flow would take it."""
    if kind == "digits":
        digits = parse_digits(text)
        if digits is None or not digit_answer_evidence(text, answer_phrase):
            return None
        value = digits if replaced_partial(text, digits, partial, min_length, max_length) else partial + digits
        if min_length and len(value) < min_length:
            return "partial"
        if max_length and len(value) > max_length:
            return None
        return "complete"
    if kind == "yes_no":
        return "complete" if learned_yes_no(parse_yes_no(text), learned, intent) is not None else None
    if kind == "number":
        return "complete" if parse_number(text) is not None else None
    return None  # free text: nothing says it is complete
