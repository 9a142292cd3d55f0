"""The caller-act phrasings' and yes/no answers' MiniLM vectors, built once (at setup) beside them.

Every flow's classifier learns the caller-act phrasings (`with_caller_acts`), so each
would otherwise embed the same ~3,400 texts on its first build: about a minute on this
2-core machine, paid again by every fresh cache (a new install, a test run). These
vectors are the encoder's own, unit length, kept as float16 (a reading moves by under
1e-3); they are used only while the encoder's fingerprint is the one they were built
with, and a text they lack is embedded as before.

`.ci/setup` builds them (`python -m voices.understanding.caller_acts.vectors --if-stale`:
only when the file is missing, lacks a phrasing or was built by another encoder; the
same phrasings and encoder give the same bytes); `--check` exits 1 in those cases. They
are not in git: they are the encoder's output, 2.6 MB, made from what is. Without them a
flow's first build embeds the phrasings itself, and the disk cache keeps what it made.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..normalise import normalise
from . import caller_acts, yes_no_answers

VECTORS = Path(__file__).with_name("minilm_vectors.npz")


def texts() -> list[str]:
    """What the classifiers embed of the phrasings (the caller acts, then the yes/no
    answers of `yes_no/`): each normalised, once, in file order."""
    said = [p for phrases in caller_acts().values() for p in phrases] + [s for s, _ in yes_no_answers()]
    return list(dict.fromkeys(normalise(p) for p in said if normalise(p)))


@lru_cache(maxsize=4)
def shipped(fingerprint: str) -> dict[str, np.ndarray]:
    """text -> vector, when the built file is there and was built by the encoder named
    `fingerprint`; else nothing (the texts are embedded as any other)."""
    try:
        with np.load(VECTORS, allow_pickle=False) as data:
            if str(data["fingerprint"]) != fingerprint:
                return {}
            return {str(t): v.astype(np.float64) for t, v in zip(data["texts"], data["vectors"], strict=True)}
    except (OSError, KeyError, ValueError):
        return {}


def build(path: Path = VECTORS) -> int:
    from ..embedders import load_minilm, unit_vectors

    model = load_minilm()
    said = texts()
    v = unit_vectors(model, said)  # as the classifier makes them (intent_classifier.Featuriser)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, fingerprint=np.array(model.fingerprint), texts=np.array(said, dtype=str),
                        vectors=v.astype(np.float16))
    tmp.replace(path)
    return len(said)


def stale() -> str | None:
    """Why the shipped file does not serve the phrasings as they are now, or None."""
    from ..embedders import load_minilm

    fingerprint = load_minilm().fingerprint
    if not VECTORS.is_file():
        return f"{VECTORS.name} is missing"
    have = shipped(fingerprint)
    if not have:
        return f"{VECTORS.name} was built by another encoder than {fingerprint!r}"
    missing = [t for t in texts() if t not in have]
    if missing:
        return f"{VECTORS.name} lacks {len(missing)} phrasing(s), e.g. {missing[0]!r}"
    return None


def main(argv: list[str]) -> int:
    if "--check" in argv:
        why = stale()
        print(why or f"{VECTORS.name}: up to date")
        return 1 if why else 0
    if "--if-stale" in argv and stale() is None:
        print(f"{VECTORS.name}: up to date")
        return 0
    count = build()
    print(f"{VECTORS.name}: {count} vectors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
