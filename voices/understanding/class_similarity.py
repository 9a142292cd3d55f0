"""How near a turn is to each class's own examples, as features for the intent classifier.

The classifier (voices.understanding.intent_classifier) is linear in the sentence
embedding and the words: it learns one direction per class, and a class's odd corners
(a route's eight examples beside thousands of shared phrases; "drop the cases at the
desk" for leaving the luggage) sit far from that direction. Beside those features it
gets, for each class, the mean cosine of the turn's embedding to that class's `K`
nearest training examples, and learns how much to trust each. A turn whisper half
misheard still lands near the examples it was meant as.

In training each example's similarities leave that example out (otherwise every
example is nearest to itself, and the classifier learns to trust a similarity of 1 no
turn has). Measured on yardstick2's dev sets (README, "Callers the team did not
write"): K 3 against 1, 5 and 10, the scale 1 against 0.5, 2, 3 and 6.
"""

from __future__ import annotations

import numpy as np

NEIGHBOURS = 3
# the similarities' scale beside the unit-length embedding: larger ones read answers
# ("table for 4 please") as asking again, nearest the question's echoes ("which table"),
# and fill fewer slots (dev answers 108 and 107 of 120 at 2 and 3, against 110)
SCALE = 1.0


class ClassSimilarity:
    """The training examples' embeddings, grouped by class (labels 0..k-1, each class's
    examples contiguous, as intent_classifier.training_set gives them)."""

    def __init__(self, embeddings: np.ndarray, labels: np.ndarray, n_classes: int,
                 neighbours: int = NEIGHBOURS, scale: float = SCALE) -> None:
        order = np.argsort(labels, kind="stable")
        self.embeddings = np.asarray(embeddings, dtype=np.float64)[order]
        counts = np.bincount(labels, minlength=n_classes)
        self.bounds = np.concatenate([[0], np.cumsum(counts)])
        self.order = order
        self.neighbours, self.scale = neighbours, scale
        self.width = self.embeddings.shape[1]

    def __call__(self, encoded: np.ndarray, *, leave_one_out: bool = False) -> np.ndarray:
        """(n, k): each row's mean cosine to each class's nearest examples, times the scale.
        `leave_one_out`: the rows are the training examples themselves, in training order."""
        encoded = np.atleast_2d(encoded)
        out = np.zeros((encoded.shape[0], len(self.bounds) - 1))
        where = np.empty(len(self.order), dtype=np.int64)
        where[self.order] = np.arange(len(self.order))  # each training example's column
        for start in range(0, encoded.shape[0], _ROWS):  # a training set's similarities a block at a time
            rows = slice(start, start + _ROWS)
            sims = encoded[rows] @ self.embeddings.T
            if leave_one_out:
                # below any cosine: a class of K examples or fewer keeps its own in the mean
                n = sims.shape[0]
                sims[np.arange(n), where[start : start + n]] = -1.0
            for c, (lo, hi) in enumerate(zip(self.bounds[:-1], self.bounds[1:], strict=True)):
                kk = min(self.neighbours, hi - lo)
                if kk > 0:
                    out[rows, c] = (-np.partition(-sims[:, lo:hi], kk - 1, axis=1)[:, :kk]).mean(axis=1)
        return self.scale * out


_ROWS = 512  # 512 x 5,000 similarities: 20 MB, not a training set's square
