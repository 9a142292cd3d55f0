"""The flow runtime: the conversation graph driving one silence controller (G1-G7).

Pure like the rest of `ladder`: `handle(event, now)` returns effects, `next_deadline()`
and `handle_timer(now)` pass the silence controller's timers through. The runtime
owns the state (slots and facts), which stages are active in which layer (the main
flow or a digression), tool admission and the commit policies; every prompt goes
through the silence controller, so each has one token and one lifecycle.

At a turn boundary (after a caller turn, a tool result, a fact or a prompt that
finished) the runtime: applies a finished digression's resume policy, enters the
first digression whose trigger holds, then repeatedly completes stages, enters the
stages that became active (ask, say, call a tool), reopens and escalates, until
nothing changes. Then it publishes the merged timing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..controller import Controller
from ..effects import (
    Answered,
    CallTool,
    Effect,
    FlowEnded,
    RequestPrompt,
    RouteTaken,
    SessionClosed,
    SlotFilled,
    TimingChanged,
    ToolDenied,
    Trace,
)
from ..events import (
    Announce,
    AskQuestion,
    CallerUtterance,
    EditWording,
    EndSession,
    Event,
    PlaybackCompleted,
    RequestTool,
    SetFact,
    StartCall,
    ToolFinished,
    ToolResult,
    ToolStarted,
    TurnInterpreted,
)
from ..policy import LADDER_TEXT_FIELDS, LadderPolicy, drop_placeholders
from ..states import FINAL_PROMPT_STATUSES, PromptStatus
from .compile import (
    MAIN,
    CompiledFlow,
    FlowCompileError,
    Layer,
    compile_flow,
    downstream,
    merge_timing,
    stage_timing,
)
from .edits import apply_edits
from .spec import FlowSpec, StageSpec, Timing
from .understanding.text import (
    digit_answer_evidence,
    hide_digit_values,
    learned_yes_no,
    mask_digits,
    mask_number_words,
    parse_digits,
    parse_number,
    parse_text,
    parse_yes_no,
    replaced_partial,
    verbatim_passes,
    word_similarity,
)

REDACTED = "[redacted]"
# a journaled turn that filled a redacted text slot: its words' shapes, one x a character
_STAND_IN = re.compile(r"^\[redacted: ([x ]+)\]$")
MAX_VERBATIM_ATTEMPTS = 3
# At a question for free text, a recognised request beats the words as the answer only
# at this score or above. Measured with the classifier on the yardstick's dev phrasings
# (514 right intents): 5 % of right ones score below 0.69, and two pet names said at a
# "what is your pet's name?" question scored 0.52 (wait_request: "second") and 0.58
# (repeat_request); taken as requests, the answer was lost and the caller left waiting.
TEXT_ANSWER_INTENT_MIN = 0.7
# ...except asking for time and being back, which a reading at the reader's own threshold
# keeps from a text slot (issue 48): at "which day?" "i'd have to see when i'm off work
# first" (wait_request 0.57) was read back as the day. On yardstick2's dev sets, three
# flows with a text question: of 36 waits and comebacks written blind (kinds/dev), 14 read
# as one in 0.55-0.7 and filled the slot with the sentence; of 80 answers written blind
# for four text questions (answers/dev), 3 read as one there (two plates, a tyre size)
# and are now asked for again.
_TEXT_NOT_A_VALUE = ("wait_request", "ready")
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_:\-]+)\}")
_LADDER_INTENTS = {"wait_request", "ready", "repeat_request", "backchannel", "noise", "decline"}
# Requests that a number or a yes/no inside them does not answer, read with confidence.
# A yes/no keeps "go ahead" and "okay": said to "shall I book it?" they are a yes.
_NOT_A_VALUE = {"number": ("wait_request", "ready", "repeat_request", "backchannel"),
                "yes_no": ("wait_request", "repeat_request")}


@dataclass
class ToolCallRecord:
    call: str
    tool: str
    args: dict
    stage: str | None
    key: str | None
    status: str = "running"  # running / ok / failed / unknown
    compensates: str | None = None  # the call this one compensates


@dataclass
class RepairCounters:
    turns: int = 0
    interruptions: int = 0
    tool_failures: int = 0


class FlowRuntime:
    """One call through a compiled flow."""

    def __init__(self, flow: CompiledFlow) -> None:
        self.flow = flow
        self.ladder = Controller(flow.ladder)
        self.state: dict[str, Any] = {}
        self.provenance: dict[str, str] = {}  # slot -> the caller turn that filled it
        self.done: dict[str, dict[str, str]] = {MAIN: {}}  # layer -> stage -> how
        self.entered: dict[str, set[str]] = {MAIN: set()}
        self.called: dict[str, set[str]] = {}  # layer -> stages whose `call` has run
        self.call_waiting: dict[str, set[str]] = {}  # ... whose call waits on its guard
        self.stack: list[str] = []  # digressions on the active path, outermost first
        self.terminated_by: str | None = None
        self.ended = False
        self.closed = False
        self.tools_ok: set[str] = set()
        self.calls: dict[str, ToolCallRecord] = {}
        self.idempotent: dict[tuple[str, str], dict] = {}
        self.repair: dict[str, RepairCounters] = {}
        self.prompt_stage: dict[int, tuple[str, str]] = {}  # token -> (layer, stage)
        self.verbatim_attempts: dict[str, int] = {}
        self.timing: Timing | None = None
        self.asking: tuple[str, str] | None = None  # (layer, stage) with the pending question
        self.partial: dict[str, str] = {}  # slot -> digits heard so far
        # redaction (G6): values of redacted digit slots, of redacted text slots, the
        # caller turns that filled a text slot, and the digit cipher for caller words
        self.secret_digits: set[str] = set()
        self.secret_texts: set[str] = set()
        self.turn_fragments: dict[str, list[str]] = {}  # turn -> the secret words it said
        self._stand_ins: dict[str, str] = {}
        self._cipher: dict[str, str] = {}  # real digit -> stand-in, learnt turn by turn
        self._masks_digits = any(
            flow.spec.slots[k].type in ("digits", "number") for k in flow.redact_keys if k in flow.spec.slots
        )
        # a count said in words ("two hundred and fifty"): its tens and teens, as the digits
        self._number_words: dict[str, str] = {}
        self._masks_numbers = any(flow.spec.slots[k].type == "number" for k in flow.redact_keys if k in flow.spec.slots)
        # the agent's words with a redacted value in them -> the same words with it hidden,
        # as rendered: a short value ("I heard 4") is found where it was put, not guessed at
        self._said_values: dict[str, str] = {}
        # questions whose answer is a redacted value: their Answered effect's value is hidden
        self._secret_questions = frozenset(
            stage_id for layer in (flow.main, *flow.overlays) for stage_id, stage in layer.stages.items()
            if set(stage.collect) & flow.redact_keys
        )
        self.now: float = 0.0
        self.ladder_inputs: list[tuple[float, Event]] = []
        self.prompt_texts: dict[int, str] = {}  # token -> the text asked of the endpoint
        self.transcripts: dict[int, str] = {}  # token -> what the endpoint reported playing
        self._calls = 0
        self._pending_resume: str | None = None
        self._effects: list[Effect] = []

    # -- public API -----------------------------------------------------------------

    @property
    def driving(self) -> str:
        return self.stack[-1] if self.stack else MAIN

    def next_deadline(self) -> float | None:
        return self.ladder.next_deadline()

    def next_due_timer(self, now: float) -> Event | None:
        """The timer event a driver should feed at `now` (see Controller.next_due_timer)."""
        return self.ladder.next_due_timer(now)

    def _to_ladder(self, event: Event, now: float) -> list[Effect]:
        """Every event the silence controller sees, logged (an incident can be made of it)."""
        self.ladder_inputs.append((now, event))
        return self.ladder.handle(event, now)

    def handle_timer(self, now: float) -> list[Effect]:
        self._effects = []
        self.now = now
        self._absorb(self.ladder.handle_timer(now))
        self._boundary()
        return self._effects

    def handle(self, event: Event, now: float) -> list[Effect]:
        self._effects = []
        self.now = now
        if isinstance(event, StartCall):
            self._trace("call_started", self.flow.spec.name)
            self._boundary()
        elif isinstance(event, CallerUtterance):
            self._learn_digits(event)
            self._on_utterance(event)
        elif isinstance(event, SetFact):
            self.state[event.key] = event.value
            self.provenance[event.key] = "set_fact"
            self._trace("fact_set", event.key)
            self._boundary()
        elif isinstance(event, ToolResult):
            self._on_tool_result(event)
        elif isinstance(event, RequestTool):
            self._on_tool_request(event)
        elif isinstance(event, EditWording):
            self._on_edit(event)
        else:
            if isinstance(event, PlaybackCompleted) and event.transcript is not None:
                self.transcripts[event.token] = event.transcript
            self._absorb(self._to_ladder(event, now))
            self._boundary()
        return self._effects

    def active_stages(self, layer_name: str | None = None) -> list[str]:
        layer = self.flow.layer(layer_name or self.driving)
        done = self.done.setdefault(layer.name, {})
        # asked several times a step: the stages done each way gathered once, then set tests
        completed = {sid for sid, how in done.items() if how == "completed"}
        escalated = {sid for sid, how in done.items() if how == "escalated"}
        gotos = self.flow.route_gotos.values()
        state = self.state
        active = []
        for sid in layer.order:
            if sid in done:
                continue
            preds = layer.after[sid]
            if preds:
                normal = preds <= completed
            else:  # a root: nothing comes before it, and no escalation or route leads to it
                normal = sid not in layer.escalated_from and sid not in gotos
            if (
                normal
                or (escalated and not escalated.isdisjoint(layer.escalated_from.get(sid, ())))
                or state.get(layer.goto_keys[sid]) is True
            ):
                active.append(sid)
        return active

    def snapshot(self) -> dict:
        return {
            "flow": self.flow.spec.name,
            "driving": self.driving,
            "stack": list(self.stack),
            "active": self.active_stages() if not self.ended else [],
            "done": {k: dict(v) for k, v in self.done.items()},
            "state": self.redact(dict(self.state)),
            "timing": None if self.timing is None else self.timing.model_dump(exclude_none=True),
            "terminated_by": self.terminated_by,
            "ended": self.ended,
            "calls": {c: {"tool": r.tool, "status": r.status, "stage": r.stage} for c, r in self.calls.items()},
            "repair": {s: vars(c).copy() for s, c in self.repair.items()},
            "ladder": self.ladder.snapshot(),
        }

    # -- redaction (G6) ------------------------------------------------------------

    def redact(self, record: Any) -> Any:
        """A copy of `record` fit to leave the process: no redacted key or value in it.

        - A redacted slot's value is hidden under its key, and wherever it appears in
          the agent's words or a tool's data, in any spelling the digit parser reads
          ("4821", "4 8 2 1", "four eight two one", "48-21").
        - When a redacted slot holds digits, every caller turn, at every stage, keeps
          its words but has each digit replaced through a per-call cipher
          (`text.mask_digits`): the caller may say the code while confirming,
          correcting or chatting, so no turn is trusted to be free of it. Distinct
          digits stay distinct and spoken digits become numerals, so a replay of the
          journal parses the same lengths, equalities and corrections (S2) while the
          value never leaves the process.
        - The turn that filled a redacted text slot is replaced by a stand-in of the
          same shape, "[redacted: xxxx xxx]": an x a character, its spaces kept, so a
          replay's read-back has the live one's words and their timing.
        """
        turns = {
            turn: "[redacted: " + " ".join(self._stand_in(f) for f in dict.fromkeys(fragments)) + "]"
            for turn, fragments in self.turn_fragments.items()
        }
        texts = sorted(self.secret_texts, key=len, reverse=True)
        # a copy: only turns the call heard teach the cipher, so replay learns the same
        cipher = dict(self._cipher) if self._masks_digits else None
        number_words = dict(self._number_words) if self._masks_numbers else None
        return _redact(record, _Redaction(self.flow.redact_keys, frozenset(self.secret_digits), texts, turns, cipher,
                                          tuple(self._said_values.items()), self._secret_questions, number_words))

    def redact_heard(self, text: str) -> str:
        """A caller's words as they may leave the call the moment they are heard, before
        the turn is read: at a question for a redacted text slot any words may be the
        value, so they leave as their stand-in; elsewhere as `redact` leaves them."""
        asking = self.asking
        if asking is not None and self.ladder.pending_episode is not None and text.strip():
            collect = self.flow.stage(asking[1]).collect
            if any(s in self.flow.redact_keys and self.flow.spec.slots[s].type == "text" for s in collect):
                return f"[redacted: {self._stand_in(text.strip())}]"
        return self.redact({"kind": "caller_utterance", "text": text})["text"]

    def _stand_in(self, fragment: str) -> str:
        if fragment not in self._stand_ins:
            self._stand_ins[fragment] = re.sub(r"\S", "x", " ".join(fragment.split()))
        return self._stand_ins[fragment]

    def _remember_secret(self, slot: str, value: Any, turn: str, fragment: bool = False) -> None:
        if slot not in self.flow.redact_keys or value is None:
            return
        spec = self.flow.spec.slots.get(slot)
        if spec is not None and spec.type in ("digits", "number"):
            # very short values would hide unrelated numbers; caller turns are masked anyway
            if len(str(value)) >= 3:
                self.secret_digits.add(str(value))
        else:
            if len(str(value)) >= 3:
                self.secret_texts.add(str(value))
            if fragment:
                self.turn_fragments.setdefault(turn, []).append(str(value))

    def _learn_digits(self, event: CallerUtterance) -> None:
        if self._masks_digits and event.text:
            mask_digits(event.text, self._cipher)  # the cipher learns this turn's digits
        if self._masks_numbers and event.text:
            mask_number_words(event.text, self._number_words)

    # -- effects from the silence controller -----------------------------------------

    def _absorb(self, effects: list[Effect]) -> None:
        for effect in effects:
            self._effects.append(effect)
            if isinstance(effect, RouteTaken):
                goto = self.flow.route_gotos.get(effect.route)
                if goto is not None:
                    self._take_route(effect.route, goto)
            elif isinstance(effect, SessionClosed):
                self.closed = True
                if not self.ended:
                    self.ended = True
                    self._effects.append(FlowEnded(f"session_closed:{effect.outcome}"))
            elif isinstance(effect, Trace):
                self._observe(effect)

    def _observe(self, trace: Trace) -> None:
        if trace.kind == "prompt_interrupted" and trace.reason == "caller_resumed" and not self.stack:
            # G5: a barge-in counts against every main-flow stage that tracks repair
            for sid in self.active_stages(MAIN):
                counters = self.repair.get(sid)
                if counters is not None:
                    counters.interruptions += 1
                    self._trace("barge_in_counted", sid, stage_id=sid, count=counters.interruptions)

    # -- caller turns ---------------------------------------------------------------

    def _on_utterance(self, event: CallerUtterance) -> None:
        before = len(self._effects)
        intent, value, route, fills = self._interpret(event)
        # a value the learned yes/no reader gave (its yes_no_read trace): the turn's
        # record says so, with its probability, where the console says what read the turn
        learned = any(getattr(e, "kind", None) == "yes_no_read" for e in self._effects[before:])
        self._trace(
            "utterance",
            f"no_usable_input:{event.reason}" if event.reason else intent,
            turn=event.turn,
            matched=event.intent,
            score=event.score,
            ladder_intent=intent,
            **({"reader": event.reader} if event.reader else {}),
            **({"yes_no": event.yes_no, "yes_no_score": round(event.yes_no_score, 3)} if learned else {}),
        )
        effects = self._to_ladder(
            TurnInterpreted(event.turn, event.seq, intent, value=value, route=route),  # type: ignore[arg-type]
            self.now,
        )
        self._absorb(effects)
        answered = any(isinstance(e, Answered) for e in effects)
        if answered:
            for slot, slot_value in fills.items():
                self._fill(slot, slot_value, event.turn)
            if any(value is False and self.flow.spec.slots[slot].type == "yes_no" for slot, value in fills.items()):
                # "no, it's 4 8 2 2" at a confirmation: the no is about the value it
                # confirms, and the new value replaces that one (G3), which withdraws the
                # no with every answer after it, so the confirmation asks about the new value
                self._corrections(event)
        elif event.intent:
            # what the caller asked for, as a fact for overlay triggers (this turn only)
            self.state[f"intent:{event.intent}"] = True
        if not answered and intent != "partial_answer":
            # words that answered the pending question are not also a correction
            self._corrections(event)
        self._boundary(turn=True)
        for key in [k for k in self.state if k.startswith("intent:")]:
            del self.state[key]  # an intent is a fact about this turn only

    def _interpret(self, event: CallerUtterance) -> tuple[str, str | None, str | None, dict]:
        """Map a recognised turn to the silence controller's vocabulary (and slot values)."""
        asking = self.asking
        if asking is not None and self.ladder.pending_episode is not None:
            stage = self.flow.stage(asking[1])
            fills: dict[str, Any] = {}
            partial = False
            for slot in stage.collect:
                spec = self.flow.spec.slots[slot]
                if spec.type == "text" and event.intent is not None:
                    if event.score >= TEXT_ANSWER_INTENT_MIN or event.intent in _TEXT_NOT_A_VALUE:
                        if event.text.strip() and slot in self.flow.redact_keys:
                            # not the value, but it may hold it ("Biscuit? hold on"): a turn
                            # at a redacted text question leaves the call as a stand-in
                            self.turn_fragments.setdefault(event.turn, []).append(event.text.strip())
                        continue  # a recognised request ("when are you open?") is not free text
                    # any words may be the answer: a name that shares a word with a
                    # request ("it's Biscuit the Second", wait_request 0.52) is the value
                if (event.intent in _NOT_A_VALUE.get(spec.type, ()) and event.score >= TEXT_ANSWER_INTENT_MIN):
                    # "one moment" at "how many?" asks for time, it does not book one seat;
                    # "hold on, not yet" at a yes/no question is no "no"
                    continue
                value = self._parse(slot, spec, event.text)
                if value is None and spec.type == "yes_no":
                    # no yes/no word in the words ("please do", "aye"): the learned reader's
                    # reading, where the intent reader saw no request in them
                    value = learned_yes_no(None, event.yes_no, event.intent)
                    if value is not None:
                        self._trace("yes_no_read", "learned", turn=event.turn, slot=slot, value=value,
                                    score=round(event.yes_no_score, 3))
                if value is None:
                    continue
                self._remember_secret(slot, value, event.turn, fragment=True)
                if spec.type == "digits":
                    if not digit_answer_evidence(event.text, answer_phrase=event.intent == "answer"):
                        # a sentence with a number in it, not about the slot ("go forward 10 meters")
                        self._trace("digits_not_an_answer", "not_mostly_digits", turn=event.turn, slot=slot, heard=len(value))
                        continue
                    earlier = self.partial.get(slot, "")
                    replaced = replaced_partial(event.text, value, earlier, spec.min_length, spec.max_length)
                    if replaced is not None:
                        # a correction ("no, sorry, 4 8 2 2"), the whole code again, or digits
                        # that would overrun the code (the caller started again) replace the partial
                        self._trace("partial_replaced", replaced, turn=event.turn, slot=slot)
                        earlier = ""
                    value = earlier + value
                    self._remember_secret(slot, value, event.turn)
                    if spec.min_length and len(value) < spec.min_length:
                        self.partial[slot] = value
                        partial = True
                        continue
                    if spec.max_length and len(value) > spec.max_length:
                        self.partial.pop(slot, None)
                        continue
                    self.partial.pop(slot, None)
                fills[slot] = value
            if fills and all(s in fills or s in self.state for s in stage.collect):
                display = ", ".join(str(v) for v in fills.values())
                return "answer", display, None, fills
            if partial:
                # what was heard so far goes to the ladder (its next reminder counts it);
                # a secret like the rest of the value: redacted wherever it is written
                heard = "".join(self.partial.get(s, "") for s in stage.collect)
                return "partial_answer", heard or None, None, {}
        if event.reason is not None and not event.text.strip():
            return "noise", None, None, {}  # sound with no usable words (L8), not a turn
        intent = event.intent
        if intent is None:
            return "unclear", None, None, {}
        if intent.startswith("route:"):
            return "route", None, intent.removeprefix("route:"), {}
        if intent in _LADDER_INTENTS:
            return intent, None, None, {}
        return "unclear", None, None, {}  # a flow intent (an overlay trigger), not an answer

    def _parse(self, slot: str, spec, text: str) -> Any:
        if spec.type == "digits":
            return parse_digits(text)
        if spec.type == "yes_no":
            return parse_yes_no(text)
        if spec.type == "number":
            return parse_number(text)
        stand_in = _STAND_IN.match(text.strip())
        if stand_in is not None:
            # a replayed journal: the value as the writer hid it, word for word ("xxxx xxxx"),
            # so what the agent says of it is as long as it was live
            return stand_in.group(1)
        return parse_text(text)

    def _fill(self, slot: str, value: Any, turn: str, correction: bool = False) -> None:
        self._remember_secret(slot, value, turn)
        self.state[slot] = value
        self.provenance[slot] = turn
        self._effects.append(SlotFilled(slot, value, turn, correction))
        self._trace("slot_filled", slot, turn=turn, correction=correction)

    def _corrections(self, event: CallerUtterance) -> None:
        """G3: a new value for an already captured slot withdraws downstream confirmations."""
        asking_slots = set()
        if self.asking is not None:
            asking_slots = set(self.flow.stage(self.asking[1]).collect)
        for slot, keys in self.flow.corrections.items():
            if slot in asking_slots or slot not in self.state:
                continue
            spec = self.flow.spec.slots.get(slot)
            if spec is None or spec.type not in ("digits", "number"):
                continue
            value = self._parse(slot, spec, event.text)
            if value is None or value == self.state[slot]:
                continue
            self._remember_secret(slot, value, event.turn)
            if spec.type == "digits" and spec.min_length and len(str(value)) < spec.min_length:
                continue
            self._fill(slot, value, event.turn, correction=True)
            self.state[f"correction:{slot}"] = True
            for key in keys:
                self.state.pop(key, None)
            owner = next(s for s in self.flow.main.order if slot in self.flow.main.stages[s].collect)
            reopened = sorted(downstream(self.flow.main, owner))
            for sid in reopened:
                self._reset_stage(MAIN, sid)
            self._trace("correction", slot, withdrawn=keys, reopened=reopened)

    # -- tools ------------------------------------------------------------------------

    def _request_tool(self, layer: str, stage: StageSpec, tool: str, template: dict) -> None:
        if self.terminated_by is not None:
            self._deny(tool, f"terminated_by_{self.terminated_by}", stage.id)
            return
        active = [self.flow.stage(s) for s in self.active_stages(layer)]
        if not any(tool in s.allow for s in active):
            self._deny(tool, "not_allowed_in_active_stages", stage.id)
            return
        for s in active:
            # L13: only what the caller said can satisfy a commit guard; silence never does
            if s.commit is not None and s.commit.tool == tool and not s.commit.guard.holds(self.state, self.tools_ok):
                self._deny(tool, "commit_guard_unmet", stage.id)
                return
        args = {k: self._render_value(v) for k, v in template.items()}
        self._start_call(tool, args, stage.id)

    def _start_call(self, tool: str, args: dict, stage: str | None, compensates: str | None = None) -> None:
        policy = self.flow.commit_policies.get(tool)
        key = None
        if policy is not None and policy.idempotency_key and compensates is None:
            key = self._render_key(policy.idempotency_key, args)
            if key is None:
                self._trace("idempotency_skipped", "placeholder_without_value", tool=tool)
            elif (tool, key) in self.idempotent:
                # a retried commit with the same key returns the first result, unrun
                self._trace("commit_replayed", tool, tool=tool, stage_id=stage)
                self.tools_ok.add(tool)
                self.state[f"tool:{tool}"] = self.idempotent[(tool, key)]
                return
        if stage is not None and compensates is None:
            # the calling stage's pacing (filler_after_ms) governs this tool wait
            timing = merge_timing([stage_timing(self.flow.stage(s)) for s in self.active_stages()])
            self.ladder.use_policy(self._with_values(self.flow.policy_for(stage, timing)))
        self._calls += 1
        call = f"c{self._calls}"
        self.calls[call] = ToolCallRecord(call, tool, args, stage, key, compensates=compensates)
        self._effects.append(CallTool(call, tool, args, stage, key))
        self._trace("tool_called", tool, call=call, stage_id=stage)
        self._absorb(self._to_ladder(ToolStarted(call, tool), self.now))

    def _on_edit(self, event: EditWording) -> None:
        """New wording from the next prompt on; an edit that does not compile changes nothing."""
        document = self.flow.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        try:
            flow = compile_flow(FlowSpec.model_validate(apply_edits(document, {event.path: event.text}, self.flow)))
        except (ValidationError, FlowCompileError, KeyError, IndexError, TypeError) as exc:
            self._trace("edit_rejected", type(exc).__name__, path=list(event.path))
            return
        self.flow = flow
        stage = self.asking[1] if self.asking else None
        self.ladder.use_policy(self._with_values(flow.policy_for(stage, self.timing) if stage else flow.ladder))
        self._trace("wording_edited", "designer", path=list(event.path))

    def _on_tool_request(self, event: RequestTool) -> None:
        """A tool asked for outside a stage's own call (the designer, a scenario)."""
        stages = self.active_stages()
        holder = next((self.flow.stage(s) for s in stages if event.tool in self.flow.stage(s).allow), None)
        if holder is None:
            reason = f"terminated_by_{self.terminated_by}" if self.terminated_by else "not_allowed_in_active_stages"
            self._deny(event.tool, reason, None)
            return
        self._request_tool(self.driving, holder, event.tool, dict(event.args or {}))
        self._boundary()

    def _on_tool_result(self, event: ToolResult) -> None:
        record = self.calls.get(event.call)
        self._absorb(self._to_ladder(ToolFinished(event.call, event.outcome), self.now))
        if record is None or record.status != "running":
            return
        record.status = event.outcome
        result = event.result or {}
        if event.outcome == "ok":
            self.tools_ok.add(record.tool)
            self.state[f"tool:{record.tool}"] = result
            if record.key is not None:
                self.idempotent[(record.tool, record.key)] = result
            if record.compensates is not None:
                original = self.calls[record.compensates].tool
                self.state[f"compensated:{original}"] = True
        else:  # failed, or timed out with its outcome unknown
            if record.stage in self.repair:
                self.repair[record.stage].tool_failures += 1
            policy = self.flow.commit_policies.get(record.tool)
            if (
                event.outcome == "failed"
                and policy is not None
                and policy.compensate_with
                and record.compensates is None
            ):
                self._trace("compensating", record.tool, call=record.call)
                self._start_call(policy.compensate_with, record.args, record.stage, compensates=record.call)
        self._boundary()
        if event.outcome != "ok" and self._stranded_by(record):
            self._end_stranded(record, event.outcome)

    def _stranded_by(self, record: ToolCallRecord) -> bool:
        """Can the stage that called the tool never complete now? (Every call ends.)

        Its completion needs a successful call of the tool, the flow escalated
        nowhere, and no call is still running (a compensation may yet complete
        it): waiting cannot help.
        """
        if self.ended or record.stage is None:
            return False
        layer = self.driving
        if record.stage not in self.active_stages(layer):
            return False
        stage = self.flow.stage(record.stage)
        if stage.complete_when is None or record.tool not in stage.complete_when.tools():
            return False
        return not any(c.status == "running" for c in self.calls.values())

    def _end_stranded(self, record: ToolCallRecord, outcome: str) -> None:
        self.ended = True
        reason = f"tool_{outcome}"
        self._effects.append(FlowEnded(f"{reason}:{record.stage}"))
        self._trace("flow_ended", reason, at_stage=record.stage, tool=record.tool)
        # an unknown outcome closes with the ladder's close_pending (it may have happened)
        end = EndSession(self.ladder.policy.close_tool_failed, close_as="closed_incomplete", reason=reason)
        self._absorb(self._to_ladder(end, self.now))

    def _deny(self, tool: str, reason: str, stage: str | None) -> None:
        self._effects.append(ToolDenied(tool, reason, stage))
        self._trace("tool_denied", reason, tool=tool, stage_id=stage)

    # -- the boundary -------------------------------------------------------------------

    def _boundary(self, turn: bool = False) -> None:
        if self.ended:
            return
        if self._pending_resume is not None:
            self._resume(self._pending_resume)
        self._enter_triggered_overlay()
        for _ in range(100):
            if self.ended or not self._step():
                break
        if turn and not self.stack:
            self._count_turns()
            for _ in range(100):
                if self.ended or not self._step():
                    break
        self._publish_timing()

    def _step(self) -> bool:
        """One pass over the driving layer. True if anything changed."""
        layer_name = self.driving
        layer = self.flow.layer(layer_name)
        done = self.done.setdefault(layer_name, {})
        entered = self.entered.setdefault(layer_name, set())
        for sid in self.active_stages(layer_name):
            stage = layer.stages[sid]
            if sid not in entered:
                entered.add(sid)
                self._enter(layer_name, stage)
                return True
            if stage.call is not None and sid not in self.called.setdefault(layer_name, set()):
                if self._call_gate_open(layer_name, stage.call.tool):
                    self.called[layer_name].add(sid)
                    self._request_tool(layer_name, stage, stage.call.tool, stage.call.args)
                    return True
                if sid not in self.call_waiting.setdefault(layer_name, set()):
                    # L13: denied now, called once the caller's confirmation arrives
                    self.call_waiting[layer_name].add(sid)
                    self._deny(stage.call.tool, "commit_guard_unmet", sid)
                    return True
            if stage.reopen is not None and stage.reopen.when.holds(self.state, self.tools_ok):
                self._trace("reopened", sid, stages=list(stage.reopen.stages))
                for target in stage.reopen.stages:
                    for slot in self.flow.stage(target).collect:
                        self.state.pop(slot, None)
                    self._reset_stage(layer_name, target)
                return True
            if layer_name == MAIN and self._escalate(layer, stage):
                return True
            if self._complete(stage):
                done[sid] = "completed"
                self.repair.pop(sid, None)
                for key, value in stage.sets.items():
                    self.state[key] = value
                self._trace("stage_completed", sid, stage_id=sid, layer=layer_name)
                self._after_completion(layer_name, layer, stage)
                return True
        return False

    def _call_gate_open(self, layer: str, tool: str) -> bool:
        for sid in self.active_stages(layer):
            commit = self.flow.stage(sid).commit
            if commit is not None and commit.tool == tool and not commit.guard.holds(self.state, self.tools_ok):
                return False
        return True

    def _enter(self, layer: str, stage: StageSpec) -> None:
        self._trace("stage_entered", stage.id, stage_id=stage.id, layer=layer)
        if layer == MAIN and stage.repair is not None:
            self.repair[stage.id] = RepairCounters()
        interruptible = (stage_timing(stage) or Timing()).interruptible is not False
        if stage.collect and not all(s in self.state for s in stage.collect):
            self._ask(layer, stage, interruptible)
        elif stage.say:
            self._announce(layer, stage, self._render(stage.say), interruptible)

    def _ask(self, layer: str, stage: StageSpec, interruptible: bool) -> None:
        timing = merge_timing([stage_timing(self.flow.stage(s)) for s in self.active_stages(layer)])
        self.ladder.use_policy(self._with_values(self.flow.policy_for(stage.id, timing)))
        self.asking = (layer, stage.id)
        self._say_through_ladder(
            layer,
            stage.id,
            AskQuestion(stage.id, self._render(stage.say or ""), interruptible=interruptible),
        )

    def _announce(self, layer: str, stage: StageSpec, text: str, interruptible: bool) -> None:
        self._say_through_ladder(layer, stage.id, Announce(text, stage.id, interruptible))

    def _say_through_ladder(self, layer: str, stage: str, event: Event) -> None:
        effects = self._to_ladder(event, self.now)
        for effect in effects:
            if isinstance(effect, RequestPrompt) and effect.kind in ("question", "statement"):
                self.prompt_stage[effect.token] = (layer, stage)
                self.prompt_texts[effect.token] = effect.text
        self._absorb(effects)

    def _said(self, stage: str, verbatim: str | None) -> bool:
        """Did the stage's prompt finish (and, for verbatim, play the exact text)?"""
        tokens = [t for t, (_, s) in self.prompt_stage.items() if s == stage]
        if verbatim is not None:
            return self.state.get(f"verbatim:{stage}") is True
        return any(self.ladder.prompts[t].status in FINAL_PROMPT_STATUSES for t in tokens if t in self.ladder.prompts)

    def _complete(self, stage: StageSpec) -> bool:
        if stage.verbatim is not None:
            self._check_verbatim(stage)
        conditions = []
        if stage.collect:
            conditions.append(all(self.state.get(s) is not None for s in stage.collect))
        if stage.verbatim is not None:
            conditions.append(self.state.get(f"verbatim:{stage.id}") is True)
        if stage.complete_when is not None:
            conditions.append(stage.complete_when.holds(self.state, self.tools_ok))
        if stage.terminal or not conditions:
            if stage.say and not stage.collect:
                conditions.append(self._said(stage.id, stage.verbatim))
        return all(conditions)

    def _check_verbatim(self, stage: StageSpec) -> None:
        """G2: judge what was actually played, once per finished prompt of the stage."""
        key = f"verbatim:{stage.id}"
        if self.state.get(key) is True:
            return  # once passed, a later turn does not reset it
        for token, (_, sid) in list(self.prompt_stage.items()):
            record = self.ladder.prompts.get(token)
            if sid != stage.id or record is None or record.status not in FINAL_PROMPT_STATUSES:
                continue
            if self.state.get(f"verbatim_checked:{token}"):
                continue
            self.state[f"verbatim_checked:{token}"] = True
            played = self._played_text(token)
            similarity = word_similarity(played, stage.verbatim or "") if played is not None else 0.0
            passed = played is not None and verbatim_passes(played, stage.verbatim or "")
            self.state[key] = passed
            self._trace("verbatim_checked", "passed" if passed else "failed", stage_id=stage.id, similarity=round(similarity, 3), token=token)
            if passed:
                return
            attempts = self.verbatim_attempts.get(stage.id, 1)
            if attempts >= MAX_VERBATIM_ATTEMPTS:
                self._trace("verbatim_gave_up", stage.id, attempts=attempts)
                return
            self.verbatim_attempts[stage.id] = attempts + 1
            # the posture asks for the exact text again: say it as written
            layer = self.prompt_stage[token][0]
            interruptible = (stage_timing(stage) or Timing()).interruptible is not False
            self._announce(layer, stage, stage.verbatim or "", interruptible)

    def _played_text(self, token: int) -> str | None:
        """What the endpoint played: the transcript it reported, else the full text."""
        record = self.ladder.prompts[token]
        if record.status is not PromptStatus.COMPLETED:
            return None  # cut by barge-in, cancelled or failed: not played in full
        return self.transcripts.get(token, self.prompt_texts.get(token))

    def _after_completion(self, layer_name: str, layer: Layer, stage: StageSpec) -> None:
        if self.asking == (layer_name, stage.id):
            self.asking = None
        if not stage.terminal:
            return
        if layer_name == MAIN:
            self._end("terminal_stage", stage.id)
            return
        done = self.done[layer_name]
        if all(t in done for t in layer.terminals()):
            self._pending_resume = layer_name
            self._trace("overlay_completed", layer_name, resume=layer.resume)
            self._resume(layer_name)

    def _escalate(self, layer: Layer, stage: StageSpec) -> bool:
        counters = self.repair.get(stage.id)
        repair = stage.repair
        if counters is None or repair is None:
            return False
        reprompt = counters.turns >= repair.reprompt_after
        escalate = counters.turns >= repair.escalate_after or (
            repair.escalate_after_interruptions is not None
            and counters.interruptions >= repair.escalate_after_interruptions
        ) or (
            repair.escalate_after_tool_failures is not None
            and counters.tool_failures >= repair.escalate_after_tool_failures
        )
        self.state[f"repair:{stage.id}:reprompt"] = reprompt
        self.state[f"repair:{stage.id}:escalate"] = escalate
        if not escalate or repair.escalate_to is None:
            return False
        self.done[layer.name][stage.id] = "escalated"
        self.repair.pop(stage.id, None)
        self._trace("escalated", stage.id, stage_id=stage.id, to=repair.escalate_to, **vars(counters))
        if self.asking == (layer.name, stage.id):
            self.asking = None
        return True

    def _count_turns(self) -> None:
        for sid in self.active_stages(MAIN):
            if sid in self.repair and sid in self.entered.get(MAIN, set()):
                self.repair[sid].turns += 1

    def _reset_stage(self, layer: str, stage: str) -> None:
        self.done.setdefault(layer, {}).pop(stage, None)
        self.entered.setdefault(layer, set()).discard(stage)
        self.called.setdefault(layer, set()).discard(stage)
        self.call_waiting.setdefault(layer, set()).discard(stage)
        self.state.pop(f"verbatim:{stage}", None)
        self.verbatim_attempts.pop(stage, None)
        for token, (_, sid) in list(self.prompt_stage.items()):
            if sid == stage:
                del self.prompt_stage[token]

    def _take_route(self, route: str, goto: str) -> None:
        if self.asking is not None:
            layer, sid = self.asking
            self.done.setdefault(layer, {})[sid] = "route"
            self.asking = None
        self.state[f"route:{route}"] = True
        self.state[f"route_goto:{goto}"] = True
        self._trace("route_taken", route, to=goto)

    # -- digressions ------------------------------------------------------------------

    def _enter_triggered_overlay(self) -> None:
        for overlay in self.flow.overlays:
            if overlay.name in self.stack or overlay.trigger is None:
                continue
            if overlay.trigger.holds(self.state, self.tools_ok):
                self.stack.append(overlay.name)
                for sid in overlay.order:
                    self._reset_stage(overlay.name, sid)
                self.asking = None
                self._trace("overlay_entered", overlay.name, layer=overlay.name)
                return

    def _resume(self, name: str) -> None:
        self._pending_resume = None
        layer = self.flow.layer(name)
        if name in self.stack:
            self.stack.remove(name)
        beneath = self.driving
        self._trace("overlay_resumed", layer.resume, layer=name, beneath=beneath)
        if layer.resume == "terminate":
            self.terminated_by = name
            self.stack.clear()
            self.state["flow:terminated"] = True
            self._end("terminated", name)
            return
        if layer.resume == "restart":
            for sid in self.flow.layer(beneath).order:
                self._reset_stage(beneath, sid)
            if beneath == MAIN:
                self.repair.clear()
        else:
            # previous: the layer beneath continues; an unanswered question is asked again
            for sid in self.active_stages(beneath):
                stage = self.flow.stage(sid)
                if stage.collect and not all(s in self.state for s in stage.collect):
                    self.entered.setdefault(beneath, set()).discard(sid)

    def _end(self, reason: str, where: str) -> None:
        if self.ended:
            return
        self.ended = True
        self._effects.append(FlowEnded(f"{reason}:{where}"))
        self._trace("flow_ended", reason, at_stage=where)
        self._absorb(self._to_ladder(EndSession(), self.now))

    def _publish_timing(self) -> None:
        if self.ended:
            return
        timing = merge_timing([stage_timing(self.flow.stage(s)) for s in self.active_stages()])
        if timing != self.timing:
            self.timing = timing
            data = {} if timing is None else timing.model_dump(exclude_none=True)
            self._effects.append(TimingChanged(data))

    # -- rendering and tracing ----------------------------------------------------------

    def _spoken(self, key: str, value: Any) -> str:
        spec = self.flow.spec.slots.get(key)
        if spec is not None and spec.type == "digits":
            return " ".join(str(value))
        return str(value)

    def _fill_placeholders(self, text: str, hidden: bool = False, keep: tuple[str, ...] = ()) -> str:
        """`{slot}` replaced by the slot's spoken value; unfilled ones stay (see _render),
        and those named in `keep`. `hidden`: a redacted slot's value as the journal shows it."""

        def value(m: re.Match) -> str:
            name = m.group(1)
            if name in keep or self.state.get(name) is None:
                return m.group(0)
            return REDACTED if hidden and name in self.flow.redact_keys else self._spoken(name, self.state[name])

        filled = _PLACEHOLDER.sub(value, text)
        if (not hidden and filled != text and not _PLACEHOLDER.fullmatch(text.strip())
                and any(m.group(1) in self.flow.redact_keys for m in _PLACEHOLDER.finditer(text))):
            self._said_values[filled] = self._fill_placeholders(text, hidden=True, keep=keep)
            if len(self._said_values) > 256:
                del self._said_values[next(iter(self._said_values))]
        return filled

    def _render(self, text: str) -> str:
        """What the agent says: slot values filled in, and a sentence whose placeholder
        has no value left out (traced), so braces are never read aloud."""
        filled = self._fill_placeholders(text)
        if not _PLACEHOLDER.search(filled):
            return filled
        unfilled = sorted({m.group(1) for m in _PLACEHOLDER.finditer(filled)})
        self._trace("placeholder_unfilled", "sentence_left_out", placeholders=unfilled)
        dropped = drop_placeholders(filled)
        if filled in self._said_values:
            self._said_values[dropped] = drop_placeholders(self._said_values[filled])
        return dropped

    def _with_values(self, policy: LadderPolicy) -> LadderPolicy:
        """The question's ladder with slot values in its wording ("{routes}" is the
        controller's, composed when the prompt is spoken)."""
        texts = {name: text for name in LADDER_TEXT_FIELDS if (text := getattr(policy, name)) is not None}
        if not any("{" in (s.prompt or "") for s in policy.stages) and not any("{" in t for t in texts.values()):
            return policy

        def fill(text: str) -> str:
            return self._fill_placeholders(text, keep=("routes", "route"))

        stages = tuple(s.model_copy(update={"prompt": fill(s.prompt)}) if s.prompt else s for s in policy.stages)
        update = {name: fill(text) for name, text in texts.items() if "{" in text}
        return policy.model_copy(update={"stages": stages, **update})

    def _render_value(self, value: Any) -> Any:
        if isinstance(value, str):
            whole = _PLACEHOLDER.fullmatch(value)
            if whole:
                return self.state.get(whole.group(1))
            return _PLACEHOLDER.sub(lambda m: str(self.state.get(m.group(1), "")), value)
        return value

    def _render_key(self, template: str, args: dict) -> str | None:
        missing = False

        def value(m: re.Match) -> str:
            nonlocal missing
            name = m.group(1)
            found = args.get(name, self.state.get(name))
            if found is None:
                missing = True
                return ""
            return str(found)

        key = _PLACEHOLDER.sub(value, template)
        return None if missing else key

    def _trace(self, kind: str, reason: str, **detail) -> None:
        # `stage` in a trace is always the silence ladder's rung; the flow's stage id
        # goes in the detail, as flow_stage
        flow_stage = detail.pop("stage_id", None)
        if flow_stage is not None:
            detail["flow_stage"] = flow_stage
        turn = detail.pop("turn", None)
        token = detail.pop("token", None)
        ep = self.ladder.episode
        self._effects.append(
            Trace(
                kind=kind,
                reason=reason,
                at=self.now,
                state=self.ladder.state.value,
                question=ep.question if ep else None,
                episode=ep.id if ep else None,
                token=token,
                turn=turn,
                stage=self.ladder.current_stage,
                detail={"layer": self.driving, **detail},
            )
        )


