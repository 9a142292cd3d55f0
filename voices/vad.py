"""Streaming speech activity from the Silero VAD that faster-whisper ships (design V2).

`SileroVad` runs the ONNX model one 512-sample frame (32 ms at 16 kHz) at a time and
carries the recurrent state (h, c) and the 64-sample context across calls, exactly as
faster-whisper's own batch runner does internally; so probabilities from the stream
equal those from one batch call over the same audio.

`SpeechSegmenter` turns frame probabilities into two events, ``speech_started`` and
``speech_ended``, with the end-of-speech hold settable per ladder stage.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

SAMPLE_RATE = 16_000


def default_vad_path() -> Path:
    """Where faster-whisper keeps its Silero VAD v6 model."""
    import faster_whisper

    return Path(faster_whisper.__file__).parent / "assets" / "silero_vad_v6.onnx"


class SileroVad:
    """Silero VAD v6 as a stream of 512-sample frames at 16 kHz."""

    FRAME = 512
    # faster-whisper's v6 graph takes 576 samples per row: the last 64 samples of the
    # previous frame, then the frame itself (see faster_whisper/vad.py).
    CONTEXT = 64
    STATE_SIZE = 128

    def __init__(self, model_path: Path | None = None) -> None:
        import onnxruntime

        self.model_path = (
            Path(model_path) if model_path is not None else default_vad_path()
        )
        if not self.model_path.is_file():
            raise FileNotFoundError(f"Silero VAD model not found: {self.model_path}")
        opts = onnxruntime.SessionOptions()
        # One frame is ~0.1 ms of work; extra threads only add wake-up cost and would
        # compete with whisper/piper on a 2-core machine.
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 4
        self._session = onnxruntime.InferenceSession(
            str(self.model_path), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self.reset()

    def reset(self) -> None:
        """Forget the stream: zero state and context (a new call or a new utterance)."""
        self._h = np.zeros((1, 1, self.STATE_SIZE), dtype=np.float32)
        self._c = np.zeros((1, 1, self.STATE_SIZE), dtype=np.float32)
        self._context = np.zeros(self.CONTEXT, dtype=np.float32)

    def probability(self, frame: np.ndarray) -> float:
        """Speech probability of one 512-sample float frame; advances the stream state."""
        x = np.asarray(frame, dtype=np.float32).reshape(-1)
        if x.shape[0] != self.FRAME:
            raise ValueError(
                f"SileroVad expects {self.FRAME} samples per frame, got {x.shape[0]}"
            )
        row = np.concatenate([self._context, x])[None, :]
        out, self._h, self._c = self._session.run(
            None, {"input": row, "h": self._h, "c": self._c}
        )
        self._context = x[-self.CONTEXT :].copy()
        return float(np.asarray(out).reshape(-1)[0])


@dataclass(frozen=True)
class SpeechEvent:
    """A change in speech activity.

    ``t_ms`` is when the event became known (end of the frame that decided it), on the
    caller's clock: that is what a controller may act on. ``speech_start_ms`` and
    ``speech_end_ms`` say where the speech itself began/ended (start of the first
    speech frame, end of the last), for journals and audio alignment.
    """

    kind: Literal["speech_started", "speech_ended", "pause_started", "speech_resumed"]
    t_ms: float
    audio: np.ndarray | None = field(default=None, compare=False, repr=False)
    speech_start_ms: float | None = None
    speech_end_ms: float | None = None
    audio_end_ms: float | None = None  # just after the last sample of `audio`


_SILENCE_DBFS = -120.0


class SpeechSegmenter:
    """Frames -> speech_started / speech_ended, with a settable end-of-speech hold.

    Hysteresis as in Silero's own segmenter: a frame at or above ``threshold`` is
    speech; once in speech, only frames below ``threshold - 0.15`` start the silence
    count (frames in between keep whatever is running).
    """

    def __init__(
        self,
        vad: SileroVad,
        *,
        threshold: float = 0.5,
        end_of_speech_ms: float = 700,
        min_speech_ms: float = 120,
        pre_roll_ms: float = 200,
        report_pauses: bool = False,
        pause_report_ms: float = 0.0,
    ) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {threshold}")
        self.vad = vad
        self.threshold = threshold
        self.neg_threshold = max(threshold - 0.15, 0.01)
        self.end_of_speech_ms = end_of_speech_ms
        self.min_speech_ms = float(min_speech_ms)
        self.pre_roll_ms = float(pre_roll_ms)
        # also ``pause_started`` (the first quiet frame within speech, with the audio so
        # far) and ``speech_resumed``: for a speculative decode at the pause's onset
        self.report_pauses = report_pauses
        self._frame_ms = SileroVad.FRAME * 1000.0 / SAMPLE_RATE
        # a pause is reported once it has lasted this long (at least one quiet frame):
        # the dips between a caller's words each cost a decode otherwise, and a decode
        # already running cannot be called back when the caller goes on
        self._pause_report_frames = max(1, math.ceil(pause_report_ms / self._frame_ms))
        self._pre_roll_frames = math.ceil(self.pre_roll_ms / self._frame_ms)
        # Post-roll after the last speech frame kept in the utterance audio: the tail of
        # the end-of-speech hold is silence and only costs decode time.
        self._post_roll_frames = self._pre_roll_frames
        self.reset()

    @property
    def end_of_speech_ms(self) -> float:
        return self._end_of_speech_ms

    @end_of_speech_ms.setter
    def end_of_speech_ms(self, value: float) -> None:
        # Changed at runtime when the ladder moves to a stage with another hold; an
        # utterance in progress is judged by the new hold from its next frame on.
        if value <= 0:
            raise ValueError(f"end_of_speech_ms must be positive, got {value}")
        self._end_of_speech_ms = float(value)

    @property
    def level_dbfs(self) -> float:
        """RMS level of the last whole frame in dBFS (-120 for digital silence)."""
        return self._level_dbfs

    @property
    def in_speech(self) -> bool:
        return self._state == "speech"

    @property
    def last_probability(self) -> float:
        return self._last_prob

    def reset(self) -> None:
        """Drop buffered audio and state (also resets the VAD stream)."""
        self.vad.reset()
        self._pending = np.zeros(0, dtype=np.float32)
        self._state: Literal["idle", "candidate", "speech"] = "idle"
        self._history: deque[np.ndarray] = deque(
            maxlen=self._pre_roll_frames
            + math.ceil(self.min_speech_ms / self._frame_ms)
            + 2
        )
        self._candidate_frames = 0
        self._candidate_start_ms = 0.0
        self._speech_start_ms = 0.0
        self._last_speech_end_ms = 0.0
        self._silence_ms = 0.0
        self._utterance: list[np.ndarray] = []
        self._frames_since_speech = 0
        self._level_dbfs = _SILENCE_DBFS
        self._last_prob = 0.0

    def feed(self, samples: np.ndarray, t_ms: float) -> list[SpeechEvent]:
        """Add 16 kHz mono samples whose first sample is at ``t_ms``; return new events.

        Any length is accepted; leftovers wait for the next call to make a whole frame.
        """
        x = np.asarray(samples, dtype=np.float32).reshape(-1)
        # Time of the first pending sample, derived from this call's clock so that
        # callers' timestamps (not our sample count) stay the reference.
        start_ms = t_ms - self._pending.shape[0] * 1000.0 / SAMPLE_RATE
        buf = np.concatenate([self._pending, x]) if self._pending.size else x
        n_frames = buf.shape[0] // SileroVad.FRAME
        events: list[SpeechEvent] = []
        for i in range(n_frames):
            frame = buf[i * SileroVad.FRAME : (i + 1) * SileroVad.FRAME]
            ev = self._step(frame, start_ms + i * self._frame_ms)
            if ev is not None:
                events.append(ev)
        self._pending = buf[n_frames * SileroVad.FRAME :].copy()
        return events

    def _step(self, frame: np.ndarray, frame_ms: float) -> SpeechEvent | None:
        rms = float(np.sqrt(np.mean(np.square(frame, dtype=np.float64))))
        self._level_dbfs = 20.0 * math.log10(rms) if rms > 1e-6 else _SILENCE_DBFS
        p = self.vad.probability(frame)
        self._last_prob = p
        end_ms = frame_ms + self._frame_ms

        if self._state == "speech":
            self._utterance.append(frame.copy())
            if p >= self.threshold:
                resumed = self._frames_since_speech > 0
                self._silence_ms = 0.0
                self._last_speech_end_ms = end_ms
                self._frames_since_speech = 0
                if resumed and self.report_pauses:
                    return SpeechEvent("speech_resumed", end_ms, None, speech_start_ms=self._speech_start_ms)
            else:
                self._frames_since_speech += 1
                if p < self.neg_threshold or self._silence_ms > 0:
                    self._silence_ms += self._frame_ms
            if self._silence_ms >= self._end_of_speech_ms:
                return self._end(end_ms)
            if self._frames_since_speech == self._pause_report_frames and self.report_pauses:
                # a pause: what was said so far, for a speculative decode; its time is the
                # pause's onset (the first quiet frame), whenever it is reported
                return SpeechEvent(
                    "pause_started", self._last_speech_end_ms + self._frame_ms, np.concatenate(self._utterance),
                    speech_start_ms=self._speech_start_ms, speech_end_ms=self._last_speech_end_ms, audio_end_ms=end_ms,
                )
            return None

        self._history.append(frame.copy())
        if self._state == "idle":
            if p >= self.threshold:
                self._state = "candidate"
                self._candidate_frames = 1
                self._candidate_start_ms = frame_ms
                self._last_speech_end_ms = end_ms
            else:
                return None
        elif p >= self.neg_threshold:  # candidate continues
            self._candidate_frames += 1
            if p >= self.threshold:
                self._last_speech_end_ms = end_ms
        else:  # candidate was a blip
            self._state = "idle"
            self._candidate_frames = 0
            return None

        if self._candidate_frames * self._frame_ms >= self.min_speech_ms:
            return self._start(end_ms)
        return None

    def audio_so_far(self) -> np.ndarray:
        """The utterance in progress, pre-roll included (empty when none is)."""
        if self._state != "speech" or not self._utterance:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(self._utterance)

    def finish(self, now_ms: float) -> SpeechEvent | None:
        """End the utterance in progress now (its pause already holds a complete
        answer): the same ``speech_ended`` the hold would have given, sooner."""
        if self._state != "speech":
            return None
        return self._end(now_ms)

    def _start(self, now_ms: float) -> SpeechEvent:
        keep = min(len(self._history), self._candidate_frames + self._pre_roll_frames)
        self._utterance = list(self._history)[-keep:]
        self._history.clear()
        self._state = "speech"
        self._speech_start_ms = self._candidate_start_ms
        self._silence_ms = 0.0
        self._frames_since_speech = 0
        return SpeechEvent(
            "speech_started", now_ms, None, speech_start_ms=self._speech_start_ms
        )

    def _end(self, now_ms: float) -> SpeechEvent:
        # Trim the hold's silence, keeping a short post-roll after the last speech frame.
        trim = max(self._frames_since_speech - self._post_roll_frames, 0)
        frames = (
            self._utterance[: len(self._utterance) - trim] if trim else self._utterance
        )
        audio = np.concatenate(frames) if frames else np.zeros(0, dtype=np.float32)
        ev = SpeechEvent(
            "speech_ended",
            now_ms,
            audio,
            speech_start_ms=self._speech_start_ms,
            speech_end_ms=self._last_speech_end_ms,
            audio_end_ms=now_ms - trim * self._frame_ms,
        )
        self._state = "idle"
        self._utterance = []
        self._candidate_frames = 0
        self._silence_ms = 0.0
        self._frames_since_speech = 0
        return ev
