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
    if effect == "Observation":
        return describe_observation(record)
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
        if reason == "adapter_confirmed":  # the core cut it first; the output now says it stopped
            what += ", the output confirmed"
        return f"prompt #{record.get('token')} {what}"
    if kind == "utterance":
        return f"heard: {reason}{how_read(record)}"
    if kind == "turn_interpreted":
        return None
    if kind == "yes_no_read":
        value = record.get("value")
        said = ("yes" if value else "no") if isinstance(value, bool) else "a value (redacted)"
        score = record.get("score")
        by = f"the learned yes/no reader {score:.2f}" if isinstance(score, (int, float)) and score else "the learned yes/no reader"
        return f"{record.get('slot')} read as {said} by {by} (no yes/no word in the words)"
    if kind == "route_availability":
        return f"route {record.get('route')}: {reason}"
    return f"{kind.replace('_', ' ')}: {reason}"


# -- observations: what the voice edge measured and decided beside the core ------------

# why a turn ended when it did (turn_latency's `end_of_turn`)
TURN_ENDED = {
    "complete_value": "ended on a complete value",
    "partial_value_hold": "held longer for a partial value",
    "hold": "ended after the end-of-speech hold",
    "caller_over_room": "ended when the caller's voice over the room's stopped",
}

# why a caller turn was judged the room's (voices.background_voices)
ROOM_REASONS = {
    "loop": "the recogniser looped on it",
    "long_turn_no_reply": "still going after the turn bound, with no reply in it",
    "quieter_than_caller": "far quieter than the caller's own turns, with no reply in it",
    "no_reply_again": "a second long run of words at the same level, with no reply",
}


def reader_words(reader) -> str:  # noqa: ANN001
    """What read a turn, as the console says it after the intent (voices.understanding.interpret.read_turn)."""
    if not reader:
        return ""
    if reader == "classifier":
        return ", the learned reader"
    if reader == "route_words":
        return ", the caller named what a route offers"
    if str(reader).startswith("shape:"):
        return f", a kept word shape: {str(reader).removeprefix('shape:').replace('_', ' ')}"
    return f", {reader}"


def how_read(record: dict) -> str:
    """What a turn's reading came from: the matcher's intent when that is what decided; a
    value the slot's parser found (a "yes" to a yes/no question reads as an answer, even
    when the matcher's nearest intent was backchannel); else the matcher's guess, unused."""
    reason, matched, score = record.get("reason"), record.get("matched"), record.get("score")
    shown = f" {score:.2f}" if isinstance(score, (int, float)) and not isinstance(score, bool) else ""
    by = reader_words(record.get("reader"))
    if matched and (matched == reason or (reason == "route" and str(matched).startswith("route:"))):
        return f" (intent {matched}{shown}{by})"
    if reason == "answer":
        learned = record.get("yes_no_score")
        if "yes_no" in record and isinstance(learned, (int, float)):
            said = "yes" if record["yes_no"] else "no"
            return f" ({said}, read by the learned yes/no reader {learned:.2f})"
        return " (a value for the pending question)"
    return f" (the matcher's nearest intent, {matched}{shown}, was not used)" if matched else ""


def ms(value) -> str:
    """A number of milliseconds as the console says it: "250 ms"."""
    return f"{value:.0f} ms" if isinstance(value, (int, float)) and not isinstance(value, bool) else "? ms"


def wait_seconds(value: float) -> str:
    return f"{value / 1000:.2f} s"


def describe_observation(record: dict) -> str | None:
    """An observation journaled by a backend (`LiveSession.note`), in plain words, or
    None for the ones the event log leaves out (media figures, masked audio)."""
    kind = record.get("kind")
    if kind == "end_of_turn":
        return describe_end_of_turn(record)
    if kind == "turn_latency":
        return describe_turn_latency(record)
    if kind == "background_voices":
        return describe_background_voices(record)
    return None


def describe_background_voices(record: dict) -> str:
    """A caller turn judged the room's (a television), and on what evidence."""
    why = record.get("reason")
    level = record.get("level_dbfs")
    caller = record.get("caller_dbfs")
    said = ROOM_REASONS.get(why, str(why))
    levels = f"; {level:.0f} dBFS" if isinstance(level, (int, float)) else ""
    if isinstance(caller, (int, float)):
        levels += f", the caller {caller:.0f} dBFS"
    return f"turn {record.get('turn', '?')}: background voices, not the caller ({said}{levels})"


