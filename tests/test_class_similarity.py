"""Each class's similarity to a turn (voices.understanding.class_similarity): the mean
cosine of its K nearest examples; in training, each example's own left out."""

from __future__ import annotations

import numpy as np

from voices.understanding import class_similarity as cs


def _unit(rows):
    v = np.asarray(rows, dtype=np.float64)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_a_turn_is_as_near_a_class_as_the_mean_of_its_nearest_examples():
    examples = _unit([[1, 0], [0.8, 0.6], [0.6, 0.8], [0, 1], [-1, 0.1]])
    labels = np.array([0, 0, 0, 1, 1])
    near = cs.ClassSimilarity(examples, labels, 2, neighbours=2, scale=1.0)
    turn = _unit([[1, 0]])
    got = near(turn)[0]
    assert np.allclose(got, [(1.0 + 0.8) / 2, (0.0 + turn[0] @ examples[4]) / 2])


def test_in_training_an_example_is_not_its_own_neighbour_whatever_the_order_of_the_classes():
    rng = np.random.default_rng(3)
    examples = _unit(rng.normal(size=(40, 6)))
    labels = rng.integers(0, 3, size=40)  # classes interleaved: the similarities still find each example
    near = cs.ClassSimilarity(examples, labels, 3, neighbours=3, scale=2.0)
    loo = near(examples, leave_one_out=True)
    for i in range(40):
        sims = examples @ examples[i]
        for c in range(3):
            others = np.sort(sims[(labels == c) & (np.arange(40) != i)])[::-1][:3]
            assert np.isclose(loo[i, c], 2.0 * others.mean())
    # a turn that is an example, not left out, is nearest itself
    assert np.all(near(examples)[np.arange(40), labels] >= loo[np.arange(40), labels])


def test_many_rows_are_read_a_block_at_a_time_with_the_same_figures(monkeypatch):
    rng = np.random.default_rng(5)
    examples = _unit(rng.normal(size=(30, 4)))
    labels = np.repeat([0, 1, 2], 10)
    near = cs.ClassSimilarity(examples, labels, 3)
    whole = near(examples, leave_one_out=True)
    monkeypatch.setattr(cs, "_ROWS", 7)
    assert np.array_equal(near(examples, leave_one_out=True), whole)
