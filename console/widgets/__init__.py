"""Small widgets of the console: each shows one part of the core's state."""

from .ladder_panel import LadderPanel
from .lanes import PromptLane, TimerLane
from .log import EventLog, Transcript
from .routes import RoutesPanel

__all__ = ["EventLog", "LadderPanel", "PromptLane", "RoutesPanel", "TimerLane", "Transcript"]
