"""The `lull` command line (Typer).

Every command reports bad input as one line on stderr (what, where, what was
expected) and exits non-zero; no traceback reaches the user.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sessions.flowfiles import (
    DEFAULT_FLOW,
    FlowFileError,
    check_file,
    library_flow_path,
    load_flow,
    resolve_flow,
)
from sessions.incidents import (
    Incident,
    IncidentError,
    Outcome,
    library_paths,
    load_incident,
    run_incident,
)
from sessions.scenarios import (
    ScenarioError,
    ScenarioOutcome,
    load_scenario,
    run_scenario,
)

app = typer.Typer(
    name="lull",
    help="Design how a voice agent behaves when the caller goes quiet.",
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode="rich",
)
incidents_app = typer.Typer(
    help="The incident library: race, hold, media-failure and deadline schedules run on a virtual clock.",
    no_args_is_help=True,
)
app.add_typer(incidents_app, name="incidents")
flow_app = typer.Typer(
    help="Flow files: the conversation graph, its voice timing and the silence ladder.",
    no_args_is_help=True,
)
app.add_typer(flow_app, name="flow")

# piped output keeps whole rows: tables are for reading and for grep
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def fail(message: str, code: int = 2) -> None:
    """One clear line and a non-zero exit."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@app.callback(invoke_without_command=True)
def main_callback(ctx: typer.Context) -> None:
    """Design how a voice agent behaves when the caller goes quiet.

    With no command, Lull opens the console on its default flow (the reference-code
    task): rehearse it live, edit its prompts, run incidents.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(rehearse, flow=DEFAULT_FLOW, backend="text", headless=False, journal=None, verbose=False)


def _resolve_incidents(names: list[str] | None) -> list[Incident]:
    library = {p.stem: p for p in library_paths()}
    if not names:
        return [load_incident(p) for p in library.values()]
    chosen: list[Incident] = []
    for name in names:
        path = Path(name)
        if name in library:
            chosen.append(load_incident(library[name]))
        elif path.suffix == ".json" or path.exists():
            if not path.exists():
                raise IncidentError(f"{name}: no such incident file")
            chosen.append(load_incident(path))
        else:
            raise IncidentError(
                f"{name}: not an incident in the library or a .json file; "
                "run 'lull incidents list' to see the names"
            )
    return chosen


@incidents_app.command("list")
def list_incidents(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the incidents shipped with Lull.

    Example: lull incidents list
    """
    try:
        incidents = [load_incident(p) for p in library_paths()]
    except IncidentError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(
            json.dumps(
                [{"name": i.name, "title": i.title, "source": i.source} for i in incidents],
                indent=2,
            )
        )
        return
    table = Table(title="Incident library", title_justify="left")
    table.add_column("incident", style="bold")
    table.add_column("what it rehearses")
    table.add_column("prohibited results")
    for i in incidents:
        table.add_row(i.name, i.title, "; ".join(p.what for p in i.prohibit))
    out.print(table)


@incidents_app.command("run")
def run_incidents(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Library names or paths to incident .json files (default: the whole library)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record",
            metavar="DIR",
            help="Write each run as a session folder DIR/<incident>/journal.jsonl.",
        ),
    ] = None,
) -> None:
    """Run incidents on a virtual clock; exit 1 if any fails.

    Examples:
      lull incidents run
      lull incidents run seven_waits duplicate_timeout
      lull incidents run my_incident.json --json
      lull incidents run seven_waits --record sessions-out
    """
    try:
        incidents = _resolve_incidents(names)
    except IncidentError as exc:
        fail(str(exc))
    if record is not None:
        taken = [i.name for i in incidents if (record / i.name / "journal.jsonl").exists()]
        if taken:
            fail(f"{record / taken[0]}: a recorded session is already there; choose another --record folder")
    outcomes = [
        run_incident(i, record_to=None if record is None else record / i.name) for i in incidents
    ]
    if as_json:
        typer.echo(json.dumps([o.to_dict() for o in outcomes], indent=2))
    else:
        _print_outcomes(outcomes)
    failed = [o for o in outcomes if not o.passed]
    if failed:
        raise typer.Exit(1)


