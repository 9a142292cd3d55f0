"""Small widgets of the console: each shows one part of the core's state."""

from .ladder_panel import LadderPanel
from .lanes import PromptLane, TimerLane
from .log import EventLog, Transcript, WrappingLog
from .routes import RoutesPanel
from .timeline import Timeline, TimelineModel
from .why import WhyPanel

__all__ = [
    "EventLog", "LadderPanel", "PromptLane", "RoutesPanel", "Timeline", "TimelineModel",
    "TimerLane", "Transcript", "WhyPanel", "WrappingLog",
]
