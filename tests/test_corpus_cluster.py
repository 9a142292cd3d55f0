"""Corpus readers on a real Dask cluster: a local scheduler and two worker processes give
figures identical to one process, and a worker killed mid-run loses no session."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from console.cli import app
from sessions.coverage import coverage
from sessions.metrics import folder_metrics
from sessions.population import Population
from sessions.simulate import simulate_corpus
from sessions.timing import corpus_timing, summary
from sessions.whatif import Edit, corpus_whatif
from sessions.whatif import summary as whatif_summary

distributed = pytest.importorskip("distributed")

runner = CliRunner()
FLOW = Path(__file__).parent / "flows" / "yardstick" / "loan_repayment.json"


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", worker_dashboard_address=":0", silence_logs=40) as local:
        with distributed.Client(local) as client:
            yield local, client


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cluster") / "calls"
    # folders and archives mixed, as a corpus gathered over a month may be
    simulate_corpus(root, str(FLOW), None, 300, 5, Population(), workers=1)
    simulate_corpus(root / "archived", str(FLOW), None, 200, 6, Population(), workers=1, archive="zst", per_archive=50)
    return root


def test_every_reader_on_the_cluster_matches_one_process(cluster, corpus):
    local, client = cluster
    roots = [corpus, corpus / "archived"]
    here = summary(corpus_timing(roots, workers=1))
    there = summary(corpus_timing(roots, scheduler=local.scheduler_address))
    assert here["sessions"] == 500 and here == there
    assert folder_metrics(corpus, workers=1).to_dict() == folder_metrics(corpus, scheduler=client).to_dict()
    assert coverage(roots, workers=1).to_dict() == coverage(roots, scheduler=client).to_dict()
    edit = Edit(policy={"stages": [{"name": "quiet_wait", "wait_ms": 2500},
                                   {"name": "safe_close", "wait_ms": 2000, "closes": True, "prompt": "Goodbye for now."}]})
    assert whatif_summary(corpus_whatif(roots, edit, workers=1)) == whatif_summary(corpus_whatif(roots, edit, scheduler=client))


def test_the_cli_takes_a_scheduler_address(cluster, corpus):
    local, _ = cluster
    result = runner.invoke(app, ["sessions", "timing", str(corpus), "--json", "--scheduler", local.scheduler_address])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == summary(corpus_timing([corpus], workers=1))


def test_a_worker_killed_mid_run_loses_no_session(cluster, corpus):
    local, client = cluster
    expected = summary(corpus_timing([corpus], workers=1))
    killed = []

    def kill_one_worker(done: int) -> None:
        # after the first batch is merged, while others run: SIGKILL a worker process;
        # its nanny starts another and the scheduler sends its batches elsewhere
        if not killed:
            pids = client.run(os.getpid)
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    got = summary(corpus_timing([corpus], scheduler=client, progress=kill_one_worker))
    assert killed, "the run was long enough to kill a worker during it"
    assert got["unreadable"] == [] and got == expected and got["sessions"] == 300
    client.wait_for_workers(2, timeout=60)


def test_what_cannot_be_read_is_named_with_why_from_the_cluster_too(cluster, corpus, tmp_path):
    """Each journal's reason crosses back from the Dask workers: the same named journals
    and reasons as one process, and the CLI's exit 3."""
    import shutil

    local, client = cluster
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for folder in sorted(corpus.glob("call-*"))[:5]:
        shutil.copytree(folder, damaged / folder.name)
    broken = damaged / "call-0000002" / "journal.jsonl"
    broken.write_text("not a header\n" + broken.read_text().split("\n", 1)[1])
    shutil.copy(sorted((corpus / "archived").glob("*.jsonl.zst"))[0], damaged / "lost.jsonl.zst")  # without its flows/
    here = summary(corpus_timing([damaged], workers=1))
    there = summary(corpus_timing([damaged], scheduler=client))
    assert here == there and here["sessions"] == 4 and len(here["unreadable"]) == 51
    reasons = {u["journal"].rsplit("/", 1)[-1].split("#")[0]: u["reason"] for u in there["unreadable"]}
    assert reasons["call-0000002"].startswith("line 1: invalid JSON") and "is missing" in reasons["lost.jsonl.zst"]
    assert coverage([damaged], workers=1).to_dict() == coverage([damaged], scheduler=client).to_dict()
    assert folder_metrics(damaged, workers=1).to_dict() == folder_metrics(damaged, scheduler=client).to_dict()
    result = runner.invoke(app, ["sessions", "report", str(damaged), "--json", "--scheduler", local.scheduler_address])
    assert result.exit_code == 3 and json.loads(result.stdout)["unreadable"] == folder_metrics(damaged, workers=1).to_dict()["unreadable"]
