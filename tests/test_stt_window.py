"""Whisper's short encoder window for a pending code or yes/no: when it is used, when a
decode is done again with the full window, and the paused code it once misread."""

import asyncio

import numpy as np
import pytest
from voices.stt import SHORT_ANSWER_DECODE, _repeats, _same_reading, _token_limit


@pytest.mark.parametrize(
    "text, repeats",
    [
        ("Yes? Yes? Yes?", True),
        ("60157 60157", True),
        ("Can I speak to a person? Can I speak to", True),  # the last copy cut short
        ("868 887 868 887 868 887 887 868 887 8", True),  # a loop that drifts
        ("1 1 1 1", True),  # a caller can say this: the full window reads it again
        ("4 8 2 1", False),
        ("2 9 3 4 0", False),
        ("Yes, that's right.", False),
        ("No, it's 9 9 1 2.", False),
        ("the code is 4 8 4 8", False),
        ("yes", False),
        ("yes yes", False),  # one word again is how people say yes
        ("no it's 9 no", False),
        ("", False),
    ],
)
def test_a_decode_that_says_a_phrase_over_again_is_a_repeat(text, repeats):
    assert _repeats(text) is repeats


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("29, 340", "2 9 3 4 0", True),  # spacing and punctuation
        ("to 9, 3 4 0", "29, 3 4 0", True),  # the same digits as the agent reads them
        ("Yes, that's right.", "yes that's right", True),
        ("29, 340, 0", "29, 340", False),  # one window added a digit
        ("no, 4 8 2 2", "4 8 2 2", False),  # one dropped the "no"
        ("yes", "yeah", False),
        ("the code is 4821", "4821", True),
    ],
)
def test_two_windows_agree_when_the_agent_would_read_them_alike(a, b, same):
    assert _same_reading(a, b) is same


def test_the_token_limit_leaves_room_for_fast_speech():
    # about 4 tokens a second in speech; the limit is more than twice that
    assert _token_limit(1.0) >= 2 * 4 + 8
    assert _token_limit(6.0) > 2 * 4 * 6


class _Recognizer:
    """Records the options of each decode; returns the digits it is told to."""

    def __init__(self):
        self.calls = []

    def transcribe(self, audio, **options):
        from voices.stt import Recognition

        self.calls.append(options)
        return Recognition("4 8 2 1", None, 1.0, 0.1, 1.0)


def test_a_pending_code_or_yes_no_gets_the_short_window_and_a_request_the_full_one_told():
    from voices.backends.voice import TurnLatency, VoiceBackend, VoiceModels
    from ladder.flow.spec import Slot
    from test_voice_backend import FakeVoice, start

    async def body():
        recognizer = _Recognizer()
        backend = VoiceBackend(VoiceModels(FakeVoice(), recognizer, matcher_kind="lexical"), name="fake")
        session, _ = await start(backend)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while session.runtime.ladder.pending_episode is None:  # the code question is asked
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        # a code is not told the question first (it cost the codes: recogniser_context)
        assert backend._decode_options() == SHORT_ANSWER_DECODE
        backend._recognize("heard-1", 1, np.zeros(16000, np.float32), TurnLatency("heard-1", 0.0), backend._decode_options())
        await asyncio.sleep(0.05)
        assert recognizer.calls[-1] == SHORT_ANSWER_DECODE
        assert session.runtime.asking[1] == "confirm_code"  # the code was taken: now a yes or no
        while session.runtime.ladder.pending_episode is None:
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        # a yes/no keeps the short windows, told the question first
        confirm = backend._decode_options()
        assert {k: v for k, v in confirm.items() if k != "initial_prompt"} == SHORT_ANSWER_DECODE
        assert "initial_prompt" in confirm
        # words for a free-text slot, or with no question pending: the full window, told
        # what callers say between answers first
        backend._pending_slot = lambda: (Slot(type="text"), "", 250, 2500)
        assert set(backend._decode_options()) == {"initial_prompt"}
        backend._pending_slot = lambda: None
        assert set(backend._decode_options()) == {"initial_prompt"}
        await session.stop()

    asyncio.run(body())


