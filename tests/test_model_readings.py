"""The agent's own model as a second reader (issue 49): its readings of caller turns,
journaled beside Lull's, counted by `lull sessions report` and `coverage`, and turned
by `lull sessions phrasings` into a phrasing file `lull bench intents` measures with.

The corpus is hand-built: ladder-mode calls driven through the core, journaled as the
framework adapters journal them, with a `model_reading` observation after each caller
turn; every figure below is counted by hand from CORPUS."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from test_cli import lull

from ladder import Controller, RequestPrompt
from ladder.events import AskQuestion, EndSession, PlaybackCompleted, PlaybackStarted, TurnEnded, TurnInterpreted, TurnStarted
from sessions.archive import ArchiveWriter
from sessions.coverage import coverage
from sessions.journal import JournalWriter
from sessions.metrics import folder_metrics, session_metrics
from sessions.model_readings import corpus_phrasings, phrasing_file
from sessions.replay import replay
from voices.understanding.phrasing_bench import NONE_KEY

W, R, A, C = "wait_request", "ready", "answer", "cut_off"

# (words as the journal holds them, digits masked; model; Lull; agree; stale)
CORPUS = {
    "a": ("pipecat", [
        ("hold on a sec let me find it", W, W, True, False),
        ("I've got it here", R, R, True, False),
        ("it's 0123", A, A, True, False),
        ("wait I need to find my card", W, A, False, False),
        ("um so the", C, A, None, False),
    ]),
    "b": ("livekit", [
        ("give me a moment please", W, W, True, False),
        ("hang on", W, "backchannel", False, False),
        ("HOLD ON a sec, let me find it", W, W, True, True),  # the same words as a's first, decided too late
        ("", R, None, None, False),  # no words reached Lull
        ("okay that's it", R, A, False, False),
        ("okay", A, A, True, False),
    ]),
    "c": ("pipecat", [
        ("yes it's 0123", A, W, False, False),
        ("wait I need to find my card", W, A, False, False),
        ("okay", R, R, True, False),  # "okay" read two ways over the corpus: left out of the file
        ("hmm", "maybe", None, None, False),  # a model decision outside the vocabulary: unusable
    ]),
    "d": ("pipecat", []),  # a call with no model readings
}


def _header(source: str) -> dict:
    from ladder import LadderPolicy

    via = "pipecat_marker" if source == "pipecat" else "livekit_tool"
    return {"source": source, "ladder_policy": LadderPolicy().model_dump(mode="json"), "flow_hash": None,
            "pipeline": {"mode": "ladder", "model_readings": via}}


def write_call(writer: JournalWriter, source: str, turns: list) -> None:
    """A ladder-mode call: the bot's question, then each caller turn fed to the core as the
    adapters feed it, the model's reading journaled after Lull's (a stale one after the
    next turn began), every input and decision journaled."""
    core, now = Controller(), 0.0
    via = "pipecat_marker" if source == "pipecat" else "livekit_tool"

    def feed(event) -> list:
        nonlocal now
        now += 250.0
        effects = core.handle(event, now)
        writer.write_input(now, {"kind": event.kind, "event": event.to_dict()})
        for effect in effects:
            writer.write_decision(now, effect.to_dict())
        return effects

    def observe(number: int, words: str, model: str, lull_reading, agree, stale: bool) -> None:
        writer.write_decision(now, {
            "effect": "Observation", "kind": "model_reading", "turn": f"user-{number}", "via": via,
            "model": model, "lull": lull_reading, "lull_score": None if lull_reading is None else 0.8,
            "agree": agree, "stale": stale, "words": words})

    question = feed(AskQuestion("bot-1", "What is your reference code?"))
    token = next(e.token for e in question if isinstance(e, RequestPrompt))
    feed(PlaybackStarted(token))
    feed(PlaybackCompleted(token))
    late = None
    for number, (words, model, lull_reading, agree, stale) in enumerate(turns, start=1):
        turn = f"user-{number}"
        feed(TurnStarted(turn, number))
        if late is not None:
            observe(*late)  # decided after this turn began
            late = None
        feed(TurnEnded(turn, number))
        intent = lull_reading or "noise"
        feed(TurnInterpreted(turn, number, intent, words if intent == "answer" else None))  # type: ignore[arg-type]
        if stale:
            late = (number, words, model, lull_reading, agree, stale)
        else:
            observe(number, words, model, lull_reading, agree, stale)
    if late is not None:
        observe(*late)
    feed(EndSession(reason="pipeline_ended"))


def make_corpus(root: Path, archive: bool = False) -> Path:
    """CORPUS under `root`: a and d as session folders; b and c as folders too, or in one
    .jsonl.zst archive."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("a", "d") if archive else CORPUS:
        source, turns = CORPUS[name]
        with JournalWriter.create(root / name, _header(source)) as writer:
            write_call(writer, source, turns)
    if archive:
        with ArchiveWriter(root / "calls.jsonl.zst") as out:
            for name in ("b", "c"):
                source, turns = CORPUS[name]
                with JournalWriter.append_to(out.stream, root / "calls.jsonl.zst", _header(source)) as writer:
                    write_call(writer, source, turns)
    return root


