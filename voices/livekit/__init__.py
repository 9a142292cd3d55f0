"""Lull inside a LiveKit AgentSession (needs the `livekit` extra: pip install 'lull-console[livekit]').

- `adapter`: `LullLadder`, a Lull silence policy (ladder mode) or flow (flow mode)
  attached to an AgentSession's events, speaking through its TTS;
- `simulated`: a scripted VAD and STT, a TTS of silence and a clocked audio output, as
  LiveKit plugins and I/O, no sound card;
- `plugins`: Lull's whisper and piper as LiveKit STT and TTS plugins; `audio_io`: a
  recorded caller in and a clocked speaker out, as the session's audio I/O;
- `scripted_llm`: `TableLLM`, an LLM whose replies and tool calls come from a table
  (rehearsing beside an LLM, offline);
- `backend`: `lull rehearse --backend livekit`; `incidents`: `lull incidents run --via
  livekit`, on `voices.virtual_loop`'s virtual-time event loop.
"""

try:
    import livekit.agents  # noqa: F401
except ImportError as exc:  # one line saying what is missing, not a traceback
    raise ImportError("Lull's LiveKit adapter needs livekit-agents 1.8: pip install 'lull-console[livekit]'") from exc

import logging

from .adapter import LullLadder
from .audio_io import CallerFileAudio, ClockedSpeaker
from .plugins import LullPiperTTS, LullWhisperSTT
from .scripted_llm import TableLLM


def quiet_livekit_logs() -> None:
    """LiveKit warns of what Lull leaves out on purpose (no LLM to reply, an output
    that cannot pause, Lull's prompts not cut by the session's VAD): keep its errors."""
    logging.getLogger("livekit.agents").setLevel(logging.ERROR)


__all__ = ["CallerFileAudio", "ClockedSpeaker", "LullLadder", "LullPiperTTS", "LullWhisperSTT", "TableLLM", "quiet_livekit_logs"]
