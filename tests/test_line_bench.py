"""The line's benches (`lull bench stt --line`, `lull bench turn --line`): what they count
as a code read right and as a caller cut mid-number, and a small run of the listening
bench with the real models, wideband beside the line."""

from __future__ import annotations

import pytest

from voices.backends.line_bench import cut_mid_number, digits_read
from voices.line.pstn import LineSettings


def test_a_code_is_read_right_when_its_digits_are_the_ones_said():
    said = ["four eight two one", "go forward ten meters", "two zero eight six"]
    answers = [True, False, True]
    read = digits_read(["4 8 2 1", "Go for 10 meters.", "2008 6"], said, answers)
    assert read == {"right": 1, "of": 2, "misread": ["'two zero eight six' heard as '2008 6'"]}
    # heard in more parts than said: no turn-by-turn reading to compare
    assert digits_read(["4 8 2 1", "go", "2 0", "8 6"], said, answers)["right"] is None


def test_a_caller_is_cut_mid_number_when_a_turn_holds_part_of_a_code():
    answers = [True, False, True]
    assert cut_mid_number(["4 8 2 1", "go for 10 meters", "2 0 8 6"], answers) == []
    assert cut_mid_number(["4 8 2 1", "go for 10 meters", "2 0"], answers) == ["2 0"]
    assert cut_mid_number(["4 8 2 1", "go", "2 0", "8 6"], answers) == ["2 0", "8 6"]  # one answer heard as two turns


@pytest.fixture(scope="module")
def models(loaded_models):
    return loaded_models  # loaded once for the run (conftest)


def test_the_listening_bench_hears_the_same_callers_wideband_and_on_the_line(models):
    from voices.line.bench import run_line_listen_bench

    result = run_line_listen_bench(models, LineSettings(seed=2), codes=1, answers=1, noise_seconds=5.0, full_window=False)
    assert result["callers"] == {"digits": 1, "words": 1, "yes_no": 1}
    for by in result["whisper"].values():
        assert set(by) == {"wideband", "line"} and all(row["median_ms"] > 0 for row in by.values())
    for channel in ("wideband", "line"):
        assert result["vad"][channel]["not_heard"] == 0
        assert sum(result["segments_against_parts_said"][channel].values()) == 3
    assert set(result["noise_only_speech_started_per_minute"]) == {"-45 dBFS", "-35 dBFS", "-30 dBFS"}
    assert result["line"]["seed"] == 2