@pytest.fixture(scope="module")
def models(lexical_models):
    return lexical_models  # loaded once for the run (conftest)


def test_a_code_said_in_two_parts_reads_whole_in_the_short_window(models):
    """The case that kept the short window off: two digits, 1.2 s of silence, three more."""
    from file_caller import speech

    from ladder.flow.understanding.text import parse_digits

    def silence(seconds):
        return np.zeros(int(seconds * 16000), np.float32)

    audio = np.concatenate([silence(0.3), speech(models, "two nine"), silence(1.2), speech(models, "three four zero"), silence(0.25)])
    heard = models.recognizer.transcribe(audio, **SHORT_ANSWER_DECODE)
    assert parse_digits(heard.text) == "29340", heard.raw_text


def test_bench_stt_measures_every_variant_on_the_same_callers(models):
    from voices.stt_bench import IN_USE, SHORT, TOLD_FIRST, all_variants, make_callers, run_stt_bench

    callers = make_callers(models.voice, codes=4, answers=2)
    again = make_callers(models.voice, codes=4, answers=2)
    assert all(np.array_equal(a, b) and t == u for (a, t, _), (b, u, _) in zip(callers, again, strict=True))  # one seed
    # the two windows in use and the told one: each decode is real, so not all ten here
    chosen = {name: all_variants()[name] for name in (IN_USE, SHORT, TOLD_FIRST)}
    result = run_stt_bench(models.recognizer, models.voice, codes=4, answers=2, variants=chosen)
    counts = result["callers"]
    assert counts["digits"] == 4 and counts["words"] > 0 and counts["yes_no"] > 0 and sum(counts.values()) == len(callers)
    assert set(result["variants"]) == set(chosen)
    for row in result["variants"].values():
        assert 0 <= row["digits_right"] <= 4 and row["median_ms"] > 0
        assert len(row["misses"]) == len(callers) - row["digits_right"] - row["words_right"] - row["yes_no_right"]
    # the full window reads these clean synthetic callers nearly all right
    assert result["variants"][IN_USE]["digits_right"] >= 3


def test_bench_stt_on_human_codes_whole_and_cut_at_each_pause(models):
    from voices.line.pstn import LineSettings
    from voices.stt_bench import IN_USE, SHORT, all_variants, human_callers, run_stt_bench

    callers = human_callers(codes=1)
    # the code whole and cut after each digit: what a pause's early decode gets
    assert [said for _, said, _ in callers] == [callers[3][1][:n] for n in range(1, 5)]
    assert all(kind == "digits" for *_, kind in callers)
    lined = human_callers(codes=1, line=LineSettings())
    assert len(lined) == 4 and not np.array_equal(lined[3][0], callers[3][0])  # heard through the line
    chosen = {name: all_variants()[name] for name in (IN_USE, SHORT)}
    result = run_stt_bench(models.recognizer, models.voice, codes=1, caller="human", line=LineSettings(), variants=chosen)
    assert result["callers"] == {"digits": 4, "words": 0, "yes_no": 0} and result["line"]["kind"] == "pstn"
    assert set(result["variants"]) == set(chosen)
    for row in result["variants"].values():
        assert row["yes_no_median_ms"] is None and row["mean_ms"] > 0
        assert len(row["misses"]) == 4 - row["digits_right"]
    # the human digits down the line: the full window reads most of them
    assert result["variants"][IN_USE]["digits_right"] >= 3


def _scripted_recognizer(readings: dict):
    """A WhisperRecognizer whose decodes return `readings[window_s]` (text), no model."""
    import concurrent.futures
    import threading

    from voices.stt import DECODE_OPTIONS, WhisperRecognizer

    recognizer = object.__new__(WhisperRecognizer)
    recognizer._lock = threading.Lock()
    recognizer._checker = concurrent.futures.ThreadPoolExecutor(1)
    recognizer.options = dict(DECODE_OPTIONS)
    recognizer.short_window_s = None
    recognizer.windows = []

    recognizer.penalties = {}

    def decode(x, window_s, options):
        recognizer.windows.append(window_s)
        recognizer.penalties[window_s] = options.get("repetition_penalty")
        text = readings[window_s]
        return text, None, len(text.split())

    recognizer._decode = decode
    return recognizer