def _print_outcomes(outcomes: list[Outcome]) -> None:
    table = Table(title="Incidents on a virtual clock", title_justify="left")
    table.add_column("incident", style="bold")
    table.add_column("verdict")
    table.add_column("requested", justify="right")
    table.add_column("started", justify="right")
    table.add_column("completed", justify="right")
    table.add_column("cancelled", justify="right")
    table.add_column("final state")
    table.add_column("outcome")
    for o in outcomes:
        verdict = "[green]PASS[/]" if o.passed else "[bold red]FAIL[/]"
        table.add_row(
            o.incident.name,
            verdict,
            str(o.counts["requested"]),
            str(o.counts["started"]),
            str(o.counts["completed"]),
            str(o.counts["cancelled"]),
            o.snapshot["state"],
            o.snapshot["outcome"] or "-",
        )
    out.print(table)
    for o in outcomes:
        for failure in o.failures:
            out.print(f"[red]{o.incident.name}[/]: {failure}", highlight=False)
    passed = sum(o.passed for o in outcomes)
    out.print(f"{passed} of {len(outcomes)} incidents passed")


# --- flows ------------------------------------------------------------------------


@flow_app.command("check")
def flow_check(
    files: Annotated[list[str], typer.Argument(help="Flow files, or names of flows shipped with Lull.")],
) -> None:
    """Validate and compile flow files; exit 1 if any has an error.

    Each problem is one line: file:line:column: severity: JSON path: what was expected.

    Examples:
      lull flow check my_flow.json
      lull flow check reference_code
    """
    failed = False
    for name in files:
        try:
            path = resolve_flow(name)
        except FlowFileError as exc:
            fail(str(exc))
        report = check_file(path)
        for problem in report.problems:
            style = "red" if problem.severity == "error" else "yellow"
            err.print(f"[{style}]{problem.line()}[/]", highlight=False, soft_wrap=True)
        if report.flow is None:
            failed = True
            continue
        stages = len(report.flow.main.order)
        overlays = len(report.flow.overlays)
        out.print(
            f"{path}: ok: {stages} stages, {overlays} overlays, "
            f"{len(report.warnings)} warning(s)",
            highlight=False,
        )
    if failed:
        raise typer.Exit(1)


@flow_app.command("schema")
def flow_schema_command() -> None:
    """Print the JSON Schema of flow files.

    Example: lull flow schema > flow.schema.json
    """
    from ladder.flow.spec import flow_schema

    typer.echo(json.dumps(flow_schema(), indent=2))


# --- the simulator ------------------------------------------------------------------


