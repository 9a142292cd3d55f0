"""The disk cache: the classifier and its training vectors survive the process, a damaged
or unwritable cache is a miss and never an error, and it can be turned off."""

from __future__ import annotations

import numpy as np

import voices.understanding.intent_classifier as ic
from voices.understanding import disk_cache
from voices.understanding.interpret import load_minilm

INTENTS = {
    "wait_request": ("hold on", "give me a second", "one moment please"),
    "repeat_request": ("say that again", "what was the question", "can you repeat that"),
}


class CountingEncoder:
    """MiniLM, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.model = load_minilm()
        # its own name: the caller-act vectors shipped for MiniLM (test_caller_act_vectors)
        # would otherwise serve the texts they share with these
        self.fingerprint = self.model.fingerprint + " (counted)"
        self.embedded: list[str] = []

    def embed(self, texts, norm=True):
        self.embedded += list(texts)
        return self.model.embed(texts, norm=norm)


def fresh_classifier(intents, encoder) -> ic.ClassifierMatcher:
    ic._model_cache.clear()  # a new process, as far as the caches in memory go
    ic._text_cache.clear()
    return ic.ClassifierMatcher(intents, 0.5, featuriser=ic.Featuriser(encoder, None, False), l2=ic.CLASSIFIER_L2)


def test_where_the_cache_lives(monkeypatch, tmp_path):
    monkeypatch.setenv("LULL_CACHE_DIR", "off")
    assert disk_cache.cache_dir() is None
    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "mine"))
    assert disk_cache.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("LULL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.cache_dir() == tmp_path / "xdg" / "lull"


def test_entries_round_trip_and_a_damaged_or_unwritable_cache_is_a_miss(monkeypatch, tmp_path):
    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "cache"))
    assert disk_cache.load("nothing") is None
    disk_cache.save("entry", a=np.arange(3.0), texts=np.array(["one", "two"]))
    got = disk_cache.load("entry")
    assert got is not None and got["a"].tolist() == [0.0, 1.0, 2.0] and got["texts"].tolist() == ["one", "two"]
    (tmp_path / "cache" / "entry.npz").write_bytes(b"not an npz")
    assert disk_cache.load("entry") is None
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    monkeypatch.setenv("LULL_CACHE_DIR", str(blocker / "cache"))  # a folder that cannot be made
    disk_cache.save("entry", a=np.arange(3.0))  # no error
    assert disk_cache.load("entry") is None
    assert disk_cache.digest("a", [1, 2]) == disk_cache.digest("a", [1, 2]) != disk_cache.digest("a", [2, 1])


def test_a_second_process_loads_the_classifier_without_embedding(monkeypatch, tmp_path):
    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "cache"))
    first_encoder = CountingEncoder()
    first = fresh_classifier(INTENTS, first_encoder)
    assert len(first_encoder.embedded) == len(set(ic.training_set(INTENTS)[1]))  # each text once
    texts = ["hold on a sec", "sorry what did you say", "the printer is jammed"]
    again = CountingEncoder()
    second = fresh_classifier(INTENTS, again)
    assert again.embedded == []  # the model came from disk
    assert second.model is not first.model
    assert np.array_equal(second.model.weights, first.model.weights)
    assert [second.scores(t) for t in texts] == [first.scores(t) for t in texts]


def test_after_an_edit_only_the_new_example_is_embedded(monkeypatch, tmp_path):
    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "cache"))
    fresh_classifier(INTENTS, CountingEncoder())
    edited = {**INTENTS, "wait_request": (*INTENTS["wait_request"], "let me find it")}
    encoder = CountingEncoder()
    matcher = fresh_classifier(edited, encoder)
    assert encoder.embedded == ["let me find it"]
    assert matcher.match("hang on, let me look")[0] == "wait_request"


def test_turned_off_it_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("LULL_CACHE_DIR", "off")
    encoder = CountingEncoder()
    fresh_classifier(INTENTS, encoder)
    fresh_classifier(INTENTS, encoder)
    assert len(encoder.embedded) == 2 * len(set(ic.training_set(INTENTS)[1]))
    assert list(tmp_path.rglob("*.npz")) == []


def test_a_build_waits_for_another_building_the_same_entry_then_loads_it(monkeypatch, tmp_path):
    import threading

    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "cache"))
    got, done = {}, threading.Event()

    def other():
        with disk_cache.building("entry"):
            got["entry"] = disk_cache.load("entry")
        done.set()

    with disk_cache.building("entry"):
        thread = threading.Thread(target=other)
        thread.start()
        assert not done.wait(0.3)  # held here: the other waits
        disk_cache.save("entry", a=np.arange(2.0))
    thread.join(10)
    assert got["entry"]["a"].tolist() == [0.0, 1.0]  # it found what was built, instead of building it
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["entry.npz"]  # no lock file left


def test_a_classifier_another_process_is_training_is_loaded_when_it_is_done_not_trained_again(monkeypatch, tmp_path):
    import threading

    encoder = CountingEncoder()
    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "first"))
    name = fresh_classifier(INTENTS, encoder)._disk_name  # what the entry is called
    monkeypatch.setenv("LULL_CACHE_DIR", str(tmp_path / "second"))
    built = {}
    with disk_cache.building(name):  # "another process" is training it
        thread = threading.Thread(target=lambda: built.setdefault("m", fresh_classifier(INTENTS, CountingEncoder())))
        thread.start()
        thread.join(0.5)
        assert thread.is_alive()  # waiting, not training
        names = 3  # two intents and none
        disk_cache.save(name, weights=np.zeros((encoder.model.embed(["x"]).shape[1], names)), biases=np.full(names, 7.0))
    thread.join(60)
    assert built["m"].model.biases.tolist() == [7.0, 7.0, 7.0]  # the other's model, loaded
