"""Lull inside a Pipecat pipeline: `LullProcessor` runs a Lull silence policy as a
Pipecat FrameProcessor (needs the `pipecat` extra: pip install 'lull-console[pipecat]')."""

try:
    import pipecat  # noqa: F401
except ImportError as exc:  # one line saying what is missing, not a traceback
    raise ImportError("Lull's Pipecat adapter needs pipecat-ai 1.14: pip install 'lull-console[pipecat]'") from exc

from .processor import LullProcessor

__all__ = ["LullProcessor"]