@dataclass(frozen=True)
class _Redaction:
    keys: frozenset[str]  # redacted slot names
    digits: frozenset[str]  # values of redacted digit slots
    texts: list[str]  # values of redacted text slots, longest first
    turns: dict[str, str]  # caller turn -> the stand-in for its words
    cipher: dict[str, str] | None  # digit stand-ins for caller words, when digits are redacted
    said: tuple[tuple[str, str], ...] = ()  # the agent's words with a value in them -> hidden
    questions: frozenset[str] = frozenset()  # questions whose answer is a redacted value
    number_words: dict[str, str] | None = None  # tens and teens stand-ins, when a count is redacted


def _redact(value: Any, r: _Redaction) -> Any:
    if isinstance(value, dict):
        out = {}
        caller_words = value.get("kind") == "caller_utterance"
        for k, v in value.items():
            if k == "text" and value.get("turn") in r.turns:
                out[k] = r.turns[value["turn"]]
            elif k == "text" and caller_words and r.cipher is not None and isinstance(v, str):
                out[k] = mask_digits(v, r.cipher)
                if r.number_words is not None:
                    out[k] = mask_number_words(out[k], r.number_words)
            elif v is not None and (_sensitive_key(k, r.keys) or (k == "value" and value.get("slot") in r.keys)
                                    or (k == "value" and value.get("effect") == "Answered" and value.get("question") in r.questions)):
                out[k] = REDACTED
            else:
                out[k] = _redact(v, r)
        return out
    if isinstance(value, (list, tuple)):
        return [_redact(v, r) for v in value]
    if isinstance(value, str):
        for said, hidden in r.said:
            if said in value:
                value = value.replace(said, hidden)
        value = hide_digit_values(value, r.digits, REDACTED)
        for secret in r.texts:
            value = value.replace(secret, REDACTED)
        return value
    return value


def _sensitive_key(key: str, keys: frozenset[str]) -> bool:
    return key in keys or any(key.endswith(f":{k}") for k in keys)