@pytest.mark.parametrize(
    "readings, heard, windows",
    [
        # the two short windows agree: no third decode
        ({8.0: "4 8 2 1", 10.0: "4821"}, "4 8 2 1", {8.0, 10.0}),
        # one loops, the tie-break reads as the other did: the full window is not asked
        ({8.0: "926 8 926 8 926 8 926 8 926 8", 10.0: "926 8", 12.0: "9268", None: "926-8"}, "9268", {8.0, 10.0, 12.0}),
        # one misheard a word, the tie-break reads as the other
        ({8.0: "Two zero. Eight sick.", 10.0: "Two zero. Eight six.", 12.0: "two zero eight six", None: "x"},
         "two zero eight six", {8.0, 10.0, 12.0}),
        # three readings, no two alike: the full window decides
        ({8.0: "4 8 2 1", 10.0: "4 8 2", 12.0: "4 8 2 1 1", None: "four eight two one"}, "four eight two one",
         {8.0, 10.0, 12.0, None}),
        # the tie-break agrees only with a reading that looped: not trusted
        ({8.0: "5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5", 10.0: "5 5 4", 12.0: "5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5", None: "5 5 4 1"},
         "5 5 4 1", {8.0, 10.0, 12.0, None}),
    ],
)
def test_a_third_short_window_breaks_a_tie_before_the_full_window(readings, heard, windows):
    recognizer = _scripted_recognizer(readings)
    audio = np.zeros(16000 * 2, np.float32)
    assert recognizer.transcribe(audio, **SHORT_ANSWER_DECODE).text == heard
    assert set(recognizer.windows) == windows


def test_without_a_tie_break_a_disagreement_goes_to_the_full_window():
    recognizer = _scripted_recognizer({8.0: "4 8 2 1", 10.0: "4 8 2", None: "4821"})
    heard = recognizer.transcribe(np.zeros(32000, np.float32), **{**SHORT_ANSWER_DECODE, "tiebreak_window_s": None})
    assert heard.text == "4821" and set(recognizer.windows) == {8.0, 10.0, None}


def test_a_decode_no_longer_wanted_stops_before_its_further_windows():
    # the caller went on past the pause these words were for: the two short windows
    # disagree, and neither the tie-break nor the full window is decoded
    recognizer = _scripted_recognizer({8.0: "2, 3.", 10.0: "2, 3, 2, 3, 2, 3, 2, 3", 12.0: "2 3", None: "Two, three."})
    heard = recognizer.transcribe(np.zeros(32000, np.float32), abandon=lambda: True, **SHORT_ANSWER_DECODE)
    assert (heard.text, heard.reason) == ("", "abandoned")
    assert set(recognizer.windows) == {8.0, 10.0}


def test_a_decode_still_wanted_goes_on_to_its_tie_break():
    recognizer = _scripted_recognizer({8.0: "2, 3.", 10.0: "2, 3, 2, 3, 2, 3, 2, 3", 12.0: "2 3", None: "Two, three."})
    heard = recognizer.transcribe(np.zeros(32000, np.float32), abandon=lambda: False, **SHORT_ANSWER_DECODE)
    assert heard.text == "2 3" and set(recognizer.windows) == {8.0, 10.0, 12.0}


def test_the_first_two_short_windows_are_penalised_for_repeating_and_the_others_not():
    # the penalty stops a short window's loops on a phone line; the tie-break and the full
    # window decode without it, so a caller's own "5 1 1 1" has windows not leaning against it
    recognizer = _scripted_recognizer({8.0: "5 1 1", 10.0: "5 1 1 1", 12.0: "5 4 1 1", None: "5 1 1 1"})
    heard = recognizer.transcribe(np.zeros(32000, np.float32), **SHORT_ANSWER_DECODE)
    assert heard.text == "5 1 1 1"
    assert recognizer.penalties == {8.0: 1.05, 10.0: 1.05, 12.0: None, None: None}
