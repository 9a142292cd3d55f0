"""Lull inside a LiveKit AgentSession (needs the `livekit` extra: pip install 'lull-console[livekit]').

- `adapter`: `LullLadder`, a Lull silence policy (ladder mode) attached to an
  AgentSession's events, speaking through its TTS;
- `simulated`: a scripted VAD and STT, a TTS of silence and a clocked audio output, as
  LiveKit plugins and I/O, no sound card;
- `incidents`: `lull incidents run --via livekit`, on `voices.virtual_loop`'s
  virtual-time event loop.
"""

try:
    import livekit.agents  # noqa: F401
except ImportError as exc:  # one line saying what is missing, not a traceback
    raise ImportError("Lull's LiveKit adapter needs livekit-agents 1.8: pip install 'lull-console[livekit]'") from exc

from .adapter import LullLadder

__all__ = ["LullLadder"]