def describe_end_of_turn(record: dict) -> str:
    """The slot-aware end of turn: a pause that holds a complete value ends the turn
    now; one that holds a partial value keeps it open longer."""
    turn = f"turn {record.get('turn', '?')}"
    decision, reason = record.get("decision"), record.get("reason")
    if decision == "end_now":
        pause = f"pause {ms(record['pause_ms'])} " if record.get("pause_ms") is not None else "the pause "
        if reason == "complete_value":
            return f"{turn}: {pause}holds a complete value -> end of turn now"
        return f"{turn}: {pause}-> end of turn now ({reason})"
    if decision == "hold_open":
        upto = f" up to {ms(record['hold_ms'])}" if record.get("hold_ms") is not None else ""
        what = "partial value" if reason == "partial_value" else f"{reason}"
        return f"{turn}: {what} -> holding the turn open{upto}"
    return f"{turn}: end of turn {decision} ({reason})"


def describe_turn_latency(record: dict) -> str:
    """One answered turn's wait as the caller felt it, and where it went."""
    turn = f"turn {record.get('turn', '?')}"
    gap = record.get("perceived_gap_ms")
    head = f"{turn}: caller waited {wait_seconds(gap)}" if isinstance(gap, (int, float)) else f"{turn}: answered (wait not measured)"
    on_line = record.get("caller_wait_on_line_ms")
    if isinstance(on_line, (int, float)) and isinstance(gap, (int, float)):  # a telephone line's round trip on top
        head = f"{turn}: caller waited {wait_seconds(on_line)} on the line ({wait_seconds(gap)} at the agent, the line {ms(record.get('line_ms'))} both ways)"
    why = record.get("end_of_turn")
    ended = TURN_ENDED.get(why, f"ended: {why}") if why else ""
    stages = []
    for key, label in (("hold_ms", "hold"), ("eos_to_transcript_ms", "words"),
                       ("transcript_to_decision_ms", "decision"), ("decision_to_first_audio_ms", "to first sample")):
        if record.get(key) is not None:
            stages.append(f"{label} {ms(record[key])}")
            if key == "eos_to_transcript_ms" and record.get("speculative"):
                stages[-1] += " from the early decode"
    parts = [", ".join(stages)] if stages else []
    if ended:
        parts.insert(0, ended)
    return head + (f" ({'; '.join(parts)})" if parts else "")


# -- the console's "why": the rule behind a ladder move, in plain words ---------------

RULES = {
    "yes_no_read": "At a yes/no question the caller's words held no yes or no of their own, and the intent reader "
    "saw in them no intent, a backchannel or being back: the learned yes/no reader's reading, at or above its "
    "threshold, answers the question (the turn's probability beside it; LULL_YES_NO_READER=0 leaves it out).",
    "stage_advanced": {
        "no_input": "The listening window expired with no caller speech, so the ladder moved one stage on (L4). "
        "Its prompt is requested now; the next window arms from that prompt's completion (L5).",
        "hold_expired": "The caller's hold ran out (hold_ms) with no speech: the ladder checks in at the next stage (L6, W6).",
    },
    "window_armed": {
        "observed": "The listening window armed from the prompt's observed playback completion (L2): "
        "the endpoint reported that the audio finished.",
        "estimated": "The completion report did not arrive in time, so the window armed from the send time plus the "
        "estimated duration (L2). It is flagged as an estimate.",
    },
    "stale_rejected": "A callback carried a generation or prompt token that no longer matches, so it was ignored "
    "and recorded, never acted on (L3).",
    "timer_invalidated": "A newer event made this timer's generation obsolete (L3, L7): a later callback for it "
    "will be rejected as stale.",
    "hold_armed": "The caller asked to wait: a bounded hold replaces the ordinary window (L6); the pending "
    "question and the episode bound stay.",
    "hold_expired": "The hold ran its length (hold_ms, or with a still-waiting cadence the rest of the hold budget) "
    "and the ladder checks in (L6).",
    "still_waiting_armed": "While the caller holds, the next still-waiting line is due after still_waiting_ms, with "
    "its own generation: the caller's return or any newer event makes it stale (L3, L6).",
    "still_waiting": "The still-waiting cadence came due with its generation current: a short line keeps the "
    "holding caller company; the hold itself runs on.",
    "hold_budget_exhausted": "The episode's hold budget is used up, so no further hold is granted (L6).",
    "episode_deadline": "The episode's total bound (episode_ms) ended it, even during a hold or with no timer armed (L12).",
    "episode_started": "A new question opened a silence episode with its own limits (L1).",
    "episode_ended": "The episode ended; its outcome names what was observed (L14).",
    "prompt_cancelled_before_playback": "The caller spoke before this prompt started: it and its queued audio were "
    "cancelled (L5).",
    "prompt_interrupted": "The caller spoke over the prompt while it played (barge-in).",
    "playback_completion_missing": "No completion report arrived by the estimate: the core took the boundary from the "
    "estimate (L2), so the window armed as 'estimated'.",
    "transport_failed": "The input path failed: that is not caller silence, so the ladder moved to channel recovery (L9).",
    "channel_repaired": "The input path came back: the call continues from the current task state (L7, L9).",
    "timer_fired": "A timer reached its due time with its generation current, so it acted.",
    "watchdog_fired": "A caller turn closed and no response followed within the watchdog (W2).",
    "session_closed": "The call closed: closing is absorbing, late speech cannot reopen it (L11).",
    "late_completion": "The completion report came after the estimate had already armed the window: only the truth "
    "is recorded (L2).",
    "speech_over_uninterruptible": "The caller spoke over an uninterruptible prompt: the floor is held (G1).",
    "pause_ended": "The caller's answer ended the pause (W4).",
}

