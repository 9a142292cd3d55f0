"""A caller's words as the intent matchers read them: one spelling per grunt, leading
discourse markers dropped, bare clarification grunts read as a request to repeat, and
polarity ("I haven't got it") told apart. Examples and turns go through the same steps."""

from __future__ import annotations

from ladder.flow.understanding.text import words

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


__all__ = ["CLARIFICATION", "NEGATIONS", "POLARITY_MISMATCH", "negated", "normalise"]
