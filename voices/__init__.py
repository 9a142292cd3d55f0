"""The edges: microphone, speaker, VAD, STT, TTS, interpretation, media health."""
