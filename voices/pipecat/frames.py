"""The frames Lull adds to Pipecat's: a core event for what Pipecat has no frame for.

A route's availability changing, a hangup the transport saw, an announcement, a
question the application asks Lull to ask, a media path recovering: an application
pushes `LullEventFrame(event)` and `LullProcessor` feeds the event to its core as it
comes, in order with the other frames. Everything with a Pipecat frame of its own
(speaking, transcriptions, interruptions, function calls, end and cancel) should come
as that frame, never as this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipecat.frames.frames import DataFrame, SystemFrame, TranscriptionFrame

from ladder.events import Event


@dataclass
class LullEventFrame(SystemFrame):
    """One core event (`ladder.events`), fed to the LullProcessor it reaches.

    A system frame: it is not dropped by an interruption, and it keeps its order with
    the speaking frames (system frames too), which it usually relates to.
    """

    event: Event

    def __str__(self) -> str:
        return f"{self.name}({self.event.kind})"


@dataclass
class WordsDecodingFrame(DataFrame):
    """Lull's whisper service has begun (`done=False`) or finished (`done=True`) decoding
    a segment the VAD ended: its words are on their way, however slow a loaded machine
    makes the decode. `LullTurnStop` waits for them instead of its fixed words wait, so
    a slow decode's words land in the turn they belong to, not in a turn of their own.

    A data frame, as the transcription it announces: the two keep their order.
    """

    done: bool = False


@dataclass
class TurnTranscriptionFrame(TranscriptionFrame):
    """The caller's words in the open user turn so far, read again from the turn's start
    (Lull's whisper service with `whole_turn=True`: voices.stt.TurnSoFar). It replaces
    the turn's earlier transcriptions: `LullTurnStop` and `LullProcessor` read the turn
    as its latest such frame says, not as the segments' words strung together. A
    processor that knows only `TranscriptionFrame` would append it to the turn's earlier
    words; the service's default (`whole_turn=False`) is one segment's words a frame."""


__all__ = ["LullEventFrame", "TurnTranscriptionFrame", "WordsDecodingFrame"]
