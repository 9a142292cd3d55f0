"""Barge-in over the lab's echo path, recorded once and replayed offline.

`record`: calls in the audio lab (a private PulseAudio server, `audio_lab`) with the
speaker looped back into the microphone. The flow is the shipped reference_code flow
without its disclosure, so the first question starts about 2.6 s into the call. The
caller is silent, or says "my code is four eight two one" (piper at 0.8) the moment the
question is asked (`--talk-at -1`: its audio follows ~100 ms later), as its audio
starts (`--talk-at 0`) or seconds into it; `--gate envelope` runs the live call with the
bar as it was before (`EnvelopeGate`). Each call keeps, beside the
backend's own mic.wav, out.wav and journal, `handoff.npz`: every block the speaker
wrote and every block the microphone heard, in the order the backend took them (the
echo canceller is fed in exactly that order), and `live.json`: what the live gate said.

`replay`: each recorded call through `EchoCanceller` + an echo gate + Silero VAD, as
`voices.backends.voice` accepts a barge-in (`BARGE_IN_EVIDENCE` frames louder than the
echo estimate among the last `EVIDENCE_WINDOW` when a VAD segment is open and began
while the agent was audible). Counts, per condition: callers heard and how soon after
they began (over `LATE_MS`: late), caller turns found in calls where nobody spoke, and
how near a silent call came to one (the most frames louder than the echo estimate among
any `EVIDENCE_WINDOW`), for the old bar (`EnvelopeGate`) and the shipped one (`EchoGate`).
The canceller and the VAD do not depend on the gate, so a call replays bit for bit up to
its first caller turn; after a live cut, the agent's audio stops, so a gate slower than
the live one is judged on audio it would not have had.

    python tests/echo_lab.py record DIR --caller silent --volume 40 --runs 3
    python tests/echo_lab.py replay DIR...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import deque
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

SHORT_LADDER = [
    {"name": "quiet_wait", "wait_ms": 1500},
    {"name": "gentle_check", "wait_ms": 1500, "prompt": "Take your time. Would you like more time?"},
    {"name": "alternative_route", "wait_ms": 1500, "prompt": "We can carry on without the code.", "routes": ["continue_without_code"]},
    {"name": "safe_close", "wait_ms": 500, "prompt": "Nothing has been changed. Goodbye.", "closes": True},
]
CODE_WORDS = "my code is four eight two one"
CALLER_LEAD_S = 0.1  # the caller's WAV starts with this much silence
LATE_MS = 1000.0  # a caller turn later than this after the caller began is late


# -- recording ---------------------------------------------------------------------------


class Handoff:
    """Every far block and mic block in the order the backend took them."""

    def __init__(self, backend) -> None:
        self.kinds: list[int] = []  # 0 far, 1 mic
        self.stamps: list[float] = []  # far: its rate; mic: session ms of its first sample
        self.blocks: list[np.ndarray] = []
        self.live: list[tuple[float, float, float, object, float]] = []
        real_played, real_frames, real_listen = backend.played, backend.on_frames, backend._listen

        def played(block, rate):
            self.kinds.append(0), self.stamps.append(float(rate)), self.blocks.append(np.asarray(block, np.float32).reshape(-1).copy())
            real_played(block, rate)

        def on_frames(frames, t_ms):
            self.kinds.append(1), self.stamps.append(float(t_ms)), self.blocks.append(np.asarray(frames, np.float32).reshape(-1).copy())
            real_frames(frames, t_ms)

        def listen(frames, t_ms):
            from voices.echo import power

            far_p = backend.echo.far_recent_power if backend.echo is not None else 0.0
            real_listen(frames, t_ms)
            self.live.append((t_ms, power(frames), far_p, backend._evidence[-1][1] if backend._evidence else None, backend.gate.coupling_db))

        backend.played, backend.on_frames, backend._listen = played, on_frames, listen

    def save(self, folder: Path) -> None:
        lengths = np.array([len(b) for b in self.blocks], np.int64)
        np.savez_compressed(
            folder / "handoff.npz", kinds=np.array(self.kinds, np.int8), stamps=np.array(self.stamps),
            lengths=lengths, audio=np.concatenate(self.blocks) if self.blocks else np.zeros(0, np.float32),
        )
        (folder / "live.json").write_text(json.dumps([list(map(lambda v: v if not isinstance(v, np.bool_) else bool(v), r)) for r in self.live]))


def record(out: Path, caller: str, volume: int, runs: int, talk_at_s: float, gate: str = "residue") -> None:
    from audio_lab import PulseLab
    from test_e2e_audio import caller_wav
    from voices.backends.voice import VoiceModels

    models = VoiceModels.load(deterministic=True)
    lab = PulseLab()
    lab.start()
    out.mkdir(parents=True, exist_ok=True)
    code = caller_wav(models, out, "caller_code", CODE_WORDS) if caller == "code" else None
    try:
        for _ in range(runs):
            stem = f"silent-{volume}" if caller == "silent" else f"code{talk_at_s:g}-{volume}"
            taken = [int(p.name.rsplit("-", 1)[1]) for p in out.glob(f"{stem}-*")]
            name = f"{stem}-{1 + max(taken, default=0):02d}"
            folder = out / name
            one_call(lab, models, folder, code, volume, talk_at_s, gate)
            print(name, json.loads((folder / "meta.json").read_text()), flush=True)
    finally:
        lab.stop()


def one_call(lab, models, folder: Path, code: Path | None, volume: int, talk_at_s: float, gate: str = "residue") -> None:
    from test_e2e_audio import Call, early_question_flow, run

    floor = lab.noise_floor()
    call = Call(lab, models, early_question_flow(stages=SHORT_LADDER), folder / "take")
    if gate == "envelope":
        call.backend.gate = EnvelopeGate()  # the live call as it was before
    handoff = Handoff(call.backend)
    marks: dict[str, float] = {}

    def question():
        return next((p for p in call.session.runtime.ladder.prompts.values() if p.kind == "question"), None)

    async def scenario():
        await call.session.start()
        if code is None:
            await call.until(call.session.closed.is_set, 60)
            return
        # talk_at_s < 0: the moment the core asks the question (its audio follows the
        # synthesis, ~100 ms later); else that long after its audio started playing
        ready = (lambda p: True) if talk_at_s < 0 else (lambda p: p.status.value == "started")
        await call.until(lambda: question() is not None and ready(question()))
        marks["question"] = call.session.now_ms()
        if talk_at_s > 0:
            await asyncio.sleep(talk_at_s)
        marks["talk"] = call.session.now_ms()
        await call.say(code)
        await call.until(lambda: call.session.runtime.asking == ("main", "confirm_code") or call.session.closed.is_set(), 30)
        marks["end"] = call.session.now_ms()

    try:
        with lab.echo_path(volume_percent=volume):
            run(call, scenario)
    finally:
        floor.stop()
    handoff.save(folder)
    from sessions.journal import read_journal

    journal = read_journal(folder / "take")
    inputs = [(r["kind"], r.get("t_ms"), r.get("event")) for r in journal.inputs()]
    notes = [r for r in journal.decisions() if r.get("effect") == "Observation" and r.get("kind") == "speech_not_a_turn"]
    meta = {
        "volume": volume,
        "live_gate": gate,
        "stream_delay_ms": call.backend.output.output_latency_ms + call.backend.mic.input_latency_ms,
        "caller": "silent" if code is None else "code",
        "talk_at_s": talk_at_s if code is not None else None,
        "question_ms": marks.get("question"),
        "caller_start_ms": marks["talk"] + CALLER_LEAD_S * 1000 if "talk" in marks else None,
        "turns_started": [t for k, t, _ in inputs if k == "turn_started"],
        "interrupted": [t for k, t, _ in inputs if k == "playback_interrupted"],
        "code": call.session.runtime.state.get("reference_code"),
        "not_a_turn": [{k: n.get(k) for k in ("why", "t_ms", "start_ms", "end_ms") if k in n} for n in notes],
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))


# -- replay ------------------------------------------------------------------------------


def load(folder: Path):
    data = np.load(folder / "handoff.npz")
    ends = np.cumsum(data["lengths"])
    starts = ends - data["lengths"]
    blocks = [(int(k), float(s), data["audio"][a:b]) for k, s, a, b in zip(data["kinds"], data["stamps"], starts, ends)]
    return blocks, json.loads((folder / "meta.json").read_text())


def heard_frames(folder: Path) -> tuple[list[tuple], dict]:
    """A recorded call through the canceller and the VAD (neither depends on the gate):
    per recogniser frame (t_ms, out_p, far_p, agent_audible, speech, events)."""
    from voices.backends.voice import PRE_ROLL_MS, SPECULATE_AFTER_MS
    from voices.echo import EchoCanceller, power
    from voices.vad import SileroVad, SpeechSegmenter

    blocks, meta = load(folder)
    echo = EchoCanceller(enabled=True, stream_delay_ms=meta.get("stream_delay_ms") or 0.0)
    segmenter = SpeechSegmenter(SileroVad(), end_of_speech_ms=700, pre_roll_ms=PRE_ROLL_MS,
                                report_pauses=True, pause_report_ms=SPECULATE_AFTER_MS)
    rows = []
    for kind, stamp, x in blocks:
        if kind == 0:
            echo.far(x, int(stamp))
            continue
        frames, t_ms = echo.near(x, stamp)
        if not len(frames):
            continue
        far_p, audible = echo.far_recent_power, echo.agent_audible
        events = [(e.kind, e.t_ms, e.speech_start_ms) for e in segmenter.feed(frames, t_ms)
                  if e.kind in ("speech_started", "speech_ended")]
        speech = segmenter.last_probability >= segmenter.threshold
        rows.append((t_ms, power(frames), far_p, audible, speech, events))
    return rows, meta


_CACHE: dict[Path, tuple[list[tuple], dict]] = {}


def replay_call(folder: Path, make_gate, *, trace: bool = False) -> dict:
    """One recorded call through the canceller, `make_gate()` and the VAD, as the
    backend takes a barge-in (`_listen`, `_segment_started`, `_maybe_accept`): the
    caller turns it would have started."""
    from voices.backends.voice import BARGE_IN_EVIDENCE, EVIDENCE_WINDOW

    if folder not in _CACHE:
        _CACHE[folder] = heard_frames(folder)
    frames, meta = _CACHE[folder]
    gate = make_gate()
    seg: dict | None = None
    evidence: deque = deque(maxlen=EVIDENCE_WINDOW)
    turns, rejected, rows = [], [], []
    for t_ms, out_p, far_p, audible, speech, events in frames:
        ev = gate.frame(out_p, far_p)
        if trace:
            rows.append((t_ms, out_p, far_p, ev, gate.coupling_db))
        for kind, at_ms, start_ms in events:
            if kind == "speech_started":
                seg = {"start_ms": start_ms, "suspect": audible, "accepted": None}
                if not audible:
                    seg["accepted"] = at_ms
                    turns.append({"t_ms": at_ms, "start_ms": start_ms, "barge_in": False})
                elif len(strong := [t for t, e in evidence if e]) >= BARGE_IN_EVIDENCE:
                    seg["accepted"] = at_ms  # the evidence before this frame (`_segment_started`)
                    turns.append({"t_ms": at_ms, "start_ms": start_ms, "barge_in": True, "evidence_from": strong[0]})
            else:
                if seg is not None and seg["accepted"] is None:
                    rejected.append(seg["start_ms"])
                seg = None
        if ev is None:
            ev = speech
        evidence.append((t_ms, ev))
        if seg is not None and seg["accepted"] is None:
            strong = [t for t, e in evidence if e]
            if len(strong) >= BARGE_IN_EVIDENCE:
                seg["accepted"] = t_ms
                turns.append({"t_ms": t_ms, "start_ms": seg["start_ms"], "barge_in": True, "evidence_from": strong[0]})
    out = {"name": folder.name, "meta": meta, "turns": turns, "rejected": rejected}
    if trace:
        out["rows"] = rows
    return out


class EnvelopeGate:
    """The echo gate before its bar came from the canceller's recent residue: an upper
    envelope of the residue that starts at 0 dB and comes down 6 dB a second (the
    baseline the replay compares with)."""

    def __init__(self, *, margin_db: float = 10.0, decay_db_per_s: float = 6.0, min_dbfs: float = -50.0, frame_ms: float = 32.0) -> None:
        self.margin = 10 ** (margin_db / 10.0)
        self._decay = 10 ** (-decay_db_per_s * frame_ms / 1000.0 / 10.0)
        self._floor = 10 ** (min_dbfs / 10.0)
        self.coupling = 1.0
        self._rise = 10 ** 0.1
        self._min_coupling = 10 ** (-70 / 10.0)

    def frame(self, out_p: float, far_p: float) -> bool | None:
        from voices.echo import AUDIBLE_FAR_DBFS, dbfs

        if dbfs(far_p) <= AUDIBLE_FAR_DBFS:
            return None
        evidence = out_p > self._floor and out_p > far_p * self.coupling * self.margin
        if not evidence:
            ratio = min(out_p / far_p, self.coupling * self._rise)
            self.coupling = max(ratio, self.coupling * self._decay, self._min_coupling)
        return evidence

    @property
    def coupling_db(self) -> float:
        from voices.echo import dbfs

        return round(dbfs(self.coupling), 1)


def gates() -> dict:
    from voices.echo import EchoGate

    return {"envelope (before)": EnvelopeGate, "residue (after)": EchoGate}


def near_miss(result: dict) -> int:
    """The most frames louder than the echo estimate among any EVIDENCE_WINDOW in a row
    while the agent was audible: BARGE_IN_EVIDENCE of them, and a VAD segment open, is a
    caller turn."""
    from voices.backends.voice import EVIDENCE_WINDOW

    ev = [bool(row[3]) for row in result["rows"]]
    return max((sum(ev[max(0, i - EVIDENCE_WINDOW + 1) : i + 1]) for i in range(len(ev))), default=0)


def verdict(result: dict) -> tuple[str, float | None]:
    """('heard', ms after the caller began) / ('late', ms: over LATE_MS) / ('missed', None) / ('false', t) / ('quiet', None)."""
    meta, turns = result["meta"], result["turns"]
    if meta["caller"] == "silent":
        return ("false", turns[0]["t_ms"]) if turns else ("quiet", None)
    start = meta["caller_start_ms"]  # when the caller's first word began
    early = [t for t in turns if t["t_ms"] < start - 200]
    if early:
        return "false", early[0]["t_ms"]
    later = [t for t in turns if t["t_ms"] >= start - 200]
    if not later:
        return "missed", None
    after = later[0]["t_ms"] - start
    # over a question of 1.5 s, a turn a second after the caller began came as the agent
    # fell silent: what they said over it was lost (the journal's code is then wrong)
    return ("heard" if after <= LATE_MS else "late"), after


def condition(meta: dict) -> str:
    if meta["caller"] == "silent":
        return f"silent {meta['volume']}%"
    at = "as asked" if meta["talk_at_s"] < 0 else f"+{meta['talk_at_s']:g}s"
    return f"caller {at} {meta['volume']}%"


def report(folders: list[Path], make_gate) -> dict:
    table: dict[str, list] = {}
    for folder in folders:
        r = replay_call(folder, make_gate, trace=True)
        v, ms = verdict(r)
        if v == "quiet":
            ms = near_miss(r)  # for a silent caller: the nearest it came to a false turn
        table.setdefault(condition(r["meta"]), []).append((folder.name, v, ms))
    return table


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--caller", choices=("silent", "code"), default="silent")
    rec.add_argument("--volume", type=int, default=40)
    rec.add_argument("--runs", type=int, default=1)
    rec.add_argument("--gate", choices=("residue", "envelope"), default="residue", help="the live call's echo gate")
    rec.add_argument("--talk-at", type=float, default=0.0, help="seconds into the question; -1: when it is asked")
    rep = sub.add_parser("replay")
    rep.add_argument("dirs", type=Path, nargs="+")
    args = ap.parse_args()
    if args.cmd == "record":
        record(args.out, args.caller, args.volume, args.runs, args.talk_at, args.gate)
        return
    folders = sorted({p.parent for d in args.dirs for p in d.rglob("handoff.npz")})
    for name, make in gates().items():
        print(f"== gate {name}")
        for cond, rows in sorted(report(folders, make).items()):
            counts = {}
            for _, v, _ in rows:
                counts[v] = counts.get(v, 0) + 1
            detail = ", ".join(f"{v}{'' if ms is None else f' {ms:.0f}'}" for n, v, ms in rows)
            print(f"{cond:24s} {counts}  [{detail}]")
    print("heard/late N: N ms after the caller began (late: over 1 s); quiet N: at most N frames louder than the echo among 12")


if __name__ == "__main__":
    main()
