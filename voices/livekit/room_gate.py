"""`RoomGatedAudio`: the room's voices kept from the session's VAD and STT once known.

LiveKit's idiom for a step between the microphone and the session is an `io.AudioInput`
with a `source`: this one passes the source's frames as they are until a caller turn was
judged the room's (a television: `voices.background_voices`), and from then on the
caller's frames and silence for the rest (`voices.background_voices.RoomGate`). Each
frame's level goes to `on_level(loop_time, dBFS)` as it passes, so the adapter knows each
turn's level.

    session.input.audio = lull.room_gate(session.input.audio)
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from livekit import rtc
from livekit.agents.voice import io

from voices.background_voices import BackgroundVoices, RoomGate, frame_dbfs


class RoomGatedAudio(io.AudioInput):
    def __init__(self, source: io.AudioInput, room: BackgroundVoices,
                 on_level: Callable[[float, float], None] | None = None) -> None:
        super().__init__(label="RoomGatedAudio", source=source)
        self.gate = RoomGate(room)
        self.on_level = on_level or (lambda loop_time, dbfs: None)
        self._out: deque[rtc.AudioFrame] = deque()

    async def __anext__(self) -> rtc.AudioFrame:
        while not self._out:
            frame = await self.source.__anext__()  # type: ignore[union-attr]
            pcm = bytes(frame.data.cast("B")) if not isinstance(frame.data, bytes) else frame.data
            self.on_level(asyncio.get_running_loop().time(), frame_dbfs(pcm))
            ms = 1000.0 * frame.samples_per_channel / frame.sample_rate
            for out in self.gate.push(pcm, ms):
                self._out.append(rtc.AudioFrame(out, frame.sample_rate, frame.num_channels,
                                                len(out) // 2 // frame.num_channels))
        return self._out.popleft()


__all__ = ["RoomGatedAudio"]
