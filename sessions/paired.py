"""Paired replay (S4): the same recorded inputs under another flow or ladder policy.

It tests controller rules, not caller behaviour: the caller's words and their timing
are held fixed, though a real caller would have reacted to different prompts. The
report says so, and shows per episode what each policy decided.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ladder import Controller, LadderPolicy, event_from_dict
from ladder.flow.runtime import FlowRuntime

from .replay import build_core, read_session, session_steps
from .virtual import AFTER_ENDPOINT, SCRIPTED, Playback, ToolPlan, VirtualCall

# the endpoint's reports belong to the prompts of the recorded run: a paired run gets its
# own, simulated with the durations the recording measured for the same wording
ENDPOINT_KINDS = {"prompt_sent", "playback_started", "playback_completed", "playback_interrupted", "prompt_failed", "timer_fired"}
# so do tool results: each call is answered as the recording answered it, after the
# latency the recording measured from the call, whenever the paired run makes it
TOOL_RESULT = "tool_result"

CAVEAT = (
    "Paired replay tests controller rules, not caller behaviour: both policies see the "
    "same caller inputs at the same times, although a real caller would have reacted "
    "to different prompts."
)


@dataclass
class EpisodeSummary:
    episode: int
    outcome: str | None
    prompts: list[tuple[str, float]]  # (prompt kind or ladder stage, ms)

    def line(self) -> str:
        seq = ", ".join(f"{p}@{t / 1000:.1f}s" for p, t in self.prompts) or "(no prompt)"
        return f"{self.outcome or 'open'}: {seq}"


@dataclass
class EpisodeDiff:
    episode: int
    before: EpisodeSummary | None
    after: EpisodeSummary | None

    @property
    def changed(self) -> bool:
        return (self.before and self.before.line()) != (self.after and self.after.line())


@dataclass
class PairedReport:
    path: Path
    episodes: list[EpisodeDiff]
    session_outcome: tuple[str | None, str | None]
    caveat: str = CAVEAT

    @property
    def changed(self) -> list[EpisodeDiff]:
        return [d for d in self.episodes if d.changed]


def summarize(decisions: list[tuple[float, dict]]) -> tuple[dict[int, EpisodeSummary], str | None]:
    episodes: dict[int, EpisodeSummary] = {}
    outcome = None
    for t_ms, record in decisions:
        effect = record.get("effect")
        episode = record.get("episode") if effect is None or effect == "Trace" else None
        if effect == "RequestPrompt":
            label = record.get("stage") if record.get("kind") == "reminder" else record.get("kind")
            current = max(episodes) if episodes else None
            if current is not None and episodes[current].outcome is None:
                episodes[current].prompts.append((label, t_ms))
        elif effect == "SessionClosed":
            outcome = record.get("outcome")
        elif record.get("kind") == "episode_started" and episode is not None:
            episodes[episode] = EpisodeSummary(episode, None, [])
        elif record.get("kind") == "episode_ended" and episode in episodes:
            episodes[episode].outcome = (record.get("detail") or {}).get("outcome") or record.get("outcome")
    return episodes, outcome


def measured_playback(decisions: list[tuple[float, dict]]) -> dict[str, tuple[float, float]]:
    """text -> (start delay, duration) of each prompt as the recording measured it.

    A prompt the caller interrupted was never measured in full, but it lasted at least
    until the interruption: the paired run must not end it sooner by its word-count
    estimate, or an unedited replay would lose interruptions the caller really made.
    """
    texts, requested, started, out, at_least = {}, {}, {}, {}, {}
    ready: dict = {}  # token -> when the loudspeaker was free for it
    speaking_until = 0.0  # when the audio started before ended: a prompt queued behind it waits
    for t_ms, record in decisions:
        if record.get("effect") == "RequestPrompt":
            texts[record["token"]] = record["text"]
            requested[record["token"]] = t_ms
        elif record.get("kind") == "prompt_started":
            token = record.get("token")
            started[token] = t_ms
            # the start delay from when the loudspeaker was free, not from the request:
            # the paired run queues prompts itself, and would count the queue twice
            if token in requested:
                ready[token] = max(requested[token], min(speaking_until, t_ms))
        elif record.get("kind") in ("prompt_completed", "prompt_interrupted") and record.get("token") in started:
            token = record["token"]
            speaking_until = max(speaking_until, t_ms)
            if token in texts:
                measured = (started[token] - ready[token], t_ms - started[token])
                if record["kind"] == "prompt_completed":
                    out[texts[token]] = measured
                else:
                    at_least[texts[token]] = max(measured, at_least.get(texts[token], measured), key=lambda m: m[1])
    default = Playback()
    for text, (delay, lasted) in at_least.items():
        if text not in out:
            estimate = max(1, len(text.split())) * default.ms_per_word
            out[text] = (delay, max(estimate, lasted + 1))
    return out


def recorded_tools(steps) -> dict[str, ToolPlan]:
    """call id -> how the recording answered it: latency from the call, outcome, result."""
    called: dict[str, float] = {}
    plans: dict[str, ToolPlan] = {}
    for step in steps:
        for record in step.decisions:
            if record.get("effect") == "CallTool":
                called[record.get("call")] = record["t_ms"]
        record = step.input
        if record is not None and record["kind"] == TOOL_RESULT:
            event = record["event"]
            if event.get("call") in called:
                plans[event["call"]] = ToolPlan(record["t_ms"] - called[event["call"]], event.get("outcome", "ok"),
                                                event.get("result") or {}, timeout_ms=float("inf"))
    return plans


@dataclass
class PairedRun:
    """One session's recorded decisions beside those the other policy made on its inputs."""

    recorded: list[tuple[float, dict]]
    produced: list[tuple[float, dict]]
    stopped: str | None  # why the inputs stop before the journal does (damage), if they do