@app.command("simulate")
def simulate(
    scenarios: Annotated[list[Path], typer.Argument(help="Scenario .json files.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    record: Annotated[
        Path | None,
        typer.Option("--record", metavar="DIR", help="Write each run as a session folder DIR/<scenario>/."),
    ] = None,
) -> None:
    """Play scenarios through their flows on a virtual clock; exit 1 if any fails.

    Examples:
      lull simulate tests/scenarios/default_hold_then_answer.json
      lull simulate tests/scenarios/*.json --json
      lull simulate my_scenario.json --record sessions-out
    """
    loaded = []
    for path in scenarios:
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            fail(str(exc))
        if record is not None and (record / scenario.name / "journal.jsonl").exists():
            fail(f"{record / scenario.name}: a recorded session is already there; choose another --record folder")
        loaded.append((path, scenario))
    outcomes: list[ScenarioOutcome] = []
    for path, scenario in loaded:
        try:
            outcomes.append(
                run_scenario(scenario, path, None if record is None else record / scenario.name)
            )
        except ScenarioError as exc:
            fail(str(exc))
    if as_json:
        typer.echo(json.dumps([o.to_dict() for o in outcomes], indent=2))
    else:
        table = Table(title="Scenarios on a virtual clock", title_justify="left")
        for column in ("scenario", "verdict", "flow", "final state", "outcome"):
            table.add_column(column, style="bold" if column == "scenario" else None)
        for o in outcomes:
            snap = o.runtime.ladder.snapshot()
            table.add_row(
                o.scenario.name,
                "[green]PASS[/]" if o.passed else "[bold red]FAIL[/]",
                o.runtime.flow.spec.name,
                snap["state"],
                snap["outcome"] or "-",
            )
        out.print(table)
        for o in outcomes:
            for failure in o.failures:
                out.print(f"[red]{o.scenario.name}[/]: {failure}", highlight=False)
        passed = sum(o.passed for o in outcomes)
        out.print(f"{passed} of {len(outcomes)} scenarios passed")
    if any(not o.passed for o in outcomes):
        raise typer.Exit(1)


# --- live rehearsal --------------------------------------------------------------


@app.command("rehearse")
def rehearse(
    flow: Annotated[str, typer.Argument(help="A flow file, or the name of a flow shipped with Lull.")] = DEFAULT_FLOW,
    backend: Annotated[str, typer.Option("--backend", help="audio, file or text (default: audio where a device exists, else text).")] = "auto",
    headless: Annotated[bool, typer.Option("--headless", help="No TUI: print the live event stream.")] = False,
    journal: Annotated[
        Path | None, typer.Option("--journal", metavar="DIR", help="Record the session in DIR (a new folder): journal, mic.wav, out.wav.")
    ] = None,
    caller: Annotated[Path | None, typer.Option("--caller", help="file backend: the caller's audio (a WAV file).")] = None,
    input_device: Annotated[str | None, typer.Option("--input-device", help="audio backend: microphone name or index.")] = None,
    output_device: Annotated[str | None, typer.Option("--output-device", help="audio backend: speaker name or index.")] = None,
    voice: Annotated[str | None, typer.Option("--voice", help="Another piper voice (.onnx with its .onnx.json).")] = None,
    stt_model: Annotated[str | None, typer.Option("--stt-model", help="Another faster-whisper model: a size name or a directory.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show every trace record.")] = False,
) -> None:
    """Rehearse a flow live in the console (or --headless: print the event stream).

    Typed lines are caller turns; in headless mode, lines starting with / inject
    incidents (/fail input, /recover input, /dup, /hangup, /tool NAME slow, /quit).

    Examples:
      lull rehearse
      lull rehearse my_flow.json --journal takes/1
      lull rehearse --backend file --caller caller.wav --headless --journal takes/2
      printf 'give me a moment\n4 8 2 1\nyes\n' | lull rehearse --backend text --headless
    """
    import asyncio

    from .headless import HELP, rehearse_headless
    from .live import LiveSession

    if backend not in ("auto", "audio", "file", "text"):
        fail(f"--backend {backend}: expected audio, file or text")
    if backend == "file" and caller is None:
        fail("--backend file needs --caller caller.wav (the caller's audio)")
    if caller is not None and not caller.is_file():
        fail(f"--caller {caller}: no such file")
    if journal is not None and (journal / "journal.jsonl").exists():
        fail(f"{journal}: a recorded session is already there; choose another --journal folder")
    if not headless and not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("the console needs a terminal; use --headless to print the event stream instead")
    try:
        compiled = load_flow(flow)
    except FlowFileError as exc:
        fail(str(exc))
    chosen, notice = _choose_backend(backend, input_device, output_device)
    the_backend = _make_backend(chosen, caller, journal, input_device, output_device, voice, stt_model)
    if not headless:
        from .app import LullApp

        path = None if library_flow_path(flow) is not None else resolve_flow(flow)
        LullApp(compiled, flow_path=path, backend=the_backend, journal_dir=journal, notice=notice, verbose=verbose).run()
        return
    if notice:
        err.print(notice, highlight=False)
    out.print(f"[bold]Lull[/]: rehearsing {compiled.spec.name} on the {chosen} backend. Commands:\n{HELP}", highlight=False)

    def line(who: str, text: str) -> None:
        out.print(f"[bold]{who:>6} >[/] {text}", highlight=False)

    the_backend.on_line = line
    session = LiveSession(compiled, the_backend, journal_dir=journal)
    outcome = asyncio.run(
        rehearse_headless(
            session,
            the_backend.say,
            write=lambda s: out.print(s, highlight=False),
            verbose=verbose,
            speaking=lambda: the_backend.speaking,
        )
    )
    latencies = getattr(the_backend, "latencies", [])
    for latency in latencies:
        out.print(f"turn {latency.turn}: {latency.as_dict()}", highlight=False)
    out.print(f"call ended: {outcome or 'stopped'}" + (f"; session recorded in {journal}" if journal else ""))


def _choose_backend(backend: str, input_device: str | None, output_device: str | None) -> tuple[str, str]:
    """The backend to use and, when it is not what was asked for, a notice saying why."""
    if backend in ("text", "file"):
        return backend, ("Text backend: type the caller's turns below." if backend == "text" else "")
    from voices.audio import AudioUnavailable, resolve_device

    try:
        resolve_device(input_device, "input")
        resolve_device(output_device, "output")
    except AudioUnavailable as exc:
        if backend == "audio":
            fail(str(exc))
        return "text", f"Text backend: {exc}"
    return "audio", ""


def _make_backend(chosen, caller, journal, input_device, output_device, voice, stt_model):
    from .text_backend import TextBackend

    if chosen == "text":
        return TextBackend()
    from voices.audio import AudioUnavailable, resolve_device
    from voices.stt import RecognizerError
    from voices.tts import VoiceError

    from .voice_backend import AudioBackend, FileBackend, VoiceModels

    with err.status("loading the voice and the recognizer…"):
        try:
            models = VoiceModels.load(voice_path=voice, stt_model=stt_model)
        except (VoiceError, RecognizerError) as exc:
            fail(str(exc))
    if chosen == "file":
        try:
            return FileBackend(models, caller, record_dir=journal)
        except ValueError as exc:
            fail(str(exc))
    try:
        return AudioBackend(
            models,
            input_device=resolve_device(input_device, "input"),
            output_device=resolve_device(output_device, "output"),
            record_dir=journal,
        )
    except AudioUnavailable as exc:
        fail(str(exc))


bench_app = typer.Typer(help="Benchmarks: figures and ratios measured in one run.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("turn")
def bench_turn(
    turns: Annotated[int, typer.Option("--turns", help="Caller turns to run (1-8).")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Caller turns through the file backend: latency per stage, raw model costs, ratio.

    Example: lull bench turn --turns 8
    """
    from .bench import run_turn_bench

    with err.status(f"running {turns} caller turns in real time…"):
        result = run_turn_bench(turns)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    table = Table(title=f"{result['turns_measured']} caller turns (file backend, real models)", title_justify="left")
    for column in ("stage", "median ms", "p90 ms"):
        table.add_column(column)
    for key, value in result["stages_ms"].items():
        table.add_row(key.removesuffix("_ms").replace("_", " "), _fmt(value["median"]), _fmt(value["p90"]))
    for key, value in result["raw_ms"].items():
        table.add_row(f"raw: {key.replace('_', ' ')}", _fmt(value["median"]), _fmt(value["p90"]))
    busy = result["loop_lateness_ms"]["while_stt_runs"]
    table.add_row("loop timer lateness while whisper runs", _fmt(busy["median"]), f"{_fmt(busy['p90'])} (max {_fmt(busy['max'])})")
    out.print(table)
    out.print(f"framework overhead ratio (end of speech -> first audio, over raw whisper + piper first chunk): {result['overhead_ratio']}")
    for name, ok in result["targets"].items():
        out.print(f"  {'met' if ok else 'MISSED'}: {name}")


@bench_app.command("replay")
def bench_replay(
    sessions: Annotated[int, typer.Option("--sessions", help="How many synthetic sessions to report over.")] = 10_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Replay and paired replay speed, the core's cost per event, a report over many sessions.

    Example: lull bench replay --sessions 10000
    """
    from .bench import run_replay_bench

    with err.status(f"recording, replaying and reporting over {sessions} sessions…"):
        result = run_replay_bench(sessions)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    out.print(f"replay: {result['replay_events_per_s']} inputs/s; paired replay: {result['paired_replay_inputs_per_s']} inputs/s")
    out.print(f"ladder core: {result['core_us_per_event']} µs per event")
    out.print(
        f"report over {result['report_sessions']} sessions on {result['workers']} cores: {result['report_s']} s, "
        f"peak memory {result['peak_rss_mb']['this_process']} MB (largest worker {result['peak_rss_mb']['largest_worker']} MB)"
    )
    for name, ok in result["targets"].items():
        out.print(f"  {'met' if ok else 'MISSED'}: {name}")


def _fmt(value) -> str:
    return "-" if value is None or value != value else f"{value:.0f}"


# --- recorded sessions --------------------------------------------------------------

sessions_app = typer.Typer(help="Recorded sessions: list, show, replay.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")


def _session_folders(root: Path) -> list[Path]:
    if (root / "journal.jsonl").is_file():
        return [root]
    return sorted(p.parent for p in root.glob("*/journal.jsonl"))


@sessions_app.command("list")
def sessions_list(folder: Annotated[Path, typer.Argument(help="A folder of session folders.")] = Path(".")) -> None:
    """List recorded sessions with their source, flow, length and outcome.

    Example: lull sessions list takes/
    """
    from sessions.journal import JournalError, read_journal

    if not folder.is_dir():
        fail(f"{folder}: no such folder")
    found = _session_folders(folder)
    if not found:
        fail(f"{folder}: no session folders (a session folder holds journal.jsonl)", code=1)
    table = Table(title=f"Sessions in {folder}", title_justify="left")
    for column in ("session", "source", "flow", "records", "length", "outcome", "skipped"):
        table.add_column(column)
    for path in found:
        try:
            journal = read_journal(path)
        except JournalError as exc:
            table.add_row(path.name, "-", "-", "-", "-", f"unreadable: {exc}", "-")
            continue
        closed = [r for r in journal.decisions() if r.get("effect") == "SessionClosed"]
        length = journal.records[-1]["t_ms"] / 1000 if journal.records else 0
        table.add_row(
            path.name,
            str(journal.header.get("source", "?")),
            str(journal.header.get("flow") or journal.header.get("incident") or "-"),
            str(len(journal.records)),
            f"{length:.1f}s",
            closed[-1]["outcome"] if closed else "open",
            str(len(journal.skipped)),
        )
    out.print(table)


@sessions_app.command("show")
def sessions_show(session: Annotated[Path, typer.Argument(help="A session folder (or its journal.jsonl).")]) -> None:
    """Show a session: its header, what was loaded or skipped, and the event stream.

    Example: lull sessions show takes/1
    """
    from sessions.journal import JournalError, read_journal

    from .describe import describe, seconds

    try:
        journal = read_journal(session)
    except (JournalError, FileNotFoundError) as exc:
        fail(str(exc))
    header = {k: v for k, v in journal.header.items() if k not in ("ladder_policy", "flow_document")}
    out.print(json.dumps(header, indent=2), highlight=False)
    out.print(journal.report(), highlight=False)
    for record in journal.records:
        if record["type"] == "decision":
            text = describe(record)
            if text:
                out.print(f"[{seconds(record['t_ms']):>7}] {text}", highlight=False)


@sessions_app.command("replay")
def sessions_replay(
    sessions: Annotated[list[Path], typer.Argument(help="Session folders.")],
    flow: Annotated[str | None, typer.Option("--flow", help="Paired replay: the same inputs under this flow.")] = None,
    policy: Annotated[Path | None, typer.Option("--policy", help="Paired replay of an incident session under this ladder policy (JSON).")] = None,
) -> None:
    """Re-run each session's inputs through the core: CLEAN, or DRIFT at the first difference.

    With --flow or --policy, a paired replay: the same inputs under another policy, with
    what each decided per episode.

    Examples:
      lull sessions replay takes/*
      lull sessions replay takes/1 --flow my_flow_v2.json
    """
    from ladder import LadderPolicy
    from sessions.journal import JournalError
    from sessions.paired import paired_replay
    from sessions.replay import ReplayError, replay

    other_flow = other_policy = None
    try:
        if flow is not None:
            other_flow = load_flow(flow)
        if policy is not None:
            other_policy = LadderPolicy.model_validate_json(policy.read_text(encoding="utf-8"))
    except FlowFileError as exc:
        fail(str(exc))
    except (OSError, ValueError) as exc:
        fail(f"--policy {policy}: {str(exc).splitlines()[0]}")
    drift = False
    for path in sessions:
        try:
            if other_flow is not None or other_policy is not None:
                report = paired_replay(path, flow=other_flow, policy=other_policy)
                out.print(f"[bold]{path}[/]: {report.caveat}", highlight=False)
                for diff in report.episodes:
                    mark = "[yellow]changed[/]" if diff.changed else "same"
                    out.print(f"  episode {diff.episode} {mark}", highlight=False)
                    out.print(f"    recorded: {diff.before.line() if diff.before else '-'}", highlight=False)
                    out.print(f"    paired:   {diff.after.line() if diff.after else '-'}", highlight=False)
                out.print(f"  session outcome: recorded {report.session_outcome[0]}, paired {report.session_outcome[1]}", highlight=False)
                continue
            result = replay(path)
        except (JournalError, ReplayError, FileNotFoundError, FlowFileError) as exc:
            fail(str(exc))
        style = "green" if result.verdict == "CLEAN" else "bold red"
        out.print(f"[{style}]{result.verdict}[/] {result.describe()}", highlight=False)
        if "no lines skipped" not in result.report:
            out.print(f"  {result.report}", highlight=False)
        drift |= result.verdict == "DRIFT"
    if drift:
        raise typer.Exit(1)


@sessions_app.command("step")
def sessions_step(
    session: Annotated[Path, typer.Argument(help="A session folder.")],
    at: Annotated[int, typer.Option("--at", help="Show the state after this many inputs.")] = 1,
) -> None:
    """Show the full core state after input N (the console's sessions screen steps interactively).

    Example: lull sessions step takes/1 --at 12
    """
    from sessions.journal import JournalError
    from sessions.replay import ReplayError
    from sessions.step import Cursor

    try:
        cursor = Cursor(session)
    except (JournalError, ReplayError, FileNotFoundError) as exc:
        fail(str(exc))
    if not 0 <= at <= len(cursor):
        fail(f"--at {at}: the session has {len(cursor)} inputs; expected 0..{len(cursor)}")
    position = cursor.seek(at)
    out.print(f"input {position.index} of {len(cursor)} at {position.t_ms / 1000:.3f}s: {json.dumps(position.event)}", highlight=False)
    for decision in position.decisions:
        out.print(f"  -> {json.dumps(decision)[:160]}", highlight=False)
    typer.echo(json.dumps(position.state, indent=2))


@sessions_app.command("export")
def sessions_export(
    session: Annotated[Path, typer.Argument(help="A session folder.")],
    as_: Annotated[str, typer.Option("--as", help="incident or scenario.")] = "incident",
    out_path: Annotated[Path | None, typer.Option("--out", help="Where to write (default: print).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="The fixture's name.")] = None,
) -> None:
    """Make a regression fixture from a recorded session.

    Examples:
      lull sessions export takes/1 --as incident --out incidents/take1.json
      lull sessions export takes/1 --as scenario --out tests/scenarios/take1.json
    """
    import re

    from sessions.export import export_incident, export_scenario
    from sessions.journal import JournalError
    from sessions.replay import ReplayError

    if as_ not in ("incident", "scenario"):
        fail(f"--as {as_}: expected incident or scenario")
    if out_path is not None and out_path.exists():
        fail(f"--out {out_path}: the file exists; choose another name (nothing was overwritten)")
    fixture_name = name or re.sub(r"[^a-z0-9_\-]", "_", (out_path.stem if out_path else session.name).lower())
    try:
        document = export_incident(session, fixture_name) if as_ == "incident" else export_scenario(session, fixture_name)
    except (JournalError, ReplayError, FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    text = json.dumps(document, indent=2) + "\n"
    if out_path is None:
        typer.echo(text)
    else:
        out_path.write_text(text, encoding="utf-8")
        out.print(f"wrote {out_path}")


@sessions_app.command("report")
def sessions_report(
    path: Annotated[Path, typer.Argument(help="A session folder, or a folder of them.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV: metric,count,denominator,of.")] = False,
) -> None:
    """Counts with their denominators over one session or many (read on every core).

    Examples:
      lull sessions report takes/
      lull sessions report takes/ --csv > metrics.csv
    """
    import csv

    from sessions.metrics import folder_metrics

    if not path.exists():
        fail(f"{path}: no such session or folder")
    metrics = folder_metrics(path)
    if metrics.sessions == 0 and metrics.unreadable == 0:
        fail(f"{path}: no session folders (a session folder holds journal.jsonl)", code=1)
    if as_json:
        typer.echo(json.dumps(metrics.to_dict(), indent=2))
        return
    if as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(["metric", "count", "denominator", "of"])
        writer.writerows(metrics.rows())
        return
    table = Table(title=f"Metrics over {metrics.sessions} session(s)", title_justify="left")
    for column in ("metric", "count", "of", "share"):
        table.add_column(column)
    for metric, count, denominator, of in metrics.rows():
        share = f"{count / denominator:.0%}" if denominator else ""
        table.add_row(metric, str(count), f"{denominator} {of}" if denominator is not None else "", share)
    out.print(table)
    if metrics.sequences:
        sequences = Table(title="Prompt sequence per episode", title_justify="left")
        sequences.add_column("sequence")
        sequences.add_column("episodes")
        for sequence, count in metrics.sequences.most_common(12):
            sequences.add_row(sequence, str(count))
        out.print(sequences)


# --- the edges on their own -------------------------------------------------------


@app.command("say")
def say(
    text: Annotated[str, typer.Argument(help="What the agent should say.")],
    out_path: Annotated[Path | None, typer.Option("--out", help="Write a WAV file instead of playing it.")] = None,
    voice: Annotated[str | None, typer.Option("--voice", help="Another piper voice (.onnx).")] = None,
    output_device: Annotated[str | None, typer.Option("--output-device", help="Speaker name or index.")] = None,
) -> None:
    """Speak TEXT with the on-device voice (piper), or write it to a WAV file.

    Examples:
      lull say "What is your reference code?"
      lull say "Sure, take your time." --out ack.wav
    """
    import time

    from voices.tts import PiperVoice, VoiceError

    if out_path is not None and out_path.exists():
        fail(f"--out {out_path}: the file exists; choose another name (nothing was overwritten)")
    try:
        piper = PiperVoice(voice)
    except VoiceError as exc:
        fail(str(exc))
    started = time.monotonic()
    audio = piper.synthesize_all(text)
    seconds = len(audio) / piper.sample_rate
    if out_path is not None:
        import soundfile

        soundfile.write(out_path, audio, piper.sample_rate, subtype="PCM_16")
        out.print(f"{out_path}: {seconds:.2f}s of audio, synthesized in {time.monotonic() - started:.2f}s")
        return
    from voices.audio import AudioUnavailable, resolve_device

    try:
        import sounddevice

        device = resolve_device(output_device, "output")
        sounddevice.play(audio, piper.sample_rate, device=device, blocking=True)
    except AudioUnavailable as exc:
        fail(f"{exc}; or use --out file.wav")
    out.print(f"played {seconds:.2f}s")


@app.command("transcribe")
def transcribe(
    wav: Annotated[Path, typer.Argument(help="A WAV file.")],
    stt_model: Annotated[str | None, typer.Option("--stt-model", help="A faster-whisper size name or directory.")] = None,
) -> None:
    """Transcribe a WAV file with the on-device recognizer (faster-whisper).

    Example: lull transcribe caller.wav
    """
    from voices.stt import RecognizerError, WhisperRecognizer, load_wav_16k

    try:
        audio = load_wav_16k(wav)
    except ValueError as exc:
        fail(str(exc))
    try:
        recognition = WhisperRecognizer(stt_model).transcribe(audio)
    except RecognizerError as exc:
        fail(str(exc))
    if recognition.reason:
        out.print(f"(no usable input: {recognition.reason})")
    else:
        out.print(recognition.text, highlight=False)
    err.print(f"{recognition.audio_s:.2f}s of audio decoded in {recognition.decode_s:.2f}s", highlight=False)


@app.command("devices")
def devices() -> None:
    """List the audio devices PortAudio can see.

    Example: lull devices
    """
    from voices.audio import AudioUnavailable, list_devices

    try:
        found = list_devices()
    except AudioUnavailable as exc:
        fail(str(exc))
    if not found:
        fail("no audio devices found; run `lull rehearse --backend text` to rehearse without audio")
    table = Table(title="Audio devices", title_justify="left")
    for column in ("index", "name", "inputs", "outputs", "rate", "default"):
        table.add_column(column)
    for d in found:
        default = ", ".join(k for k, v in (("input", d.is_default_input), ("output", d.is_default_output)) if v)
        table.add_row(str(d.index), d.name, str(d.max_input_channels), str(d.max_output_channels), f"{d.default_samplerate:g}", default)
    out.print(table)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
