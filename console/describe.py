"""One line of plain words per record: the headless event stream and the console's log."""

from __future__ import annotations

# trace kinds too fine-grained for the default stream (still in the journal)
QUIET = {
    "state", "playback_estimate_armed", "prompt_requested", "turn_ended", "timer_fired",
    # the effects of the same step already say these
    "episode_ended", "slot_filled", "tool_called", "session_closed", "tool_started",
}


def seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}s"


def describe(record: dict, verbose: bool = False) -> str | None:
    """A short description of a flattened record, or None to leave it out."""
    effect = record.get("effect")
    if effect is None:  # an input
        return None
    if effect == "RequestPrompt":
        routes = f" offering {', '.join(record['routes'])}" if record.get("routes") else ""
        return f"prompt #{record['token']} requested ({record['kind']}){routes}"
    if effect == "CancelPrompt":
        return f"prompt #{record['token']} cancelled: {record['reason']}"
    if effect == "CallTool":
        return f"tool {record['tool']} called ({record['call']})"
    if effect == "ToolDenied":
        return f"tool {record['tool']} DENIED: {record['reason']}"
    if effect == "SlotFilled":
        fix = " (correction)" if record.get("correction") else ""
        return f"slot {record['slot']} = {record['value']!r}{fix}"
    if effect == "EpisodeEnded":
        return f"episode {record['episode']} ended: {record['outcome']} ({record['reason']})"
    if effect == "SessionClosed":
        pending = f", pending: {', '.join(record['pending_tools'])}" if record.get("pending_tools") else ""
        return f"session CLOSED: {record['outcome']} ({record['reason']}){pending}"
    if effect == "TimingChanged":
        return f"timing: {record['timing']}" if verbose else None
    if effect != "Trace":
        return None
    kind, reason = record["kind"], record["reason"]
    if kind in QUIET and not verbose:
        return None
    gen = f" gen {record['generation']}" if record.get("generation") is not None else ""
    if kind.endswith("_armed"):
        origin = f" from {record.get('origin')}" if record.get("origin") else ""
        return f"{record.get('timer', kind[:-6])} armed{gen}{origin}, due {seconds(record.get('due'))}"
    if kind == "stale_rejected":
        return f"REJECTED {record.get('event')}{gen}: {reason}"
    if kind == "timer_invalidated":
        return f"{record.get('timer')} invalidated{gen}: {reason}" if verbose else None
    if kind == "stage_advanced":
        return f"ladder -> {record.get('stage')} ({reason})"
    if kind in ("stage_entered", "stage_completed"):
        return f"flow {kind.replace('_', ' ')}: {record.get('flow_stage')}"
    if kind in ("prompt_started", "prompt_completed", "prompt_interrupted", "prompt_cancelled_before_playback"):
        what = kind.removeprefix("prompt_").replace("_", " ")
        return f"prompt #{record.get('token')} {what}"
    if kind == "utterance":
        matched = record.get("matched")
        score = f" {record.get('score'):.2f}" if matched else ""
        return f"heard: {reason}" + (f" (intent {matched}{score})" if matched else "")
    if kind == "turn_interpreted":
        return None
    return f"{kind.replace('_', ' ')}: {reason}"
