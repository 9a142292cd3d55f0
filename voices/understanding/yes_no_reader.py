"""A caller's yes or no where their words hold no yes/no word of their own.

`ladder.flow.understanding.text.parse_yes_no` reads an answer by its words ("yeah",
"nope"). Callers also say "please do", "aye", "why not", "no need", "no thank you I'll
be okay" (a no beside an "okay"), and whisper hears "no" as "know" and "yeah" as "yet".
This reader learned yes, no and neither from 1,388 answers to 120 yes/no questions
written outside the team (`caller_acts/yes_no/`), with the caller-act phrasings (not the
backchannels) and the classifier's off-topic turns as neither. It reads the intent
classifier's own features of the turn (MiniLM and the words), so a reading costs a dot
product more. The flow takes it only where the words hold no yes/no word and the intent
reader saw no request in them (`ladder.flow.runtime`).

Chosen on 120 answers written blind for three yes/no questions (yardstick2
`answers/yes_no_dev.json`) and the eight yardstick2 dev sets' other turns read at a
yes/no question (README, "A yes or a no"): the threshold and L2 below.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from . import disk_cache
from .caller_acts import GO_ON, YES_NO_MEANINGS, caller_acts, yes_no_answers
from .normalise import normalise

# LULL_YES_NO_READER=0 leaves the reader out, to compare
ENABLED = os.environ.get("LULL_YES_NO_READER", "").strip().lower() not in ("0", "off", "no", "false")
CLASSES = YES_NO_MEANINGS
# the reading counts from this probability; below it the turn holds no answer
THRESHOLD = 0.7
L2 = 1e-3
VERSION = 1


def answers() -> tuple[tuple[str, str], ...]:
    """(what the caller said, "yes" | "no" | "neither") of every writer, once each, in file order."""
    return yes_no_answers()


def training_rows(off_topic: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
    """Texts (normalised) and labels: the answers, then neither: every caller act but a
    backchannel or a "go on" (said to "would you like...?" those are a yes), and
    `off_topic`, each only where its words hold no yes/no word."""
    from ladder.flow.understanding.text import parse_yes_no

    texts = [s for s, _ in answers()]
    labels = [CLASSES.index(m) for _, m in answers()]
    for act, phrases in caller_acts().items():
        if act == "backchannel":
            continue
        for phrase in phrases:
            if parse_yes_no(phrase) is None and not GO_ON.search(phrase.lower()):
                texts.append(phrase)
                labels.append(CLASSES.index("neither"))
    for phrase in off_topic:
        if parse_yes_no(phrase) is None:
            texts.append(phrase)
            labels.append(CLASSES.index("neither"))
    said = [normalise(t) for t in texts]
    keep = [i for i, s in enumerate(said) if s]
    return [said[i] for i in keep], np.array([labels[i] for i in keep])


class YesNoReader:
    """The learned yes/no reading of a turn's features (the featuriser's, as the intent
    classifier makes them)."""

    def __init__(self, weights: np.ndarray, biases: np.ndarray) -> None:
        self.weights, self.biases = weights, biases

    def read(self, features: np.ndarray) -> tuple[bool | None, float]:
        """(True for yes, False for no, None for neither or unsure; its probability)."""
        from .intent_classifier import softmax

        p = softmax(np.atleast_2d(features) @ self.weights + self.biases)[0]
        best = int(np.argmax(p))
        if CLASSES[best] == "neither" or p[best] < THRESHOLD:
            return None, round(float(p[best]), 3)
        return CLASSES[best] == "yes", round(float(p[best]), 3)


_lock = threading.Lock()
_readers: dict[tuple, YesNoReader] = {}


def reader_for(featuriser) -> YesNoReader:  # noqa: ANN001 (an intent_classifier.Featuriser)
    """The reader on `featuriser`'s features: trained once a process, kept on disk by
    what it was trained from (deterministic: the same data give the same weights)."""
    from .intent_classifier import LEXICAL_DIM, OFF_TOPIC_TRAINING, train_softmax

    with _lock:
        found = _readers.get(featuriser.key)
    if found is not None:
        return found
    said, labels = training_rows(OFF_TOPIC_TRAINING)
    name = None
    if featuriser.fingerprint is not None:
        name = "yes-no-" + disk_cache.digest(VERSION, featuriser.fingerprint, said, labels.tolist(), L2)
        data = disk_cache.load(name)
        if data is not None and set(data) == {"weights", "biases"} and data["biases"].shape == (len(CLASSES),):
            reader = YesNoReader(data["weights"], data["biases"])
            with _lock:
                _readers[featuriser.key] = reader
            return reader
    features = featuriser(said, cache=True)
    sparse_from = features.shape[1] - LEXICAL_DIM if featuriser.lexical else None
    weights, biases = train_softmax(features, labels, len(CLASSES), L2, sparse_from=sparse_from)
    if name is not None:
        disk_cache.save(name, weights=weights, biases=biases)
    reader = YesNoReader(weights, biases)
    with _lock:
        _readers[featuriser.key] = reader
    return reader


__all__ = ["CLASSES", "ENABLED", "THRESHOLD", "YesNoReader", "answers", "reader_for", "training_rows"]
