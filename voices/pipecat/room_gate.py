"""`RoomGate`: the room's voices kept from the VAD and the STT once they are known.

Once Lull has judged a caller turn the room's (a television, people talking nearby:
`voices.background_voices`), the room's level is known. Placed before the VAD, this
processor passes the microphone's audio as it is until then; from then on it passes
the frames clearly louder than the room (the caller over it), and a short hangover
after them so a word's tail is kept, and silence in place of the rest. The VAD then
hears the caller's speech start and stop as it would in a quiet room, and the STT
decodes the caller's words, not the programme's around them. Frames keep their timing
(silence, not nothing), so every clock downstream is unchanged.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from pipecat.frames.frames import Frame, InputAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voices.background_voices import BackgroundVoices

HANGOVER_MS = 600.0  # after the caller's last louder frame: the quiet sounds between and after words
# before it, as well: a word's quiet onset ("th" of "that's") is under the room, and
# whisper read "that's right" as "not right" without it; held back this long once the
# room is known (and only then), so the gate can look ahead
LOOKAHEAD_MS = 100.0


class RoomGate(FrameProcessor):
    def __init__(self, room: BackgroundVoices, **kwargs) -> None:
        super().__init__(**kwargs)
        self.room = room
        self._open_ms = 0.0  # the gate stays open this much longer
        self._held: deque[tuple[InputAudioRawFrame, bool, float]] = deque()  # (frame, louder, ms)
        self._held_ms = 0.0
        self.gated_frames = 0  # frames passed as silence (the room alone)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame) and self.room.room_dbfs is not None:
            for out in self._gated(frame):
                await self.push_frame(out, direction)
            return
        await self.push_frame(frame, direction)

    def _gated(self, frame: InputAudioRawFrame) -> list[InputAudioRawFrame]:
        pcm = np.frombuffer(frame.audio, np.int16)
        x = pcm.astype(np.float64) / 32768.0
        power = float(np.mean(x * x)) if x.size else 0.0
        level = 10.0 * np.log10(power) if power > 1e-12 else -120.0
        ms = 1000.0 * pcm.size / max(1, frame.sample_rate * frame.num_channels)
        louder = bool(self.room.louder_than_room(level))
        if louder:  # the caller: the frames held before it are their word's onset
            self._open_ms = HANGOVER_MS + self._held_ms + ms
        self._held.append((frame, louder, ms))
        self._held_ms += ms
        out = []
        while self._held and self._held_ms > LOOKAHEAD_MS:
            held, _, held_ms = self._held.popleft()
            self._held_ms -= held_ms
            if self._open_ms > 0.0:
                self._open_ms -= held_ms
                out.append(held)
            else:
                self.gated_frames += 1
                silent = InputAudioRawFrame(bytes(len(held.audio)), held.sample_rate, held.num_channels)
                silent.transport_source = getattr(held, "transport_source", None)
                out.append(silent)
        return out


__all__ = ["RoomGate"]