EXPECTED = {
    "turns": 14, "sessions": 3,
    "decided": {W: 6, R: 4, A: 3, C: 1},
    "agreed": 7, "disagreed": 5, "comparable": 12,
    "disagreements": [
        {"model": W, "lull": A, "turns": 2},
        {"model": A, "lull": W, "turns": 1},
        {"model": R, "lull": A, "turns": 1},
        {"model": W, "lull": "backchannel", "turns": 1},
    ],
    "not_comparable": {"cut_off": 1, "no_lull_reading": 1, "unsayable": 0, "other": 0},
    "stale": 1,
    "via": {"livekit_tool": 6, "pipecat_marker": 8},
    "unusable": 1,
}


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("model_readings")
    return {"folders": make_corpus(root / "folders"), "archive": make_corpus(root / "archive", archive=True)}


def test_the_journals_are_sessions_that_replay_clean_with_the_readings_beside(corpora):
    for name in CORPUS:
        result = replay(corpora["folders"] / name)
        assert result.verdict == "CLEAN", result.describe()
    assert session_metrics(corpora["folders"] / "a").skipped_lines == 0


def test_the_report_counts_the_models_readings_with_their_denominators(corpora):
    for root, workers in ((corpora["folders"], 1), (corpora["folders"], 2), (corpora["archive"], 2)):
        metrics = folder_metrics(root, workers=workers)
        assert metrics.sessions == 4 and metrics.unreadable == []
        assert metrics.model_readings.to_dict() == EXPECTED, (root, workers)
    rows = {metric: (count, denominator, of) for metric, count, denominator, of in metrics.rows()}
    assert rows["turns the model read"] == (14, None, "")
    assert rows["sessions with model readings"] == (3, 4, "sessions")
    assert rows["model decided wait_request"] == (6, 14, "turns the model read")
    assert rows["model and Lull agreed"] == (7, 12, "comparable turns")
    assert rows["model and Lull disagreed"] == (5, 12, "comparable turns")
    assert rows["model wait_request, Lull answer"] == (2, 5, "disagreements")
    assert rows["model answer, Lull wait_request"] == (1, 5, "disagreements")
    assert rows["not comparable: the model said the caller was cut off (Lull has no such reading)"] == (1, 14, "turns the model read")
    assert rows["not comparable: Lull had no words to read"] == (1, 14, "turns the model read")
    assert rows["stale: decided after the caller's next turn began"] == (1, 14, "turns the model read")
    assert rows["model readings with fields that cannot be read"] == (1, 15, "model readings journaled")
    labels = " ".join(rows)
    assert "maybe" not in labels and "0123" not in labels  # labels from the vocabulary only, never words


def test_coverage_counts_them_per_flow_the_same_however_the_corpus_is_read(corpora):
    by_flow = {}
    for root, workers in ((corpora["folders"], 1), (corpora["folders"], 2), (corpora["archive"], 2)):
        flows = coverage([root], workers=workers).to_dict()["flows"]
        by_flow[(root, workers)] = {name: flow["model_readings"] for name, flow in flows.items()}
    first, *others = by_flow.values()
    assert all(other == first for other in others)
    pipecat, livekit = first["(pipecat: the ladder alone)"], first["(livekit: the ladder alone)"]
    assert (pipecat["turns"], pipecat["sessions"], pipecat["unusable"]) == (8, 2, 1)  # a and c; d had none
    assert (livekit["turns"], livekit["sessions"], livekit["stale"]) == (6, 1, 1)
    assert pipecat["agreed"] + livekit["agreed"] == 7 and pipecat["disagreed"] + livekit["disagreed"] == 5
    assert livekit["disagreements"] == [{"model": R, "lull": A, "turns": 1}, {"model": W, "lull": "backchannel", "turns": 1}]


def test_the_report_and_coverage_commands_show_them(corpora):
    report = lull("sessions", "report", str(corpora["archive"]), "--csv")
    assert report.returncode == 0, report.stderr
    rows = list(csv.reader(io.StringIO(report.stdout)))
    assert ["model wait_request, Lull answer", "2", "5", "disagreements"] in rows
    assert ["model and Lull agreed", "7", "12", "comparable turns"] in rows
    table = lull("sessions", "coverage", str(corpora["folders"]))
    assert table.returncode == 0, table.stderr
    assert "model readings" in table.stdout and "agreed 7 of 12" not in table.stdout  # per flow, not pooled
    assert "model wait_request, Lull answer: 2" in table.stdout  # a's and c's, both pipecat


