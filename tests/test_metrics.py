"""Metrics (S5) on hand-checked sessions: every count asserted exactly."""

from pathlib import Path

from sessions.metrics import folder_metrics, session_metrics
from sessions.scenarios import load_scenario, run_scenario

SCENARIOS = Path(__file__).parent / "scenarios"


def record(name: str, folder: Path) -> Path:
    path = SCENARIOS / f"{name}.json"
    run_scenario(load_scenario(path), path, record_to=folder / name)
    return folder / name


def test_the_hold_then_answer_session_counts_exactly(tmp_path):
    # hand-checked against the scenario: greeting, disclosure, the code question,
    # "give me a moment" (acknowledged once), "hang on let me look" (not acknowledged),
    # the code, the confirmation question, "yes", the lookup (its "let me look that up"
    # already tells the caller to wait, and the tool answers before 1.5 s of silence, so
    # no filler), the close
    m = session_metrics(record("default_hold_then_answer", tmp_path))
    assert m.sessions == 1 and m.skipped_lines == 0
    assert {k: dict(v) for k, v in m.prompts.items()} == {
        "statement": {"requested": 4, "started": 4, "completed": 4},
        "question": {"requested": 2, "started": 2, "completed": 2},
        "acknowledgement": {"requested": 1, "started": 1, "completed": 1},
    }
    assert m.episodes == 2
    assert dict(m.outcomes) == {"explicit_wait": 1, "answered": 1}
    assert m.explicit_waits == 2 and m.episodes_with_hold == 1
    assert dict(m.sequences) == {"question > acknowledgement": 1, "question": 1}
    assert dict(m.session_outcomes) == {"completed": 1}


def test_resumption_is_counted_against_the_episodes_that_reached_the_stage(tmp_path):
    m = session_metrics(record("silence_reprompts_once_per_silence", tmp_path))
    assert m.reached["gentle_check"] == 1
    assert m.resumed_after["gentle_check"] == 1  # the caller spoke after the reprompt
    rows = {metric: (count, denominator) for metric, count, denominator, _ in m.rows()}
    assert rows["caller resumed after gentle_check"] == (1, 1)


def test_a_folder_adds_up_its_sessions_on_every_core_and_labels_nothing_sensitive(tmp_path):
    for name in ("default_hold_then_answer", "default_silence_to_safe_close", "redacted_keys_stay_out_of_the_journal"):
        record(name, tmp_path)
    total = folder_metrics(tmp_path, workers=2)
    assert total.sessions == 3
    assert total.prompts["reminder"]["requested"] == 2  # only the silent call got reminders
    assert dict(total.session_outcomes) == {"completed": 2, "closed_incomplete": 1}
    labels = " ".join(metric for metric, *_ in total.rows()) + " ".join(total.sequences)
    assert "4821" not in labels and "reference code" not in labels.lower()
    assert "reference_code" not in labels  # question ids are not labels either


def test_an_unreadable_journal_is_counted_not_fatal(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "journal.jsonl").write_text("not json\n")
    record("default_answer_at_once", tmp_path)
    total = folder_metrics(tmp_path, workers=1)
    assert total.sessions == 1 and total.unreadable == 1


def test_many_sessions_stream_through_the_pool_with_exact_totals(tmp_path):
    import os

    base = record("default_hold_then_answer", tmp_path / "base")
    many = tmp_path / "many"
    many.mkdir()
    for i in range(300):
        (many / f"s{i}").mkdir()
        os.link(base / "journal.jsonl", many / f"s{i}" / "journal.jsonl")
    one = session_metrics(base)
    total = folder_metrics(many, workers=2)
    assert total.sessions == 300
    assert total.episodes == 300 * one.episodes
    assert total.prompts["question"]["requested"] == 300 * one.prompts["question"]["requested"]
