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
    assert total.sessions == 1 and len(total.unreadable) == 1
    assert total.unreadable[0].journal.endswith("broken") and total.unreadable[0].reason.startswith("line 1: invalid JSON")


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


def incident_session(name: str, folder: Path):
    from sessions.incidents import VirtualRun, library_paths, load_incident, prompt_counts

    run = VirtualRun(load_incident(next(p for p in library_paths() if p.stem == name)))
    run.run()
    run.write_journal(folder / name)
    return session_metrics(folder / name), prompt_counts(run)


def test_a_stage_is_reached_only_when_its_prompt_played(tmp_path):
    # the gentle check was requested, but the caller spoke before it started playing
    m, counts = incident_session("reminder_then_resume", tmp_path)
    assert m.prompts["reminder"]["requested"] == 1 and m.prompts["reminder"]["cancelled_before_playback"] == 1
    assert m.reached["gentle_check"] == 0 and m.resumed_after["gentle_check"] == 0
    assert not any(metric.startswith("caller resumed after") for metric, *_ in m.rows())


def test_a_backchannel_or_noise_is_not_a_resumption(tmp_path):
    m, _ = incident_session("backchannel_keeps_window", tmp_path)
    assert m.reached["gentle_check"] == 1  # the check played
    assert m.resumed_after["gentle_check"] == 0  # "mm-hmm" after it is not the caller coming back
    m, _ = incident_session("noise_bursts_cannot_silence_the_ladder", tmp_path)
    assert m.reached["gentle_check"] == 1 and m.resumed_after["gentle_check"] == 0


def test_a_late_completion_is_counted_the_same_by_incidents_and_the_report(tmp_path):
    m, counts = incident_session("late_playback_completion_is_counted_once", tmp_path)
    assert dict(m.prompts["question"]) == {"requested": 1, "started": 1, "completed": 1, "completed_late": 1}
    assert counts["completed"] == 1 and counts["completed_late"] == 1
    rows = {metric: (count, denominator) for metric, count, denominator, _ in m.rows()}
    assert rows["prompts question: completed late"] == (1, 1)


def test_incidents_and_the_report_agree_on_every_library_incident(tmp_path):
    from sessions.incidents import library_paths

    for path in library_paths():
        m, counts = incident_session(path.stem, tmp_path)
        assert m.skipped_lines == 0, path.stem  # every record a session writes reads back
        report = {
            "requested": sum(c["requested"] for c in m.prompts.values()),
            "started": sum(c["started"] for c in m.prompts.values()),
            "completed": sum(c["completed"] for c in m.prompts.values()),
            "completed_late": sum(c["completed_late"] for c in m.prompts.values()),
            "cancelled": sum(c["cancelled_before_playback"] for c in m.prompts.values()),
            "interrupted": sum(c["interrupted"] for c in m.prompts.values()),
        }
        assert report == counts, path.stem
