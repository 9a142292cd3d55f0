"""Corpus archives (`lull corpus simulate --archive gz|zst`): journals back to back in one
compressed file, the flow stored once beside them by hash; every corpus reader gives
the same figures as over session folders, and damage is named, never fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from console.cli import app
from sessions.archive import members
from sessions.population import Population
from sessions.simulate import simulate_corpus

runner = CliRunner()
FLOW = Path(__file__).parent / "flows" / "yardstick" / "loan_repayment.json"
CALLS = 120


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("archives")
    made = {}
    for kind in ("folders", "zst", "gz"):
        made[kind] = root / kind
        simulate_corpus(made[kind], str(FLOW), None, CALLS, 11, Population(), workers=1,
                        archive=None if kind == "folders" else kind, per_archive=50)
    return made


def _json(*args: str, code: int = 0) -> dict:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def _without_names(data):
    """Figures only: sessions are named by folder in one corpus, by archive member in the other."""
    if isinstance(data, dict):
        return {k: _without_names(v) for k, v in data.items() if not k.endswith("_sessions")}
    if isinstance(data, list):
        return [_without_names(v) for v in data if not isinstance(v, str)]
    return data


def test_an_archive_holds_the_calls_smaller_with_the_flow_stored_once(corpora):
    archives = sorted(corpora["zst"].glob("*.jsonl.zst"))
    assert [a.name for a in archives] == ["calls-0000000.jsonl.zst", "calls-0000050.jsonl.zst", "calls-0000100.jsonl.zst"]
    stored = list((corpora["zst"] / "flows").iterdir())
    assert len(stored) == 1 and stored[0].name.startswith("sha256-")
    first = next(members(archives[0], []))
    header = json.loads(first.data.split(b"\n", 1)[0])
    assert "flow_document" not in header and header["flow_stored"] == f"flows/{stored[0].name}"
    folders_size = sum(f.stat().st_size for f in corpora["folders"].rglob("*") if f.is_file())
    zst_size = sum(f.stat().st_size for f in corpora["zst"].rglob("*") if f.is_file())
    assert zst_size * 5 < folders_size, (zst_size, folders_size)


@pytest.mark.parametrize("kind", ["zst", "gz"])
def test_every_reader_gives_the_same_figures_over_an_archive(corpora, kind, tmp_path):
    folders, archive = str(corpora["folders"]), str(corpora[kind])
    timing = _json("sessions", "timing", archive, "--json")
    assert timing["sessions"] == CALLS and not timing["unreadable"]
    assert _without_names(timing) == _without_names(_json("sessions", "timing", folders, "--json"))
    report = _json("sessions", "report", archive, "--json")
    assert report == _json("sessions", "report", folders, "--json")
    coverage = _json("sessions", "coverage", archive, "--json")
    assert coverage == _json("sessions", "coverage", folders, "--json")
    edited = tmp_path / "edited.json"
    document = json.loads(FLOW.read_text(encoding="utf-8"))
    document["intent_threshold"] = 0.9  # a shyer matcher: some turns read differently
    edited.write_text(json.dumps(document), encoding="utf-8")
    whatif = _json("sessions", "replay", archive, "--flow", str(edited), "--summary", "--json")
    assert whatif["sessions"] == CALLS
    assert whatif == _json("sessions", "replay", folders, "--flow", str(edited), "--summary", "--json")


def test_a_damaged_archive_gives_up_what_it_holds_and_is_named(corpora, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "flows").mkdir()
    for f in (corpora["zst"] / "flows").iterdir():
        (broken / "flows" / f.name).write_bytes(f.read_bytes())
    for f in corpora["zst"].glob("*.jsonl.zst"):
        data = f.read_bytes()
        # the first archive cut to two thirds: a copy interrupted mid-way
        (broken / f.name).write_bytes(data[: len(data) * 2 // 3] if f.name.endswith("0000000.jsonl.zst") else data)
    timing = _json("sessions", "timing", str(broken), "--json", code=3)  # a verdict on less than the whole
    [rest] = [u for u in timing["unreadable"] if u["journal"].endswith("calls-0000000.jsonl.zst")]
    assert rest["reason"].startswith("unreadable after member") and "cut short" in rest["reason"]
    assert 70 + 20 < timing["sessions"] < CALLS  # the other archives whole, part of the first
    assert timing["verdict"]["of_at_least"]  # how many the rest held cannot be known


def test_a_stored_flow_missing_is_named_per_journal(corpora, tmp_path):
    lost = tmp_path / "lost"
    lost.mkdir()
    archive = next(corpora["zst"].glob("calls-0000100.jsonl.zst"))
    (lost / archive.name).write_bytes(archive.read_bytes())  # copied without its flows/
    result = runner.invoke(app, ["sessions", "timing", str(lost), "--json"])
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["sessions"] == 0 and len(data["unreadable"]) == 20
    assert all("its stored flow flows/sha256-" in u["reason"] and "is missing" in u["reason"] for u in data["unreadable"])
    result = runner.invoke(app, ["sessions", "replay", str(lost), "--summary"])
    assert result.exit_code == 3
    flat = " ".join(result.output.split())
    assert "is missing" in flat and "none of the 20 session(s) found could be replayed" in flat
    assert "What-if over" not in flat  # no table of zeros that reads as a verdict


def test_simulate_refuses_an_unknown_archive_kind(tmp_path):
    result = runner.invoke(app, ["corpus", "simulate", str(tmp_path / "x"), "--archive", "rar", "--calls", "1"])
    assert result.exit_code == 2 and "expected gz or zst" in result.output
    assert not (tmp_path / "x").exists()


def test_a_local_worker_process_killed_mid_run_loses_no_session(corpora):
    import multiprocessing
    import os
    import signal

    from sessions.timing import corpus_timing, summary

    expected = summary(corpus_timing([corpora["folders"]], workers=1))
    killed = []

    def kill_a_worker(done: int) -> None:
        children = multiprocessing.active_children()
        if not killed and children:
            os.kill(children[0].pid, signal.SIGKILL)
            killed.append(children[0].pid)

    got = summary(corpus_timing([corpora["folders"]], workers=2, progress=kill_a_worker))
    assert killed, "a worker was killed during the run"
    assert got["unreadable"] == [] and got == expected


@pytest.mark.parametrize("archive", [None, "zst"])
def test_a_killed_simulation_resumes_to_the_same_calls(tmp_path, archive):
    whole = tmp_path / "whole"
    simulate_corpus(whole, str(FLOW), None, 60, 4, Population(), workers=1, archive=archive, per_archive=20)
    cut = tmp_path / "cut"
    simulate_corpus(cut, str(FLOW), None, 60, 4, Population(), workers=1, archive=archive, per_archive=20)
    # what a kill leaves: calls never written, and one cut mid-line
    if archive is None:
        import shutil

        for i in (5, 6, 41):
            shutil.rmtree(cut / f"call-{i:07d}")
        journal = cut / "call-0000030" / "journal.jsonl"
    else:
        (cut / "calls-0000040.jsonl.zst").unlink()
        journal = cut / "calls-0000020.jsonl.zst"
    journal.write_bytes(journal.read_bytes()[:-150])
    damaged = _json("sessions", "timing", str(cut), "--json", code=3)  # the cut call: not the whole corpus
    assert damaged["read_in_part"] or damaged["unreadable"]
    result = runner.invoke(app, ["corpus", "simulate", str(cut), "--flow", str(FLOW), "--calls", "60", "--seed", "4",
                                 "--per-archive", "20", "--workers", "1", "--resume",
                                 *(["--archive", archive] if archive else [])])
    assert result.exit_code == 0, result.output
    assert _json("sessions", "timing", str(cut), "--json") == _json("sessions", "timing", str(whole), "--json")
    # a different seed is not the same corpus: refused, nothing touched
    before = sorted(p.name for p in cut.iterdir())
    result = runner.invoke(app, ["corpus", "simulate", str(cut), "--flow", str(FLOW), "--calls", "60", "--seed", "5",
                                 "--resume", *(["--archive", archive] if archive else [])])
    assert result.exit_code == 2 and "made with seed 4" in " ".join(result.output.split())
    assert sorted(p.name for p in cut.iterdir()) == before
    # without --resume a corpus folder is refused, with the hint
    result = runner.invoke(app, ["corpus", "simulate", str(cut), "--flow", str(FLOW)])
    assert result.exit_code == 2 and "--resume completes it" in " ".join(result.output.split())


def _square(x: int) -> int:
    return x * x


def test_a_pool_whose_idle_worker_was_killed_ends_without_waiting_on_the_others():
    """An idle worker waits holding the task queue's lock: killed there, it leaves the
    other blocked on it, and a plain shutdown(wait=True) joined that one for ever (3 of 5
    trials hung on Python 3.11). The run's pool is ended, not asked."""
    import os
    import signal
    import threading
    import time
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.connection import wait as wait_for_exit

    from sessions.corpus import _end_pool

    for _ in range(3):
        pool = ProcessPoolExecutor(2)
        assert [f.result() for f in [pool.submit(_square, i) for i in range(8)]] == [i * i for i in range(8)]
        time.sleep(0.2)  # both idle: one of them holds the lock
        workers = list(pool._processes.values())
        os.kill(workers[0].pid, signal.SIGKILL)
        ended = threading.Event()
        threading.Thread(target=lambda: (_end_pool(pool), ended.set()), daemon=True).start()
        assert ended.wait(20), "the pool's shutdown waited on a worker that could not hear it"
        # exited (their sentinels are closed); is_alive() can say True a moment longer
        # while the pool's own thread reaps them
        assert all(wait_for_exit([w.sentinel], 0) for w in workers)
