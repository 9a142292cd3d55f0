"""`RoomGateProcessor`: the room's voices kept from the VAD and the STT once they are known.

Once Lull has judged a caller turn the room's (a television, people talking nearby:
`voices.background_voices`), the room's level is known. Placed before the VAD, this
processor passes the microphone's audio as it is until then; from then on the caller's
frames (clearly louder than the room, with a look-ahead before and a hangover after)
and silence in place of the rest (`voices.background_voices.RoomGate`). The VAD then
hears the caller's speech start and stop as it would in a quiet room, and the STT
decodes the caller's words, not the programme's around them. Frames keep their length
(silence, not nothing), so every clock downstream is unchanged.
"""

from __future__ import annotations

from pipecat.frames.frames import Frame, InputAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voices.background_voices import BackgroundVoices, RoomGate


class RoomGateProcessor(FrameProcessor):
    def __init__(self, room: BackgroundVoices, **kwargs) -> None:
        super().__init__(**kwargs)
        self.gate = RoomGate(room)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, InputAudioRawFrame):
            await self.push_frame(frame, direction)
            return
        ms = 1000.0 * (len(frame.audio) // 2) / max(1, frame.sample_rate * frame.num_channels)
        for pcm in self.gate.push(frame.audio, ms):
            out = frame if pcm is frame.audio else InputAudioRawFrame(pcm, frame.sample_rate, frame.num_channels)
            out.transport_source = getattr(frame, "transport_source", None)
            await self.push_frame(out, direction)


__all__ = ["RoomGateProcessor"]
