"""What a live session (sessions.live.LiveSession) speaks and listens through, one module
each: `text` (typed caller turns, printed agent words), `file` (a caller WAV in, the
agent's audio to a clocked file speaker), `audio` (a real microphone and speaker).

`voice` holds what the two voice backends share (the models, speaking, the path of one
utterance from the microphone to the core); `turn_latency` and `secret_audio` are its
parts; `turn_bench` and `echo_bench` measure them (`lull bench turn`), `recorded_wait`
measures the caller's wait from a recording, as for any backend.
"""

from .audio import AudioBackend
from .file import FileBackend, FileSpeaker
from .text import TextBackend, TypedTurns
from .voice import VoiceBackend, VoiceModels

__all__ = ["AudioBackend", "FileBackend", "FileSpeaker", "TextBackend", "TypedTurns", "VoiceBackend", "VoiceModels"]
