"""Simulated callers: a corpus of calls on the virtual clock, one journal a call.

Each call draws its caller from a population (sessions.population) with its own
random stream, seeded by (seed, call index): the same seed gives the same corpus,
byte for byte apart from the header's creation time, in any number of processes.
The caller listens like a person: it times its first words from the observed end
of the question (the prompt's playback_completed), ignores reminders while it
searches, talks over whatever is playing when it is ready, and knows its own
values (so a misheard code is refused at the confirmation).

The agent is the flow's runtime and ladder as shipped; the endpoint, tools and
recogniser are simulated (sessions.virtual), and a turn's intent is read by the
flow's own nearest-example matcher, as in scenarios.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ladder import (
    CallerUtterance,
    Hangup,
    PlaybackCompleted,
    PlaybackInterrupted,
    PromptFailed,
    StartCall,
    TransportFailed,
    TransportRecovered,
    TurnEnded,
    TurnStarted,
)
from ladder.flow.compile import LADDER_DEFAULTS, CompiledFlow
from ladder.flow.runtime import FlowRuntime
from ladder.flow.understanding.shared_intents import flow_intents
from ladder.flow.understanding.text import LexicalMatcher

from .archive import ArchiveWriter, members, store_flow
from .flowfiles import load_flow
from .journal import document_hash
from .population import Population
from .virtual import Playback, ToolPlan, VirtualCall

_MAX_CALL_MS = 20 * 60_000  # a call still going after this is cut (a flow that never ends)

_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve")
# turns about something else, written for no flow in particular
_OFF_TOPIC = (
    "what are your opening hours",
    "sorry I was talking to my son",
    "is this the right number for complaints",
    "can you hear the dog barking",
    "what's the weather doing there",
    "do you know if the shop is open on sunday",
)
_WAIT = ("give me a moment", "hold on let me find it", "one second please", "just a minute")
_READY = ("ok I'm back", "I've got it now", "right I'm here")


def call_seed(seed: int, index: int) -> str:
    """The random stream of one call: independent of how calls are split over processes."""
    return f"lull-corpus:{seed}:{index}"


def simulation_header(flow: CompiledFlow, seed: int, index: int, population: Population) -> dict:
    document = flow.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    return {
        "source": "simulated",
        "flow": flow.spec.name,
        "ladder_policy": flow.ladder.model_dump(mode="json"),
        "flow_document": document,
        "flow_hash": document_hash(document),
        "ladder_defaults": LADDER_DEFAULTS,
        "simulation": {"seed": seed, "call": index, "population": population.name},
        "models": {},
        "devices": {"output": "simulated endpoint", "clock": "virtual"},
    }


@dataclass
class _Question:
    token: int
    stage: str
    kinds: tuple[str, ...]  # the slot types the question collects


class CachedMatcher:
    """The flow's matcher with a memory: simulated callers repeat their phrases.

    Numerals are keyed as one numeral where no example holds one: a character no
    example has never matches, so "it's 3 8 2" and "it's 5 5 5" score alike, exactly."""

    def __init__(self, matcher: LexicalMatcher, examples: dict[str, tuple[str, ...]]) -> None:
        self.matcher = matcher
        self._numerals_inert = not any(ch.isdigit() for phrases in examples.values() for p in phrases for ch in p)
        self._seen: dict[str, tuple[str | None, float]] = {}

    def match(self, text: str) -> tuple[str | None, float]:
        key = re.sub(r"[0-9]", "0", text) if self._numerals_inert else text
        found = self._seen.get(key)
        if found is None:
            if len(self._seen) > 100_000:
                self._seen.clear()
            found = self._seen[key] = self.matcher.match(text)
        return found


class SimulatedCaller:
    """One call: the agent on the virtual clock and a caller drawn from the population."""

    def __init__(self, flow: CompiledFlow, population: Population, rng: random.Random,
                 matcher: CachedMatcher, phrases: dict[str, tuple[str, ...]]) -> None:
        self.flow = flow
        self.pop = population
        self.rng = rng
        self.matcher = matcher
        self.phrases = phrases
        self.runtime = FlowRuntime(flow)
        plans = {}
        for tool in flow.spec.tools:
            failed = rng.random() < population.tool_failure
            plans[tool.name] = ToolPlan(round(population.tool_latency.sample(rng)), "failed" if failed else tool.outcome,
                                        {} if failed else dict(tool.result), tool.timeout_ms)
        playback = Playback(start_delay_ms=population.prompt_start_ms, ms_per_word=population.prompt_ms_per_word)
        self.call = VirtualCall(self.runtime, playback, plans)
        self.truth: dict[str, Any] = {}  # slot -> what the caller would say
        self.silent = rng.random() < population.silent
        self._turns = 0
        self._inputs_seen = 0
        self._records_seen = 0
        self._question: _Question | None = None
        self._asked_of: set[int] = set()  # question tokens the caller has reacted to
        self._next_at: float | None = None
        self._next: Callable[[], None] | None = None
        # act after the next prompt ends: (delay sampler, action)
        self._after_prompt: tuple[Callable[[], float], Callable[[], None]] | None = None
        self.hung_up = False

    # -- the loop ------------------------------------------------------------------

    def run(self) -> VirtualCall:
        call = self.call
        call.feed(StartCall())
        if self.rng.random() < self.pop.media_fault:
            at = float(round(self.rng.uniform(2_000, 40_000)))
            call.push(at, TransportFailed("input", "simulated_media_fault"))
            if self.rng.random() < self.pop.media_recovers:
                call.push(at + round(self.pop.media_outage.sample(self.rng)), TransportRecovered("input"))
        while not self.runtime.ended and call.now < _MAX_CALL_MS:
            self._observe()
            horizon = self._next_at if self._next_at is not None else _MAX_CALL_MS
            if call.step(horizon):
                continue
            self._observe()  # nothing left before the horizon: the caller acts
            if self._next_at is None or self._next is None:
                break  # nothing queued, no timer, no caller action: the call is over
            action, self._next, self._next_at = self._next, None, None
            call.now = max(call.now, horizon)
            action()
        # the agent finishes what it was saying
        for _ in range(10_000):
            if not call.step(call.now + 60_000):
                break
        return call

    def _observe(self) -> None:
        """React to what the agent did since last time: questions asked, prompts ended."""
        call = self.call
        for record in call.records[self._records_seen:]:
            if record.get("effect") == "RequestPrompt" and record.get("kind") == "question":
                stage = record.get("question") or record.get("stage")
                kinds: tuple[str, ...] = ()
                try:
                    kinds = tuple(self.flow.spec.slots[s].type for s in self.flow.stage(stage).collect)
                except KeyError:
                    pass
                self._question = _Question(record["token"], stage, kinds)
                self._next, self._next_at = None, None  # a new question: what was planned is moot
                self._after_prompt = None
        self._records_seen = len(call.records)
        for _, event in call.inputs[self._inputs_seen:]:
            if isinstance(event, (PlaybackCompleted, PlaybackInterrupted, PromptFailed)):
                self._prompt_ended(event)
        self._inputs_seen = len(call.inputs)

    def _prompt_ended(self, event) -> None:
        q = self._question
        heard = not isinstance(event, PromptFailed)
        if q is not None and event.token == q.token and q.token not in self._asked_of:
            if not heard:
                return  # the question never played: the caller waits for the next words
            self._asked_of.add(q.token)
            self._plan_question(q)
        elif self._after_prompt is not None and heard and self._next is None:
            delay, action = self._after_prompt
            self._after_prompt = None
            self._at(self.call.now + delay(), action)

    def _at(self, at: float, action: Callable[[], None]) -> None:
        self._next_at, self._next = float(round(at)), action  # whole milliseconds: journals read easily

    # -- what the caller does -------------------------------------------------------------

    def _plan_question(self, q: _Question) -> None:
        if self.silent or self.hung_up:
            return
        rng, pop = self.rng, self.pop
        kind = q.kinds[0] if q.kinds else "text"
        respond = pop.response(q.stage, kind).sample(rng)
        if rng.random() < pop.hang_up:
            # a caller with a limit to their patience hangs up if not ready by then; the
            # limit is drawn apart from the answer time, so timing's censoring stays fair
            patience = pop.hang_up_after.sample(rng)
            if patience < respond:
                self._at(self.call.now + patience, self._hang_up)
                return
        draw = rng.random()
        if draw < pop.asks_for_time:
            self._at(self.call.now + respond, lambda: self._ask_for_time(q))
        elif draw < pop.asks_for_time + pop.off_topic:
            self._at(self.call.now + respond, lambda: self._off_topic(q))
        else:
            self._at(self.call.now + respond, lambda: self._answer(q))

    def _hang_up(self) -> None:
        self.hung_up = True
        self.call.push(self.call.now, Hangup())

    def _ask_for_time(self, q: _Question) -> None:
        end = self._say(self._pick("wait_request", _WAIT))
        back = end + self.pop.hold.sample(self.rng)
        if self.rng.random() < self.pop.says_ready:
            def ready() -> None:
                self._say(self._pick("ready", _READY))
                self._after_prompt = (lambda: self.pop.response(q.stage, "yes_no").sample(self.rng), lambda: self._answer(q))
            self._at(back, ready)
        else:
            self._at(back, lambda: self._answer(q))

    def _off_topic(self, q: _Question) -> None:
        end = self._say(self.rng.choice(_OFF_TOPIC))
        again = lambda: self._answer(q)  # noqa: E731
        self._after_prompt = (lambda: self.pop.response(q.stage, q.kinds[0] if q.kinds else "text").sample(self.rng), again)
        # an agent that says nothing back still gets its answer, a little later
        self._at(end + 8_000, again)

    def _answer(self, q: _Question) -> None:
        if q.token not in self._asked_of or self._question is not q:
            return  # the agent moved on while the caller was away
        slots = list(self.flow.stage(q.stage).collect)
        if not slots:
            self._say(self.rng.choice(("yes", "okay", "that's fine")))
            return
        if len(slots) == 1 and q.kinds[0] == "digits" and self.rng.random() < self.pop.partial_answer:
            value = self._truth(slots[0], "digits")
            cut = max(1, len(value) // 2)
            self._say(self._digits(value[:cut], misheard=False))
            rest = lambda: self._say(self._digits(value[cut:], misheard=self.rng.random() < self.pop.mishearing))  # noqa: E731
            self._at(self.call.now + self.pop.partial_pause.sample(self.rng), rest)
            return
        parts = [self._spoken(slot, self.flow.spec.slots[slot].type) for slot in slots]
        self._say(" and ".join(parts))

    def _spoken(self, slot: str, kind: str) -> str:
        rng = self.rng
        if kind == "digits":
            return self._digits(self._truth(slot, kind), misheard=rng.random() < self.pop.mishearing)
        if kind == "number":
            n = self._truth(slot, kind)
            if rng.random() < self.pop.mishearing:
                n = n + 1
            said = _NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) and rng.random() < 0.5 else str(n)
            return rng.choice(("{}", "{} please", "I think {}")).format(said)
        if kind == "yes_no":
            right = all(self.runtime.state.get(s) in (None, v) for s, v in self.truth.items())
            return rng.choice(("yes", "yes that's right", "yeah")) if right else rng.choice(("no", "no that's wrong"))
        return rng.choice(("it's about my account", "the usual one", "I'm not sure really"))

    def _truth(self, slot: str, kind: str) -> Any:
        if slot not in self.truth:
            spec = self.flow.spec.slots[slot]
            if kind == "digits":
                low = spec.min_length or 4
                high = spec.max_length or max(low, 8)
                length = self.rng.randint(low, high)
                self.truth[slot] = "".join(str(self.rng.randrange(10)) for _ in range(length))
            else:
                self.truth[slot] = self.rng.choice((1, 1, 2, 2, 2, 3, 3, 4, 5, 6, 8, 10))
        return self.truth[slot]

    def _digits(self, value: str, misheard: bool) -> str:
        rng = self.rng
        if misheard and value:
            i = rng.randrange(len(value))
            value = value[:i] + str((int(value[i]) + 1) % 10) + value[i + 1:]
        if rng.random() < 0.3:
            said = " ".join(_NUMBER_WORDS[int(d)] for d in value)
        else:
            said = " ".join(value)
        return rng.choice(("{}", "it's {}", "um {}")).format(said)

    def _pick(self, intent: str, fallback: tuple[str, ...]) -> str:
        return self.rng.choice(self.phrases.get(intent) or fallback)

    def _say(self, text: str) -> float:
        """The caller speaks `text` from now; returns when the transcript arrives."""
        self._turns += 1
        turn, seq = f"caller-{self._turns}", self._turns
        start = self.call.now
        end = start + round(max(1, len(text.split())) * self.pop.ms_per_word)
        intent, score = self.matcher.match(text)
        self.call.push(start, TurnStarted(turn, seq))
        self.call.push(end, TurnEnded(turn, seq))
        heard = end + round(self.pop.transcript_delay_ms)
        self.call.push(heard, CallerUtterance(turn, seq, text, intent, score))
        return heard


def simulate_call(flow: CompiledFlow, population: Population, seed: int, index: int,
                  matcher: CachedMatcher | None = None) -> SimulatedCaller:
    """One simulated call, run to its end (not written)."""
    intents = flow_intents(flow.spec).own_only()
    matcher = matcher or CachedMatcher(LexicalMatcher(intents, flow.spec.intent_threshold), intents)
    caller = SimulatedCaller(flow, population, random.Random(call_seed(seed, index)), matcher, intents)
    caller.run()
    return caller


def call_folder(out: Path, index: int) -> Path:
    return out / f"call-{index:07d}"


# -- many calls, all cores -------------------------------------------------------------

_worker: dict[str, Any] = {}


def _init_worker(flow_ref: str, flow_base: str | None, population: Population) -> None:
    flow = load_flow(flow_ref, Path(flow_base) if flow_base else None)
    intents = flow_intents(flow.spec).own_only()
    _worker.update(flow=flow, population=population,
                   matcher=CachedMatcher(LexicalMatcher(intents, flow.spec.intent_threshold), intents))


def archive_name(first: int, archive: str) -> str:
    return f"calls-{first:07d}.jsonl.{archive}"


def _run_chunk(out: str, seed: int, indices: range, archive: str | None = None) -> int:
    """Simulate and write `indices`: a session folder each, or one archive for them all."""
    flow, population, matcher = _worker["flow"], _worker["population"], _worker["matcher"]
    if archive is None:
        for index in indices:
            if call_folder(Path(out), index).exists():
                continue  # resumed: written whole before the kill (a cut one was cleared)
            caller = simulate_call(flow, population, seed, index, matcher)
            header = simulation_header(flow, seed, index, population)
            caller.call.write_journal(call_folder(Path(out), index), header, redact=caller.runtime.redact)
        return len(indices)
    path = Path(out) / archive_name(indices.start, archive)
    with ArchiveWriter(path) as writer:
        for index in indices:
            caller = simulate_call(flow, population, seed, index, matcher)
            header = store_flow(Path(out), simulation_header(flow, seed, index, population))
            caller.call.append_journal(writer.stream, path, header, redact=caller.runtime.redact)
    return len(indices)


def _chunks(start: int, calls: int, size: int) -> Iterator[range]:
    for first in range(start, start + calls, size):
        yield range(first, min(first + size, start + calls))


MANIFEST = "corpus.json"  # what made the corpus: a resumed run must make the same calls


class ResumeError(ValueError):
    """A corpus that cannot be resumed as asked (one line: what differs, or what is missing)."""


def _manifest(flow: CompiledFlow, seed: int, population: Population, archive: str | None, chunk: int) -> dict:
    return {"made_by": "lull corpus simulate", "flow": flow.spec.name,
            "flow_hash": simulation_header(flow, seed, 0, population)["flow_hash"], "seed": seed,
            "population": population.model_dump(mode="json"), "archive": archive, "chunk": chunk}


def _ends_closed(data: bytes) -> bool:
    """A simulated journal written to its end: its last line whole, the session closed."""
    if not data.endswith(b"\n"):
        return False
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        return json.loads(last).get("kind") == "session_closed"
    except ValueError:
        return False


def _call_whole(folder: Path) -> bool:
    path = folder / "journal.jsonl"
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - 8192))
            return _ends_closed(f.read())
    except OSError:
        return False


def _chunk_whole(out: Path, indices: range, archive: str | None) -> bool:
    if archive is None:
        return all(_call_whole(call_folder(out, i)) for i in indices)
    path = out / archive_name(indices.start, archive)
    if not path.exists():
        return False
    damage: list[str] = []
    found = list(members(path, damage))
    return not damage and len(found) == len(indices) and all(_ends_closed(m.data) for m in found)


def _clear_chunk(out: Path, indices: range, archive: str | None) -> None:
    """What a killed run left of this chunk: the simulator's own output, made again."""
    if archive is not None:
        (out / archive_name(indices.start, archive)).unlink(missing_ok=True)
        return
    for i in indices:
        folder = call_folder(out, i)
        if folder.exists() and not _call_whole(folder):
            shutil.rmtree(folder)


