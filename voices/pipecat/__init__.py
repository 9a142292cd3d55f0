"""Lull inside a Pipecat pipeline (needs the `pipecat` extra: pip install 'lull-console[pipecat]').

- `processor`: `LullProcessor`, a Lull silence policy (ladder mode) or flow (flow mode)
  as a Pipecat FrameProcessor; `frames`: `LullEventFrame`, for what Pipecat has no frame for;
- `services`: Lull's whisper and piper as Pipecat services; `transports`: a recorded
  caller in and a clocked speaker out, no sound card; `turns`: Lull's end of turn as a
  stop strategy (`LullTurnStop`, `lull_turns`), and Lull owns barge-in; `vad`:
  `PauseSafeSileroVAD`, Pipecat's Silero VAD without model resets inside a caller's pause;
- `turn_completion`: `lull_turn_completion()`, the LLM's turn-completion markers read
  by Lull with their timers handed to it; `scripted_llm`: `TableLLMService`, an LLM
  whose replies come from a table (rehearsing beside an LLM, offline);
- `telephony`: the caller on a Twilio Media Stream, through Pipecat's websocket server
  transport and TwilioFrameSerializer on 127.0.0.1 (`--telephony twilio`);
- `backend`: `lull rehearse --backend pipecat`; `incidents`: `lull incidents run --via
  pipecat`, on `voices.virtual_loop`'s virtual-time event loop.
"""

try:
    import pipecat  # noqa: F401
except ImportError as exc:  # one line saying what is missing, not a traceback
    raise ImportError("Lull's Pipecat adapter needs pipecat-ai 1.14: pip install 'lull-console[pipecat]'") from exc

from .frames import LullEventFrame
from .processor import LullProcessor
from .services import LullPiperTTS, LullWhisperSTT
from .transports import CallerFileInput, ClockedSpeakerOutput
from .scripted_llm import TableLLMService
from .turn_completion import lull_turn_completion
from .turns import LullTurnStop, lull_owns_barge_in, lull_turns
from .vad import PauseSafeSileroVAD

__all__ = [
    "CallerFileInput", "ClockedSpeakerOutput", "LullEventFrame", "LullPiperTTS", "LullProcessor",
    "LullTurnStop", "LullWhisperSTT", "PauseSafeSileroVAD", "TableLLMService", "lull_owns_barge_in", "lull_turn_completion", "lull_turns",
]
