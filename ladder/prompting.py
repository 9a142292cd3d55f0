"""Each prompt's lifecycle (L5, V4): requested with a token, started, completed, cancelled
before playback or interrupted; the playback reports of the output, checked against the
token they carry; the boundary whose end arms the next window.

A part of `ladder.controller.Controller` (a mixin: the state it reads and writes is the
controller's, set up in its __init__); pure like the rest of the core."""

from __future__ import annotations

from .effects import CancelPrompt, RequestPrompt
from .events import (
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    PromptFailed,
    PromptSent,
)
from .policy import SLOT_PLACEHOLDER, drop_placeholders
from .states import FINAL_PROMPT_STATUSES, PromptRecord, PromptStatus, State


class Prompting:
    """Each prompt's lifecycle, and the output's reports of it."""

    def _spoken_slot(self, kind: str) -> str:
        """What `{slot}` says now: after part of the value was heard, a reminder asks for
        the rest of it ("If you don't have the rest of your reference code to hand")."""
        ep = self.episode
        if kind == "reminder" and ep is not None and ep.part_heard and self._policy.partial_slot:
            return self._policy.partial_slot.replace(SLOT_PLACEHOLDER, self._policy.slot)
        return self._policy.slot

    def _request_prompt(
        self,
        kind: str,
        text: str,
        *,
        on_complete: str | None,
        stage: str | None = None,
        routes: tuple[str, ...] = (),
        interruptible: bool = True,
    ) -> int:
        if on_complete is not None and self._boundary is not None:
            self._cancel_prompt(self._boundary, "superseded")
        if "{" in text:
            # the pending value by its spoken name; a placeholder nobody filled is never read aloud
            text = drop_placeholders(text.replace(SLOT_PLACEHOLDER, self._spoken_slot(kind)))
        self._token = token = self._token + 1
        policy = self._policy
        estimate = max(1, len(text.split())) * policy.ms_per_word
        ep = self.episode
        question = None if ep is None else ep.question
        prompts = self.prompts
        prompts[token] = self._open_prompts[token] = PromptRecord(
            token, kind, stage, question, None if ep is None else ep.id, requested_at=self.now, estimate_ms=estimate,
            on_complete=on_complete, text=text, routes=routes, interruptible=interruptible,
        )
        if len(prompts) > 512:
            oldest = next(iter(prompts))
            del prompts[oldest]
            self._open_prompts.pop(oldest, None)
        if ep is not None:
            ep.prompt_sequence.append(stage if kind == "reminder" and stage else kind)
        self._effects.append(RequestPrompt(token, kind, text, stage, question, interruptible, routes, estimate))
        self._note("prompt_requested", kind, None, token, {"prompt": kind, "routes": list(routes)})
        # the agent is speaking to the caller: any missing-response alarm is answered
        if kind not in ("filler", "channel_recovery"):
            self._satisfy_watchdog(f"{kind}_requested")
        if on_complete is not None:
            self._boundary = token
            self._arm(
                "playback_estimate",
                self.now + estimate + policy.completion_grace_ms,
                origin="estimate_from_request",
            )
        return token

    def _cancel_prompt(self, token: int, reason: str) -> None:
        record = self.prompts.get(token)
        if record is None or record.status in FINAL_PROMPT_STATUSES:
            return
        if record.status is PromptStatus.REQUESTED:
            record.status = PromptStatus.CANCELLED_BEFORE_PLAYBACK
        else:
            record.status = PromptStatus.INTERRUPTED
        self._emit(CancelPrompt(token, reason))
        self._note(f"prompt_{record.status._value_}", reason, None, token, {"prompt": record.kind})
        if self._boundary == token:
            self._boundary = None
            self._disarm("playback_estimate", reason)

    def _take_boundary(self, token: int, origin: str) -> None:
        """The prompt's end (observed or estimated) arms what comes after it (L2, L5)."""
        record = self.prompts[token]
        self._boundary = None
        self._disarm("playback_estimate", f"boundary_{origin}")
        action = record.on_complete
        if action == "window":
            self._arm_window(origin)
        elif action == "hold":
            self._start_hold(origin)
        elif action == "still_waiting" and self.state is State.HELD:
            self._arm_still_waiting(origin)  # the next line counts from this one's end
        elif action == "close":
            self._commit_close()

    def _prompt_or_stale(self, event) -> PromptRecord | None:
        record = self.prompts.get(event.token)
        if record is None:
            self._stale("unknown_token", event)
            return None
        if record.status in FINAL_PROMPT_STATUSES:
            self._stale(f"prompt_already_{record.status.value}", event)
            return None
        return record

    def _on_prompt_sent(self, event: PromptSent) -> None:
        record = self._prompt_or_stale(event)
        if record is None:
            return
        record.duration_ms = event.duration_ms
        self._trace("prompt_sent", "duration_known", token=event.token, duration_ms=event.duration_ms)
        if self._boundary == event.token:
            self._arm(
                "playback_estimate",
                self.now + event.duration_ms + self._policy.completion_grace_ms,
                origin="estimate_from_send",
            )

    def _on_playback_started(self, event: PlaybackStarted) -> None:
        record = self._prompt_or_stale(event)
        if record is None:
            return
        if record.status is PromptStatus.STARTED:
            self._stale("duplicate_start", event)
            return
        record.status = PromptStatus.STARTED
        record.started_at = self.now
        self._note("prompt_started", record.kind, None, event.token, {"prompt": record.kind})
        ep = self.episode
        if record.kind == "reminder" and ep is not None and record.episode == ep.id:
            ep.checked = True
            ep.ladder_prompts_started += 1
        if record.kind == "close" and ep is not None and record.episode == ep.id:
            ep.ladder_prompts_started += 1
        if self._boundary == event.token:
            duration = record.duration_ms or record.estimate_ms
            self._arm(
                "playback_estimate",
                self.now + duration + self._policy.completion_grace_ms,
                origin="estimate_from_start",
            )

    def _on_playback_completed(self, event: PlaybackCompleted) -> None:
        record = self.prompts.get(event.token)
        if record is not None and record.completion_estimated and record.status not in FINAL_PROMPT_STATUSES:
            # the estimate already armed the next window; record the late truth only
            record.status = PromptStatus.COMPLETED
            self._trace("late_completion", "boundary_already_estimated", token=event.token)
            return
        record = self._prompt_or_stale(event)
        if record is None:
            return
        if record.status is PromptStatus.REQUESTED:
            # a completion without a start still proves the audio reached the endpoint
            self._on_playback_started(PlaybackStarted(event.token))
        record.status = PromptStatus.COMPLETED
        detail = {"prompt": record.kind}
        if event.transcript is not None:
            detail["transcript"] = event.transcript
        self._note("prompt_completed", record.kind, None, event.token, detail)
        if record.kind != "filler":
            self._rearm_filler_after(record)
        if self._boundary == event.token:
            self._take_boundary(event.token, origin="observed")

    def _on_playback_interrupted(self, event: PlaybackInterrupted) -> None:
        record = self.prompts.get(event.token)
        if record is not None and record.status is PromptStatus.INTERRUPTED:
            self._trace("prompt_interrupted", "adapter_confirmed", token=event.token)
            return
        record = self._prompt_or_stale(event)
        if record is None:
            return
        record.status = PromptStatus.INTERRUPTED
        self._trace("prompt_interrupted", "adapter_reported", token=event.token)
        if self._boundary == event.token:
            self._take_boundary(event.token, origin="interrupted")

    def _on_prompt_failed(self, event: PromptFailed) -> None:
        record = self._prompt_or_stale(event)
        if record is None:
            return
        record.status = PromptStatus.FAILED
        self._trace("prompt_failed", event.reason, token=event.token, prompt=record.kind)
        if self._boundary != event.token:
            return
        if record.kind == "acknowledgement":
            # W5: a failed acknowledgement must not leave the call with no timer
            self._trace("inactivity_restored", "acknowledgement_failed", token=event.token)
        self._take_boundary(event.token, origin="prompt_failed")

    def _barge_in_statements(self) -> None:
        """Caller speech cuts interruptible statements; an uninterruptible one holds the floor."""
        for token, interruptible in list(self._statements.items()):
            record = self.prompts.get(token)
            if record is None or record.status in FINAL_PROMPT_STATUSES:
                del self._statements[token]
            elif interruptible:
                self._cancel_prompt(token, "caller_resumed")
                del self._statements[token]
            else:
                self._trace("speech_over_uninterruptible", "floor_held", token=token)

    def _interruptible(self, record: PromptRecord) -> bool:
        if record.kind in ("question", "restate") and self.episode is not None:
            return self.episode.interruptible
        if record.kind == "reminder" and record.stage:
            return next(s for s in self._policy.stages if s.name == record.stage).interruptible
        return True


__all__ = ["Prompting"]
