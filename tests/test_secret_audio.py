"""A secret prompt's mask in out.wav opens where it starts and closes where it ends, at
any clock resolution: once a read-back at a time with microseconds (a framework's loop
clock) left the mask open, and every prompt after it was silent in out.wav."""

from __future__ import annotations

import numpy as np
import soundfile

from voices.backends.secret_audio import SecretAudio
from voices.recording import CallRecorder


class _Session:
    """What SecretAudio reads of a live session: a flow that redacts, notes, listeners."""

    def __init__(self) -> None:
        self.notes: list[tuple[str, dict]] = []
        self.listeners: list = []
        self.runtime = self

        class _Flow:
            redact_keys = ("code",)

        self.flow = _Flow()

    def redact(self, record: dict) -> dict:
        return {**record, "text": record["text"].replace("4821", "[code]")}

    def note(self, kind: str, data: dict) -> None:
        self.notes.append((kind, data))

    def now_ms(self) -> float:
        return 0.0


def test_a_read_back_at_a_microsecond_time_is_masked_and_the_prompt_after_it_is_heard(tmp_path):
    rate = 16_000
    recorder = CallRecorder(tmp_path, mic_rate=rate, out_rate=rate)
    secrets = SecretAudio()
    secrets.attach(_Session())
    secrets.recorder = recorder
    tone = lambda s: (0.5 * np.sin(np.arange(int(s * rate)) / 3.0)).astype(np.float32)  # noqa: E731
    secrets.prompt(4, "I heard 4821. Is that right?")
    secrets.prompt_started(4, 1013.846)  # loop-clock times: sub-0.1 ms parts
    recorder.out_piece(1013.846, tone(1.0))
    secrets.prompt_ended(4, 2013.846)
    recorder.out_piece(3000.0, tone(1.0))  # the next prompt, no secret in it
    recorder.close()
    out, _ = soundfile.read(tmp_path / "out.wav", dtype="float32")
    assert float(np.abs(out[int(1.1 * rate):int(1.9 * rate)]).max()) == 0.0  # the read-back: masked
    assert float(np.abs(out[int(3.1 * rate):int(3.9 * rate)]).max()) > 0.4  # the next prompt: heard
