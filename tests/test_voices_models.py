"""The voice edges against the real bundled models (piper joe, whisper tiny.en, Silero v6).

No mocks: these tests are the evidence that the models load offline and agree with each
other. Each model loads once per module. Run with -s to see WER and timing figures.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from voices.stt import (
    Recognition,
    RecognizerError,
    WhisperRecognizer,
    load_wav_16k,
    resample,
    word_error_rate,
)
from voices.tts import PiperVoice, VoiceError
from voices.vad import SileroVad, SpeechEvent, SpeechSegmenter

SR = 16_000

PROMPTS = [
    "Hello, this is the reference desk.",
    "This call may be recorded for quality and training purposes.",
    "What is your reference code?",
    "Take your time. Would you like more time, or shall I repeat the question?",
    "Sure, take your time.",
    (
        "I haven't received the reference code, so nothing has been changed. "
        "You can call back whenever you have it."
    ),
]

TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    t0 = time.perf_counter()
    v = PiperVoice(deterministic=True)
    TIMINGS["piper_load_s"] = time.perf_counter() - t0
    return v


@pytest.fixture(scope="module")
def whisper() -> WhisperRecognizer:
    t0 = time.perf_counter()
    w = WhisperRecognizer()
    TIMINGS["whisper_load_s"] = time.perf_counter() - t0
    return w


@pytest.fixture(scope="module")
def vad() -> SileroVad:
    return SileroVad()


def speak_16k(voice: PiperVoice, text: str) -> np.ndarray:
    return resample(voice.synthesize_all(text), voice.sample_rate, SR)


def low_noise(seconds: float, seed: int = 7, rms: float = 0.003) -> np.ndarray:
    # about -50 dBFS: a quiet room through a laptop microphone
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(int(seconds * SR)) * rms).astype(np.float32)


# --- piper ---------------------------------------------------------------------------


def test_piper_deterministic_is_bit_identical(voice: PiperVoice) -> None:
    a = voice.synthesize_all("What is your reference code?")
    b = voice.synthesize_all("What is your reference code?")
    assert a.dtype == np.float32 and a.ndim == 1 and a.size > voice.sample_rate // 2
    assert np.array_equal(a, b)


def test_sentences_split_and_keep_punctuation() -> None:
    assert PiperVoice.sentences("Hello there. How are you? Fine!") == [
        "Hello there.",
        "How are you?",
        "Fine!",
    ]
    assert PiperVoice.sentences("") == []
    assert PiperVoice.sentences("  \n ") == []
    assert PiperVoice.sentences("No end punctuation") == ["No end punctuation"]
    assert all(PiperVoice.sentences("Wait...  ok. ... Then.  "))


def test_synthesize_one_chunk_per_sentence(voice: PiperVoice) -> None:
    chunks = list(voice.synthesize("Hello there. How are you? Fine!"))
    assert len(chunks) == 3
    assert all(c.dtype == np.float32 and c.ndim == 1 and c.size > 0 for c in chunks)


def test_synthesize_stops_when_cancelled(voice: PiperVoice) -> None:
    got: list[np.ndarray] = []
    for chunk in voice.synthesize(
        "Hello there. How are you? Fine!", lambda: len(got) >= 1
    ):
        got.append(chunk)  # noqa: PERF402 - cancelled() reads `got` while iterating
    assert len(got) == 1
    assert list(voice.synthesize("Hello there. Fine!", lambda: True)) == []


def test_missing_voice_file_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nobody.onnx"
    with pytest.raises(VoiceError) as err:
        PiperVoice(missing)
    msg = str(err.value)
    assert str(missing) in msg and ".onnx.json" in msg and "\n" not in msg


def test_invalid_voice_files_give_voice_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(VoiceError, match="bad.onnx.json"):
        PiperVoice(bad)  # config missing
    (tmp_path / "bad.onnx.json").write_text("{not json")
    with pytest.raises(VoiceError, match="bad.onnx.json"):
        PiperVoice(bad)
    with pytest.raises(VoiceError, match="not an .onnx"):
        PiperVoice(tmp_path / "voice.wav")


# --- whisper -------------------------------------------------------------------------


def test_piper_round_trip_through_whisper(
    voice: PiperVoice, whisper: WhisperRecognizer
) -> None:
    failures = []
    print()
    for prompt in PROMPTS:
        rec = whisper.transcribe(speak_16k(voice, prompt))
        wer = word_error_rate(prompt, rec.text)
        print(
            f"  WER {wer:.3f}  decode {rec.decode_s:.2f}s  audio {rec.audio_s:.1f}s  {rec.text!r}"
        )
        assert rec.reason is None
        if wer > 0.1:
            failures.append((prompt, rec.text, wer))
    assert not failures, failures


@pytest.mark.parametrize(
    "audio",
    [np.zeros(2 * SR, dtype=np.float32), low_noise(2.0)],
    ids=["digital_silence", "low_white_noise"],
)
def test_whisper_empty_input(whisper: WhisperRecognizer, audio: np.ndarray) -> None:
    rec = whisper.transcribe(audio)
    assert isinstance(rec, Recognition)
    assert rec.reason == "recognizer_empty"
    assert rec.text == ""
    assert rec.audio_s == pytest.approx(2.0)


def test_whisper_noise_markers_count_as_empty() -> None:
    from voices.stt import clean_transcript

    for raw in [
        "[BLANK_AUDIO]",
        " (music) ",
        "...",
        "♪",
        "*coughs*",
        "[ Silence ] ...",
    ]:
        assert clean_transcript(raw) == "", raw
    assert clean_transcript("(laughs) Yes, it is 4821.") == "Yes, it is 4821."


def test_unknown_whisper_model_fails_fast(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import huggingface_hub.constants

    # An empty cache, so that a real size name cannot be found even on a machine that
    # happens to have it cached: this is the "not available offline" path.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    for name in ["base.en", "no-such-model"]:
        t0 = time.perf_counter()
        with pytest.raises(RecognizerError) as err:
            WhisperRecognizer(name)
        assert time.perf_counter() - t0 < 10
        assert name in str(err.value) and "offline" in str(err.value)
        assert "\n" not in str(err.value)
    with pytest.raises(RecognizerError, match="not found"):
        WhisperRecognizer(tmp_path / "missing-model-dir")


def test_load_wav_16k_resamples_and_downmixes(tmp_path: Path) -> None:
    import soundfile

    t = np.arange(22050) / 22050
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    stereo = np.stack([tone, tone], axis=1).astype(np.float32)
    path = tmp_path / "tone.wav"
    soundfile.write(path, stereo, 22050)
    x = load_wav_16k(path)
    assert x.dtype == np.float32 and x.ndim == 1
    assert abs(x.shape[0] - SR) <= 1
    ref = 0.5 * np.sin(2 * np.pi * 440 * np.arange(x.shape[0]) / SR)
    # int16 file quantisation dominates the error away from the edges
    assert np.max(np.abs(x[800:-800] - ref[800:-800])) < 2e-3
    bad = tmp_path / "not_audio.wav"
    bad.write_text("hello")
    with pytest.raises(ValueError, match="not_audio.wav"):
        load_wav_16k(bad)


def test_word_error_rate() -> None:
    assert word_error_rate("four eight two one", "4 8 2 1") == 0.0
    assert word_error_rate("four eight two one", "4821") == 0.0
    assert (
        word_error_rate(
            "Hello, this is the reference desk.", "hello this is the reference desk"
        )
        == 0.0
    )
    assert word_error_rate("I haven't got it", "i havent got it") == 0.0
    assert word_error_rate("one two three four", "one two four") == pytest.approx(0.25)
    assert word_error_rate("one two", "one two three four") == pytest.approx(1.0)
    assert word_error_rate("yes", "no") == 1.0
    assert word_error_rate("", "") == 0.0
    assert word_error_rate("", "something") == 1.0


# --- VAD -----------------------------------------------------------------------------


def test_vad_stream_matches_faster_whisper_batch(
    vad: SileroVad, voice: PiperVoice
) -> None:
    from faster_whisper.vad import get_vad_model

    speech = speak_16k(voice, "What is your reference code?")
    x = np.concatenate([low_noise(0.5), speech, low_noise(0.5, seed=3)])
    x = x[: x.shape[0] // SileroVad.FRAME * SileroVad.FRAME]
    batch = get_vad_model()(x.copy()).reshape(-1)
    vad.reset()
    stream = np.array(
        [
            vad.probability(x[i : i + SileroVad.FRAME])
            for i in range(0, x.shape[0], SileroVad.FRAME)
        ]
    )
    # Same graph, state and context: only float rounding of batched vs single rows differs.
    assert np.max(np.abs(batch - stream)) < 0.01
    vad.reset()
    first = vad.probability(x[: SileroVad.FRAME])
    assert first == pytest.approx(stream[0])
    with pytest.raises(ValueError):
        vad.probability(x[:100])


def _events_of(
    segmenter: SpeechSegmenter, x: np.ndarray, piece: int | None
) -> list[SpeechEvent]:
    segmenter.reset()
    if piece is None:
        return segmenter.feed(x, 0.0)
    events: list[SpeechEvent] = []
    for i in range(0, x.shape[0], piece):
        events += segmenter.feed(x[i : i + piece], i * 1000.0 / SR)
    return events


def test_segmenter_on_speech(vad: SileroVad, voice: PiperVoice) -> None:
    speech = speak_16k(
        voice,
        "Take your time. Would you like more time, or shall I repeat the question?",
    )
    loud = np.flatnonzero(np.abs(speech) > 0.02)
    onset_ms = (SR + loud[0]) * 1000.0 / SR
    offset_ms = (SR + loud[-1]) * 1000.0 / SR
    x = np.concatenate([np.zeros(SR, np.float32), speech, np.zeros(SR, np.float32)])
    seg = SpeechSegmenter(vad, end_of_speech_ms=700)

    events = _events_of(seg, x, None)
    assert [e.kind for e in events] == ["speech_started", "speech_ended"]
    started, ended = events
    assert 0 <= started.t_ms - onset_ms <= 300
    assert started.audio is None
    # ended: the hold (700 ms) after the offset, give or take VAD lag and one frame
    assert 600 <= ended.t_ms - offset_ms <= 950, (ended.t_ms, offset_ms)
    assert ended.audio is not None and ended.speech_start_ms is not None
    # the utterance audio starts ~200 ms before the detected onset and covers the speech
    assert ended.audio.shape[0] >= speech.shape[0] * 0.95
    utterance_start_ms = ended.speech_start_ms - seg.pre_roll_ms
    assert abs(utterance_start_ms - (onset_ms - 200)) < 300

    # fed in 100-sample pieces: the same events and the same utterance audio
    pieces = _events_of(seg, x, 100)
    assert pieces == events
    assert np.array_equal(pieces[1].audio, ended.audio)

    # a shorter hold ends sooner (the per-stage end_of_speech is set at runtime)
    seg.end_of_speech_ms = 300
    short = _events_of(seg, x, 1600)
    assert [e.kind for e in short] == ["speech_started", "speech_ended"]
    assert short[1].t_ms < ended.t_ms - 300


@pytest.mark.parametrize(
    "audio",
    [np.zeros(3 * SR, dtype=np.float32), low_noise(3.0)],
    ids=["silence", "low_noise"],
)
def test_segmenter_quiet_gives_no_events(vad: SileroVad, audio: np.ndarray) -> None:
    seg = SpeechSegmenter(vad)
    assert _events_of(seg, audio, None) == []
    assert _events_of(seg, audio, 100) == []


def test_level_dbfs(vad: SileroVad) -> None:
    seg = SpeechSegmenter(vad)
    seg.feed(np.zeros(SileroVad.FRAME, np.float32), 0.0)
    assert seg.level_dbfs == -120.0
    seg.feed(np.full(SileroVad.FRAME, 0.1, np.float32), 32.0)
    assert seg.level_dbfs == pytest.approx(-20.0, abs=0.01)
    seg.feed(np.full(100, 1.0, np.float32), 64.0)  # not a whole frame yet: unchanged
    assert seg.level_dbfs == pytest.approx(-20.0, abs=0.01)


# --- measurements --------------------------------------------------------------------


def test_measurements(
    voice: PiperVoice, whisper: WhisperRecognizer, vad: SileroVad
) -> None:
    """Print the figures the design quotes (no thresholds: machines differ)."""
    t0 = time.perf_counter()
    first = next(iter(voice.synthesize("What is your reference code?")))
    first_chunk_s = time.perf_counter() - t0
    assert first.size > 0

    t0 = time.perf_counter()
    long_text = "This call may be recorded for quality and training purposes."
    audio = voice.synthesize_all(long_text)
    rtf = (time.perf_counter() - t0) / (audio.shape[0] / voice.sample_rate)

    three = speak_16k(voice, "Please say your reference code, one digit at a time.")
    three = np.concatenate(
        [three, np.zeros(max(0, 3 * SR - three.shape[0]), np.float32)]
    )[: 3 * SR]
    whisper.transcribe(three)  # warm-up
    decodes = [whisper.transcribe(three).decode_s for _ in range(3)]

    frames = low_noise(10.0)
    frames = frames[: frames.shape[0] // SileroVad.FRAME * SileroVad.FRAME].reshape(
        -1, SileroVad.FRAME
    )
    vad.reset()
    t0 = time.perf_counter()
    for f in frames:
        vad.probability(f)
    vad_ms = (time.perf_counter() - t0) * 1000 / frames.shape[0]

    print()
    print(f"  piper load            {TIMINGS.get('piper_load_s', float('nan')):.2f} s")
    print(
        f"  piper first chunk     {first_chunk_s:.3f} s  ('What is your reference code?')"
    )
    print(f"  piper real-time factor {rtf:.3f}")
    print(
        f"  whisper load          {TIMINGS.get('whisper_load_s', float('nan')):.2f} s"
    )
    print(f"  whisper decode (3 s)  {min(decodes):.2f}-{max(decodes):.2f} s")
    print(f"  Silero VAD            {vad_ms:.3f} ms per 512-sample frame")


def test_a_sentence_said_before_is_said_again_from_memory_but_never_a_value(loaded_models):
    voice = loaded_models.voice
    first = list(voice.synthesize("Thanks. What is the next code, please?"))
    again = list(voice.synthesize("Thanks. What is the next code, please?"))
    assert [len(c) for c in first] == [len(c) for c in again] and all((a == b).all() for a, b in zip(first, again))
    again[0][:] = 0.0  # what a caller does to its chunk does not reach the kept audio
    assert (list(voice.synthesize("Thanks."))[0] == first[0]).all()
    voice.synthesize_all("I heard 4 8 2 1. Is that right?")
    assert "I heard 4 8 2 1." not in voice._said and "Is that right?" in voice._said  # a value is not kept