def paired_run(path: Path, *, flow=None, policy: LadderPolicy | None = None) -> PairedRun:
    journal = read_session(path)
    steps = session_steps(journal)  # up to the first lost input, as replay does
    recorded = [(r["t_ms"], r) for step in steps.steps for r in step.decisions]
    if policy is not None:
        core = Controller(policy)
    elif flow is not None:
        core = FlowRuntime(flow)
    else:
        core = build_core(journal)
    measured = measured_playback(recorded)
    # a prompt the recording never measured (cut before it started) starts as the
    # recording's prompts did, not after Playback's generic delay: started sooner, the
    # caller who spoke over its queueing would be heard interrupting it
    delays = sorted(delay for delay, _ in measured.values())
    playback = Playback(mode="auto", measured=measured, **({"start_delay_ms": delays[len(delays) // 2]} if delays else {}))
    redact = getattr(core, "redact", None)
    call = VirtualCall(core, playback, tools_by_call=recorded_tools(steps.steps),
                       measured_key=None if redact is None else (lambda text: redact({"text": text})["text"]))
    last = 0.0
    endpoint_at = None  # the time of the latest endpoint report the recording holds
    for step in steps.steps:
        record = step.input
        if record is None:
            continue
        if record["kind"] in ENDPOINT_KINDS:
            endpoint_at = record["t_ms"]
        elif record["kind"] != TOOL_RESULT:
            order = AFTER_ENDPOINT if record["t_ms"] == endpoint_at else SCRIPTED
            call.push(record["t_ms"], event_from_dict(record["event"]), order)
            last = record["t_ms"]
    ladder = getattr(core, "ladder", core)
    if steps.stopped is None and any(r.get("effect") == "SessionClosed" for _, r in recorded):
        call.run_until(last + ladder.policy.episode_ms)  # let the other policy's timers play out
    else:
        # the recording stops mid-call (damage, or a process killed): what it would show
        # after that is unknown, so the other policy runs to the same moment, no further;
        # played out, an unedited flow would "close" every such call the recording left open
        call.run_until(max([last, *(t for t, _ in recorded)]))
    produced = [(r.get("at", 0.0), r) for r in call.records]
    return PairedRun(recorded, produced, steps.stopped)


def paired_replay(path: Path, *, flow=None, policy: LadderPolicy | None = None) -> PairedReport:
    run = paired_run(path, flow=flow, policy=policy)
    before, outcome_before = summarize(run.recorded)
    after, outcome_after = summarize(run.produced)
    diffs = [EpisodeDiff(e, before.get(e), after.get(e)) for e in sorted(set(before) | set(after))]
    return PairedReport(Path(path), diffs, (outcome_before, outcome_after))
