"""A framework's whisper reads the caller's turn so far, not each VAD segment alone
(issue 50): a real caller pausing between the digits of a code, cut at every pause as
Pipecat's and LiveKit's VADs cut it, is read as the code said, and each segment's words
after the first replace the turn's earlier ones (`voices.stt.TurnSoFar`).

Before, each segment was decoded alone, and `lull bench turn --caller human` heard
"4 4 2 1" (Pipecat) and "4 4 1 3" (LiveKit) for this code in every run."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from ladder.flow.understanding.text import parse_digits
from voices.stt import SHORT_ANSWER_DECODE
from voices.turn_bench import human_turns

RATE = 16000


def _segments_at_pauses(audio: np.ndarray, quiet_ms: int = 100) -> list[np.ndarray]:
    """`audio` cut in the middle of every pause of `quiet_ms` or more (20 ms frames far
    quieter than the words), one segment after another, as a framework's VAD cuts it."""
    frame = RATE // 50
    rms = np.sqrt(np.mean(audio[: audio.size // frame * frame].reshape(-1, frame) ** 2, axis=1))
    quiet = rms < rms.max() * 0.02
    cuts, i = [], 0
    while i < quiet.size:
        if quiet[i]:
            j = i
            while j < quiet.size and quiet[j]:
                j += 1
            if (j - i) * 20 >= quiet_ms and i > 0 and j < quiet.size:
                cuts.append((i + j) // 2 * frame)
            i = j
        else:
            i += 1
    bounds = [0, *cuts, audio.size]
    return [audio[a:b] for a, b in zip(bounds, bounds[1:])]


@pytest.fixture(scope="module")
def paused_code():
    """The human caller's first code (4 2 1 3, one speaker, 150-450 ms between the
    words) over a faint noise floor, and its segments."""
    turn = human_turns()[0]
    noise = np.random.default_rng(0).standard_normal(turn["audio"].size).astype(np.float32) * 3e-4
    audio = (turn["audio"] + noise).astype(np.float32)
    segments = _segments_at_pauses(audio)
    assert len(segments) == 4, "a segment a digit"
    return parse_digits(turn["said"]), segments


def test_pipecats_whisper_reads_the_turn_so_far_at_each_segment(loaded_models, paused_code):
    pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
    from pipecat.frames.frames import TranscriptionFrame

    from voices.pipecat.frames import TurnTranscriptionFrame
    from voices.pipecat.services import LullWhisperSTT

    code, segments = paused_code
    stt = LullWhisperSTT(loaded_models.recognizer, options=lambda: dict(SHORT_ANSWER_DECODE), whole_turn=True)
    pad = np.zeros(int(0.5 * RATE), np.int16).tobytes()  # Pipecat's trailing silence

    async def heard() -> list:
        frames = []
        for segment in segments:
            pcm = (np.clip(segment, -1, 1) * 32767).astype(np.int16).tobytes() + pad
            frames += [f async for f in stt.run_stt(pcm) if isinstance(f, TranscriptionFrame)]
        return frames

    frames = asyncio.run(heard())
    assert [d["segments"] for d in stt.decodes] == [1, 2, 3, 4]
    assert frames and not isinstance(frames[0], TurnTranscriptionFrame)  # a first segment's words are the turn's
    assert all(isinstance(f, TurnTranscriptionFrame) for f in frames[1:])
    assert parse_digits(frames[-1].text) == code, [f.text for f in frames]


def test_livekits_whisper_reads_the_turn_so_far_joined_where_each_utterance_repeats(loaded_models, paused_code):
    pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")
    from livekit import rtc
    from livekit.agents import APIConnectOptions

    from voices.livekit.plugins import LullWhisperSTT

    code, segments = paused_code
    stt = LullWhisperSTT(loaded_models.recognizer, options=lambda: dict(SHORT_ANSWER_DECODE), whole_turn=True)
    stream = np.concatenate(segments)
    prefix = int(0.5 * RATE)  # LiveKit's VAD hands each utterance with the half second before it

    async def heard() -> list[str]:
        texts, at = [], 0
        for segment in segments:
            start = max(0, at - prefix)
            pcm = (np.clip(stream[start : at + segment.size], -1, 1) * 32767).astype(np.int16)
            frame = rtc.AudioFrame(pcm.tobytes(), RATE, 1, pcm.size)
            event = await stt._recognize_impl(frame, conn_options=APIConnectOptions())
            texts.append(event.alternatives[0].text)
            at += segment.size
        return texts

    texts = asyncio.run(heard())
    # the turn's audio is the stream once: each utterance joined where its repeat ends
    assert [d["audio_s"] for d in stt.decodes][-1] <= stream.size / RATE + 0.01
    assert parse_digits(texts[-1]) == code, texts
    assert not stt.continues_turn(texts[0]) and stt.continues_turn(texts[-1])
    stt.turn_ended()
    assert stt._turn is not None and len(stt._turn) == 0