def test_journals_without_model_readings_say_so_in_one_row(tmp_path):
    plain = tmp_path / "plain"
    with JournalWriter.create(plain, _header("pipecat")) as writer:
        write_call(writer, "pipecat", [])
    metrics = folder_metrics(plain, workers=1)
    assert metrics.model_readings.turns == 0 and metrics.model_readings.sessions == 0
    assert [row for row in metrics.rows() if "model" in row[0]] == [("no model readings journaled", 0, None, "")]
    result = lull("sessions", "report", str(plain))
    assert result.returncode == 0 and "no model readings journaled" in result.stdout
    data = coverage([plain]).to_dict()["flows"]["(pipecat: the ladder alone)"]["model_readings"]
    assert data["turns"] == 0 and data["decided"] == {W: 0, R: 0, A: 0, C: 0}
    export = lull("sessions", "phrasings", str(plain))
    assert export.returncode == 1 and export.stdout == ""
    assert "1 journal(s) read: 0 turn(s) the model read" in export.stderr
    assert "no model-labelled turns to export" in export.stderr and "Traceback" not in export.stderr


EXPORTED = {
    W: ["wait I need to find my card", "HOLD ON a sec, let me find it", "give me a moment please", "hang on"],
    R: ["I've got it here", "okay that's it"],
    NONE_KEY: ["it's 0123", "yes it's 0123"],
}


def test_the_export_labels_each_phrase_once_by_the_models_reading(corpora):
    for root, workers in ((corpora["folders"], 2), (corpora["archive"], 1)):
        part = corpus_phrasings([root], workers=workers)
        assert (part.journals, part.turns, part.unusable, part.unreadable) == (4, 14, 1, [])
        export = phrasing_file(part)
        # the stale reading of "hold on a sec let me find it" is left out, the words kept by
        # the reading acted on; spelt the one way however the corpus was split (the
        # smallest spelling heard)
        assert export.file == EXPORTED
        assert dict(export.turns) == {W: 5, R: 2, NONE_KEY: 2}
        assert dict(export.left_out) == {"cut_off": 1, "no_words": 1, "stale": 1, "two_ways": 2}
        assert export.two_ways == 1
    with_stale = phrasing_file(part, include_stale=True)
    assert with_stale.file == WITH_STALE and with_stale.turns[W] == 6 and "stale" not in with_stale.left_out


# heard twice now: ties in turns go by spelling
WITH_STALE = {**EXPORTED, W: ["HOLD ON a sec, let me find it", "wait I need to find my card", "give me a moment please", "hang on"]}


def test_words_read_mostly_one_way_are_kept_under_a_lower_agreement(tmp_path):
    # LiveKit's model can say the caller is back (a tool): its reply instead is a reading
    turns = [("okay", R, R, True, False), ("okay", R, R, True, False), ("okay", A, R, False, False)]
    with JournalWriter.create(tmp_path / "e", _header("livekit")) as writer:
        write_call(writer, "livekit", turns)
    part = corpus_phrasings([tmp_path], workers=1)
    assert phrasing_file(part).file == {}
    mostly = phrasing_file(part, min_agreement=0.6)
    assert mostly.file == {R: ["okay"]} and dict(mostly.left_out) == {"outvoted": 1}


def test_the_command_writes_the_file_once_and_refuses_to_overwrite_it(corpora, tmp_path):
    target = tmp_path / "callers.json"
    made = lull("sessions", "phrasings", str(corpora["folders"]), "--out", str(target))
    assert made.returncode == 0, made.stderr
    assert json.loads(target.read_text(encoding="utf-8")) == EXPORTED
    assert "4 journal(s) read: 14 turn(s) the model read, 1 model reading(s) with fields that cannot be read" in made.stderr
    assert "exported 8 phrase(s) from 9 turn(s): wait_request 4 (5 turns), ready 2 (2 turns), none 2 (2 turns)" in made.stderr
    assert "1 turn(s) the model said were cut off" in made.stderr and "--include-stale keeps them" in made.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["callers.json"]  # no temporary file left behind
    target.write_text("{}", encoding="utf-8")
    again = lull("sessions", "phrasings", str(corpora["folders"]), "--out", str(target))
    assert again.returncode == 2 and "the file exists; give --force" in again.stderr and "Traceback" not in again.stderr
    assert target.read_text(encoding="utf-8") == "{}"
    forced = lull("sessions", "phrasings", str(corpora["archive"]), "--out", str(target), "--force", "--include-stale")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(target.read_text(encoding="utf-8")) == WITH_STALE
    printed = lull("sessions", "phrasings", str(corpora["archive"]))
    assert printed.returncode == 0 and json.loads(printed.stdout) == EXPORTED