def simulate_corpus(out: Path, flow_ref: str, flow_base: Path | None, calls: int, seed: int,
                    population: Population, workers: int | None = None,
                    progress: Callable[[int], None] | None = None,
                    archive: str | None = None, per_archive: int = 1000, resume: bool = False) -> tuple[int, int]:
    """Write `calls` simulated journals under `out`: session folders (call-0000000 ...),
    or with `archive` ("gz" or "zst") archives of `per_archive` calls each, the flow
    stored once in out/flows/; returns how many calls the corpus holds, and how many of
    them were kept from before (resumed).

    With `resume`, a corpus a killed run left (or a smaller one) is completed: its
    manifest must name the same flow, seed, population and archive kind; calls already
    written whole are kept, what a kill cut short is made again (the same calls: each
    call's seed is its own)."""
    out.mkdir(parents=True, exist_ok=True)
    workers = workers or os.cpu_count() or 1
    flow = load_flow(flow_ref, flow_base)
    if archive is not None:  # archives small enough that every core reads one
        chunk = max(1, min(per_archive, -(-calls // (workers * 2))))
    else:
        chunk = max(1, min(200, calls // (workers * 8) or 1))
    mine = _manifest(flow, seed, population, archive, chunk)
    manifest = out / MANIFEST
    done = 0
    if resume:
        try:
            stored = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise ResumeError(f"{out}: no readable {MANIFEST}: not a corpus `lull corpus simulate` began") from None
        for key in ("flow", "flow_hash", "seed", "population", "archive"):
            if stored.get(key) != mine[key]:
                what = "the population file's fields" if key == "population" else repr(stored.get(key))
                raise ResumeError(f"{out}: made with {key} {what}, not this run's; resume with the same "
                                  "--flow, --seed, --population and --archive")
        chunk = mine["chunk"] = stored["chunk"] if archive is not None else chunk
    manifest.write_text(json.dumps(mine, indent=1), encoding="utf-8")
    todo = []
    for indices in _chunks(0, calls, chunk):
        if resume and _chunk_whole(out, indices, archive):
            done += len(indices)
            continue
        if resume:
            _clear_chunk(out, indices, archive)
        todo.append(indices)
    kept = done
    if progress and done:
        progress(done)
    base = str(flow_base) if flow_base else None
    if workers == 1:
        _init_worker(flow_ref, base, population)
        for indices in todo:
            done += _run_chunk(str(out), seed, indices, archive)
            if progress:
                progress(done)
        return done, kept
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(flow_ref, base, population)) as pool:
        futures = [pool.submit(_run_chunk, str(out), seed, indices, archive) for indices in todo]
        for future in futures:
            done += future.result()
            if progress:
                progress(done)
    return done, kept


__all__ = ["MANIFEST", "ResumeError", "SimulatedCaller", "call_folder", "call_seed", "simulate_call", "simulate_corpus",
           "simulation_header"]
