"""What an incident run through a voice framework (Pipecat, LiveKit) shares, whatever
the framework: the run as `sessions.incidents.judge` reads it, the words a scripted
caller's transcript carries, the horizon, and the order of things at one virtual instant.

Each framework's runner (`voices.pipecat.incidents`, `voices.livekit.incidents`) feeds
the incident's steps in that framework's own idiom where it has one, and judges the run
here exactly as on the virtual clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ladder import RequestPrompt, Trace
from ladder.events import Event
from sessions.incidents import Incident, Outcome, judge

# ranks at one virtual instant (voices.virtual_loop): scripted steps, then the endpoint's
# reports, then the core's timers (the loop's LATE_RANK, 2), then the end of the run
SCRIPTED, ENDPOINT, FINISH = 0, 1, 3

# what a caller's transcript can carry to an adapter beside an LLM; its other meanings
# go in as Lull events
SPOKEN_INTENTS = ("answer", "wait_request", "ready", "repeat_request", "backchannel")


class IncidentWords:
    """The matcher of an incident run: a transcript is an intent's name, or the words
    of an answer."""

    ready = True

    def match(self, text: str) -> tuple[str | None, float]:
        return (text if text in SPOKEN_INTENTS else None), 1.0


def horizon_ms(incident: Incident) -> float:
    last = max((s.at for s in incident.schedule), default=0)
    return max(last, incident.until or 0)


@dataclass
class FrameworkRun:
    """What `sessions.incidents.judge` reads of a run, from the adapter's core.

    `adapter` is the framework's Lull adapter: it has `core`, and the `inputs` and
    `effects` it fed and got, each with its time."""

    incident: Incident
    adapter: object
    records: list[dict] = field(default_factory=list)
    as_native: int = 0  # steps that went in as the framework's own frames or events
    as_events: int = 0  # steps that went in as Lull events (the framework has none for them)
    snapshot: dict = field(default_factory=dict)  # the core at the horizon
    episode_outcomes: list = field(default_factory=list)

    @property
    def controller(self):
        return self.adapter.core  # type: ignore[attr-defined]

    @property
    def inputs(self) -> list[tuple[float, Event]]:
        return self.adapter.inputs  # type: ignore[attr-defined]

    def tokens(self) -> dict[str, int]:
        refs: dict[str, int] = {}
        for _, effect in self.adapter.effects:  # type: ignore[attr-defined]
            if type(effect) is RequestPrompt:
                refs["last"] = refs[f"last_{effect.kind}"] = effect.token
        return refs

    def resolve_prompt_ref(self, ref: str) -> int | None:
        return int(ref) if ref.isdigit() else self.tokens().get(ref)

    def timer_ref(self, kind: str, ref) -> int:
        if isinstance(ref, int):
            return ref
        if ref == "current":
            armed = self.controller.timer(kind)
            return armed.generation if armed else -1
        wanted = "timer_fired" if ref == "last_fired" else "timer_invalidated"
        generation = -1
        for _, effect in self.adapter.effects:  # type: ignore[attr-defined]
            if type(effect) is Trace and effect.kind == wanted and effect.detail.get("timer") == kind:
                generation = effect.generation  # type: ignore[assignment]
        return generation

    def take_horizon(self) -> None:
        """The run as it stands at the horizon, before the framework's end adds its own
        EndSession: what is judged."""
        from sessions.virtual import flatten

        self.records = [flatten(effect, at) for at, effect in self.adapter.effects]  # type: ignore[attr-defined]
        self.snapshot = self.controller.snapshot()
        self.episode_outcomes = [e.outcome for e in self.controller.episodes]

    def judged(self) -> Outcome:
        return judge(_Judged(self))


@dataclass
class _Episode:
    outcome: str | None


class _Judged:
    """The run as it stood at the horizon (the snapshot taken there, not at the end)."""

    def __init__(self, run: FrameworkRun) -> None:
        self.incident, self.records, self._run = run.incident, run.records, run
        self.inputs = run.inputs
        self.controller = _AtHorizon(run.snapshot, run.episode_outcomes)

    def resolve_prompt_ref(self, ref: str) -> int | None:
        return self._run.resolve_prompt_ref(ref)


class _AtHorizon:
    def __init__(self, snapshot: dict, outcomes: list) -> None:
        self._snapshot = snapshot
        self.episodes = [_Episode(o) for o in outcomes]

    def snapshot(self) -> dict:
        return self._snapshot


__all__ = ["ENDPOINT", "FINISH", "SCRIPTED", "SPOKEN_INTENTS", "FrameworkRun", "IncidentWords", "horizon_ms"]