def test_bad_input_is_one_line_and_a_non_zero_exit(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    broken = tmp_path / "broken"
    (broken / "x").mkdir(parents=True)
    (broken / "x" / "journal.jsonl").write_text("not json\n")
    for args, code, says in [
        ((str(empty),), 1, "no session folders or archives"),
        ((str(tmp_path / "nope"),), 2, "no such session"),
        ((str(empty), "--force"), 2, "--force goes with --out"),
        ((str(empty), "--out", str(tmp_path / "no" / "such" / "f.json")), 2, "does not exist"),
        ((str(broken),), 3, "1 journal(s) could not be read"),  # none of the corpus read: no verdict, exit 3
    ]:
        bad = lull("sessions", "phrasings", *args)
        assert bad.returncode == code and says in bad.stderr, (args, bad.stderr)
        assert "Traceback" not in bad.stderr and bad.stdout == ""


def test_the_exported_file_is_one_lull_bench_intents_measures(corpora, tmp_path):
    target = tmp_path / "callers.json"
    assert lull("sessions", "phrasings", str(corpora["folders"]), "--out", str(target)).returncode == 0
    result = lull("bench", "intents", "reference_code", "--phrasings", str(target), "--json")  # the default flow
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {name: row["total"] for name, row in data["intents"].items()} == {W: 4, R: 2}
    assert data["off_topic"]["total"] == 2


def test_on_a_dask_cluster_every_reader_gives_the_same_figures(corpora):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  worker_dashboard_address=":0", silence_logs=40) as local, distributed.Client(local) as client:
        metrics = folder_metrics(corpora["archive"], scheduler=client)
        flows = coverage([corpora["folders"]], scheduler=client).to_dict()["flows"]
        part = corpus_phrasings([corpora["folders"], corpora["archive"] / "calls.jsonl.zst"], scheduler=client)
    assert metrics.model_readings.to_dict() == EXPECTED
    assert sum(flow["model_readings"]["turns"] for flow in flows.values()) == 14
    file = phrasing_file(part).file  # b and c read twice (their folders and the archive): each phrase still once
    assert part.journals == 6 and {k: sorted(v) for k, v in file.items()} == {k: sorted(v) for k, v in EXPORTED.items()}


def test_beside_an_llm_words_that_are_mostly_digits_answer_whatever_the_reader_made_of_them():
    from voices.understanding.model_reading import lull_meaning

    assert lull_meaning("ready", "it's four eight two one") == "answer"
    assert lull_meaning("wait_request", "4 8 2 1") == "answer"
    assert lull_meaning("wait_request", "give me two minutes") == "wait_request"
    assert lull_meaning("wait_request", "one moment") == "wait_request"
    assert lull_meaning("ready", "okay I'm back") == "ready"
    assert lull_meaning(None, "the blue one") == "answer"


def test_a_complete_turn_lull_reads_as_the_caller_back_is_no_disagreement_on_pipecat_markers(tmp_path):
    """Pipecat's markers say complete, cut off or needs time: a caller back from a wait
    ("okay I'm back", marked complete, the LLM replying) or asking again is a complete
    turn to them. Not a disagreement with Lull's "ready", and not exported as off-topic;
    agreement as the adapters journal it, and as the reader works it out of an older
    journal that said "agree": false."""
    from voices.understanding.model_reading import ModelDecision, observation

    marked = observation(ModelDecision("user-1", 1, A, "pipecat_marker", "●"), (R, 0.9), "okay I'm back", False)
    assert marked["agree"] is None
    asked = observation(ModelDecision("user-2", 2, A, "pipecat_marker", "●"), ("repeat_request", 0.9), "say again", False)
    assert asked["agree"] is None
    held = observation(ModelDecision("user-3", 3, W, "pipecat_marker", "○"), (R, 0.9), "okay I'm back", False)
    assert held["agree"] is False  # needs time against the caller back: the markers can say that
    on_livekit = observation(ModelDecision("user-4", 4, A, "livekit_reply"), (R, 0.9), "okay I'm back", False)
    assert on_livekit["agree"] is False  # LiveKit's model had a tool for it

    turns = [("okay I'm back", A, R, False, False), ("say that again", A, "repeat_request", False, False),
             ("it's 0123", A, A, True, False), ("hold on", W, W, True, False)]
    with JournalWriter.create(tmp_path / "p", _header("pipecat")) as writer:
        write_call(writer, "pipecat", turns)
    readings = folder_metrics(tmp_path, workers=1).model_readings.to_dict()
    assert (readings["agreed"], readings["disagreed"], readings["comparable"]) == (2, 0, 2)
    assert readings["not_comparable"]["unsayable"] == 2 and readings["disagreements"] == []
    export = phrasing_file(corpus_phrasings([tmp_path], workers=1))
    assert export.file == {W: ["hold on"], NONE_KEY: ["it's 0123"]}
    assert export.left_out["unsayable"] == 2