OBSERVED = {
    "end_of_turn": "The slot-aware end of turn (voice edge): a pause whose words already hold a complete value for "
    "the pending slot ends the turn without waiting out the end-of-speech hold; one that holds a partial value "
    "keeps the turn open longer, so the caller can finish. Journaled beside the decisions, not replayed.",
    "turn_latency": "The caller's perceived wait for this answered turn: from the end of their speech as heard to "
    "the agent's first audible sample, with the stages in between (V9). Turns the agent does not answer have none.",
}


def explain(record: dict) -> str:
    """The rule behind one record (a ladder move), in the console's own words."""
    effect = record.get("effect")
    if effect == "RequestPrompt":
        kind = record.get("kind")
        if kind == "reminder":
            return f"The ladder reached stage {record.get('stage')}, whose prompt this is (L4)."
        if kind == "acknowledgement":
            return "A wait request in a new pause is acknowledged once (W3)."
        if kind == "still_waiting":
            return ("The caller is holding: a still-waiting line at the cadence (still_waiting_ms) keeps them "
                    "company until the hold budget is used (L6).")
        if kind == "restate":
            return "The caller is ready but gave no answer: the pending question is restated briefly (L7)."
        return f"The flow asked for a {kind} prompt."
    if effect == "CancelPrompt":
        return f"Prompt #{record.get('token')} was cancelled ({record.get('reason')}): caller speech before a prompt starts cancels it (L5)."
    if effect == "EpisodeEnded":
        return f"The episode ended as {record.get('outcome')} because {record.get('reason')} (L14)."
    if effect == "SessionClosed":
        return RULES["session_closed"]
    if effect == "Observation":
        return OBSERVED.get(record.get("kind"), "A measurement of the voice edge, journaled beside the decisions (replay leaves it out).")
    if effect != "Trace":
        return "A decision of the flow."
    kind = record.get("kind", "")
    rule = RULES.get(kind)
    if isinstance(rule, dict):
        key = record.get("reason") if kind == "stage_advanced" else record.get("origin") or record.get("reason")
        return rule.get(key, next(iter(rule.values())))
    if kind.endswith("_armed") and kind not in RULES:
        return f"A {record.get('timer', kind[:-6])} timer armed from {record.get('origin')} (generation {record.get('generation')})."
    return rule or f"{kind.replace('_', ' ')}: {record.get('reason')}"


def describe_input(event: dict) -> str:
    """A recorded input in plain words (the sessions screen), never a Python dict."""
    kind = event.get("kind", "?")
    rest = {k: v for k, v in event.items() if k != "kind" and v is not None}
    if kind == "caller_utterance":
        by = reader_words(rest.get("reader"))
        if rest.get("intent"):
            how = f" (intent {rest['intent']}{by})"
        elif str(rest.get("reason", "")).startswith("background_voices:"):
            how = " (background voices, not the caller)"
        else:
            how = f" (no intent{by})" if by else ""
        return f"caller said “{rest.get('text', '')}”{how}"
    if kind == "timer_fired":
        return f"timer {rest.get('timer')} fired (gen {rest.get('generation')})"
    if kind in ("playback_started", "playback_completed", "playback_interrupted", "prompt_sent", "prompt_failed"):
        return f"{kind.replace('_', ' ')}: prompt #{rest.get('token')}"
    if kind in ("turn_started", "turn_ended"):
        return f"caller {kind.replace('_', ' ').removeprefix('turn ')} turn {rest.get('turn')} (seq {rest.get('seq')})"
    if kind == "edit_wording":
        return f"designer edited {'/'.join(map(str, rest.get('path', [])))} to “{rest.get('text')}”"
    parts = ", ".join(f"{k} {v}" for k, v in rest.items())
    return kind.replace("_", " ") + (f": {parts}" if parts else "")


def masked_span(span: dict) -> str:
    """One masked stretch of a recording, in words."""
    track = {"mic": "mic.wav", "out": "out.wav"}.get(span.get("track", ""), span.get("track", "?"))
    return f"{track} {span.get('from_ms', 0) / 1000:.2f}s-{span.get('to_ms', 0) / 1000:.2f}s is silence ({span.get('why', 'redacted value')})"
