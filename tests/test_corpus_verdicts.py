"""Corpus verdicts say what they cover: `sessions timing`, `report`, `coverage` and
`replay --summary` over a corpus some of whose journals cannot be read (an archive whose
stored flow is gone, an archive cut short, a journal whose header is not one, a mix)
name each journal and why, on the terminal and in --json, and exit 3; a whole corpus
exits 0, nothing to read 1, bad arguments 2. Real corpora on disk, the real CLI."""

from __future__ import annotations

import json
import shutil
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

runner = CliRunner()
FLOW = Path(__file__).parent / "flows" / "yardstick" / "loan_repayment.json"
COMMANDS = {
    "timing": ["sessions", "timing"],
    "report": ["sessions", "report"],
    "coverage": ["sessions", "coverage"],
    "replay --summary": ["sessions", "replay", "--summary"],
}
GARBAGE = "[bold red]broken"  # a session folder named like console markup: printed as it is, never read as markup


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("verdicts")
    made = root / "made"
    simulate_corpus(made / "archives", str(FLOW), None, 12, 3, Population(), workers=1, archive="zst", per_archive=6)
    simulate_corpus(made / "other", "reference_code", None, 3, 4, Population(), workers=1, archive="zst", per_archive=3)
    simulate_corpus(made / "folders", str(FLOW), None, 4, 5, Population(), workers=1)
    archives = sorted((made / "archives").glob("*.jsonl.zst"))
    assert len(archives) == 2

    def corpus(name: str, *, good_archives=False, folders=False, flow_lost=False, truncated=False, garbage=False) -> Path:
        out = root / name
        out.mkdir()
        if good_archives or truncated:
            shutil.copytree(made / "archives" / "flows", out / "flows")
        if good_archives:
            for archive in archives:
                shutil.copy(archive, out / archive.name)
        if truncated:  # the first archive cut to two thirds: a copy interrupted mid-way
            data = archives[0].read_bytes()
            (out / archives[0].name).write_bytes(data[: len(data) * 2 // 3])
        if flow_lost:  # archives of another flow, copied without that flow's stored file
            for archive in (made / "other").glob("*.jsonl.zst"):
                shutil.copy(archive, out / f"other-{archive.name}")
        if folders:
            for folder in (made / "folders").glob("call-*"):
                shutil.copytree(folder, out / folder.name)
        if garbage:
            broken = out / GARBAGE
            shutil.copytree(made / "folders" / "call-0000001", broken)
            journal = broken / "journal.jsonl"
            journal.write_text("{not a header\n" + journal.read_text().split("\n", 1)[1])
        return out

    return {
        "whole": corpus("whole", good_archives=True, folders=True),
        "flow_lost": corpus("flow_lost", good_archives=True, flow_lost=True),
        "truncated": corpus("truncated", truncated=True),
        "garbage": corpus("garbage", folders=True, garbage=True),
        "mixed": corpus("mixed", good_archives=True, folders=True, flow_lost=True, truncated=True, garbage=True),
        "none_readable": corpus("none_readable", flow_lost=True),
        "empty": corpus("empty"),
    }


# what each damage is named as: (the journal's name ends with, the reason holds)
FLOW_LOST = ("other-calls-0000000.jsonl.zst#1", "its stored flow flows/sha256-")
CUT_SHORT = ("calls-0000000.jsonl.zst", "unreadable after member")
NOT_A_HEADER = (GARBAGE, "line 1: invalid JSON at column 2; expected a header object")
DAMAGE = {"flow_lost": [FLOW_LOST], "truncated": [CUT_SHORT], "garbage": [NOT_A_HEADER],
          "mixed": [FLOW_LOST, CUT_SHORT, NOT_A_HEADER], "none_readable": [FLOW_LOST]}


def _run(command: str, corpus: Path, *more: str):
    return runner.invoke(app, [*COMMANDS[command][:2], str(corpus), *COMMANDS[command][2:], *more])


def _named(data: dict) -> list[dict]:
    """Every journal a JSON verdict names as not (wholly) counted, whatever the command."""
    return [entry for key in ("unreadable", "read_in_part", "not_replayed", "partly_replayed") for entry in data.get(key, [])]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_whole_corpus_is_a_whole_verdict_and_exits_0(corpora, command):
    result = _run(command, corpora["whole"], "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == {"sessions": 16, "of": 16, "of_at_least": False, "whole": True}
    assert _named(data) == [] and result.stderr == ""
    text = _run(command, corpora["whole"])
    assert text.exit_code == 0 and "not the whole corpus" not in text.output, text.output


@pytest.mark.parametrize("damage", ["flow_lost", "truncated", "garbage", "mixed"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_damaged_corpus_names_each_journal_and_why_and_exits_3(corpora, command, damage):
    result = _run(command, corpora[damage])
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    flat = " ".join(result.output.split())
    for journal, reason in DAMAGE[damage]:
        assert journal in flat and reason in flat, (journal, reason, result.output)
    assert "not the whole corpus" in flat

    as_json = _run(command, corpora[damage], "--json")
    assert as_json.exit_code == 3, as_json.output
    data = json.loads(as_json.stdout)  # stdout is JSON alone; the terminal is told on stderr
    named = _named(data)
    for journal, reason in DAMAGE[damage]:
        assert any(e["journal"].endswith(journal) and reason in e["reason"] for e in named), (journal, reason, named)
        assert journal in as_json.stderr and reason in " ".join(as_json.stderr.split())
    assert all(set(e) == {"journal", "reason"} or set(e) == {"journal", "reason", "rest_of_archive"} for e in named)
    # the rest of an archive cut short is not one journal: said so
    assert any(e.get("rest_of_archive") for e in named) == (damage in ("truncated", "mixed"))
    assert data["verdict"]["whole"] is False and data["sessions"] > 0
    # an archive cut short: how many journals its rest held cannot be known
    assert data["verdict"]["of_at_least"] == (damage in ("truncated", "mixed"))


@pytest.mark.parametrize("command", COMMANDS)
def test_none_of_the_corpus_readable_is_no_verdict_never_a_table_of_zeros(corpora, command):
    result = _run(command, corpora["none_readable"])
    assert result.exit_code == 3, result.output
    flat = " ".join(result.output.split())
    assert "no verdict: none of the 3 session(s) found could be" in flat
    assert "is missing" in flat and "other-calls-0000000.jsonl.zst#1" in flat
    for table in ("response time from", "Metrics over", "What-if over", "never reached"):
        assert table not in result.output
    data = json.loads(_run(command, corpora["none_readable"], "--json").stdout)
    assert data["sessions"] == 0 and data["verdict"] == {"sessions": 0, "of": 3, "of_at_least": False, "whole": False}
    assert len(_named(data)) == 3


@pytest.mark.parametrize("command", COMMANDS)
def test_nothing_to_read_exits_1_and_bad_arguments_2_in_one_line(corpora, command, tmp_path):
    empty = _run(command, corpora["empty"])
    assert empty.exit_code == 1 and "no session folders or archives" in empty.output
    assert len(empty.output.strip().splitlines()) == 1 and "Traceback" not in empty.output
    nowhere = _run(command, tmp_path / "nowhere")
    assert nowhere.exit_code == 2 and "no such" in nowhere.output
    assert len(nowhere.output.strip().splitlines()) == 1 and "Traceback" not in nowhere.output


@pytest.mark.parametrize("command", ["timing", "report"])
def test_csv_stays_csv_and_the_terminal_is_told_why_on_stderr(corpora, command):
    result = _run(command, corpora["flow_lost"], "--csv")
    assert result.exit_code == 3, result.output
    assert "is missing" not in result.stdout and "is missing" in result.stderr
    assert "other-calls-0000000.jsonl.zst#1" in result.stderr


def test_a_name_that_is_console_markup_is_printed_as_it_is(corpora):
    for command in COMMANDS:
        result = _run(command, corpora["garbage"])
        assert result.exit_code == 3 and GARBAGE in result.output, (command, result.output)


def test_the_reasons_survive_the_worker_processes(corpora):
    """Each journal's reason is carried back from the worker that read it: the same
    named journals, reasons and figures on two processes as in one."""
    mixed = [corpora["mixed"]]
    assert summary(corpus_timing(mixed, workers=2)) == summary(corpus_timing(mixed, workers=1))
    assert folder_metrics(mixed[0], workers=2).to_dict() == folder_metrics(mixed[0], workers=1).to_dict()
    assert coverage(mixed, workers=2).to_dict() == coverage(mixed, workers=1).to_dict()
    here = whatif_summary(corpus_whatif(mixed, Edit(), workers=1))
    assert whatif_summary(corpus_whatif(mixed, Edit(), workers=2)) == here
    assert any(e["journal"].endswith(GARBAGE) for e in here["not_replayed"])
    result = _run("replay --summary", corpora["mixed"], "--json", "--workers", "2")
    assert result.exit_code == 3 and json.loads(result.stdout) == here


def test_a_stored_flow_that_is_another_flows_is_not_called_missing(corpora, tmp_path):
    wrong = tmp_path / "wrong"
    shutil.copytree(corpora["flow_lost"], wrong)
    stored = next((wrong / "flows").iterdir())
    for archive in wrong.glob("other-*.jsonl.zst"):
        archive.unlink()
    # a stored flow by the right name holding another flow (a copy gone wrong)
    other = json.loads(stored.read_text())
    other["flow_document"] = {**other["flow_document"], "name": "not_that_one"}
    stored.write_text(json.dumps(other))
    data = json.loads(_run("timing", wrong, "--json").stdout)
    assert data["sessions"] == 0 and data["unreadable"]
    assert all("no stored flow matches" in e["reason"] and "holds another flow" in e["reason"] for e in data["unreadable"])


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_with_no_journal_is_named_not_skipped_in_silence(corpora, command, tmp_path):
    """A session folder whose journal is gone (and any other folder but an archive
    corpus's stored flows) is named on the terminal, beside --json on stderr; the verdict
    on the journals there is unchanged."""
    corpus = tmp_path / "corpus"
    shutil.copytree(corpora["whole"], corpus)
    (corpus / "call-0000002" / "journal.jsonl").unlink()
    (corpus / GARBAGE).mkdir()
    result = _run(command, corpus)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "2 folder(s) hold no journal.jsonl" in flat and f"{corpus / 'call-0000002'}" in flat
    assert GARBAGE in flat and "flows" not in flat.split("hold no journal.jsonl", 1)[1]
    as_json = _run(command, corpus, "--json")
    data = json.loads(as_json.stdout)
    assert data["verdict"] == {"sessions": 15, "of": 15, "of_at_least": False, "whole": True}
    assert "hold no journal.jsonl" in as_json.stderr and "call-0000002" in as_json.stderr
