"""The edges: microphone, speaker, VAD, STT, TTS, understanding callers (understanding/), media health."""

from .offline import go_offline

# Before anything in this package can load onnxruntime, piper, faster-whisper or
# wordllama: their network switches are read when they load (see offline.py).
go_offline()
