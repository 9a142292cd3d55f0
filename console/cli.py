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
    backend: Annotated[str, typer.Option("--backend", help="text (type the caller's words).")] = "text",
    headless: Annotated[bool, typer.Option("--headless", help="No TUI: print the live event stream.")] = False,
    journal: Annotated[
        Path | None, typer.Option("--journal", metavar="DIR", help="Record the session in DIR (a new folder).")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show every trace record.")] = False,
) -> None:
    """Rehearse a flow live in the console (or --headless: type turns, / injects incidents).

    Examples:
      lull rehearse --headless
      lull rehearse my_flow.json --headless --journal sessions/take1
      printf 'give me a moment\n/sleep 3\n4 8 2 1\nyes\n' | lull rehearse --headless
    """
    import asyncio

    from .headless import HELP, rehearse_headless
    from .live import LiveSession
    from .text_backend import TextBackend

    if backend != "text":
        fail(f"--backend {backend}: only the text backend is available in this build; use --backend text")
    if journal is not None and (journal / "journal.jsonl").exists():
        fail(f"{journal}: a recorded session is already there; choose another --journal folder")
    try:
        compiled = load_flow(flow)
    except FlowFileError as exc:
        fail(str(exc))
    if not headless:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            fail("the console needs a terminal; use --headless to print the event stream instead")
        from .app import LullApp

        notice = "Text backend: type the caller's turns below (microphone rehearsal is not in this build)."
        path = None if library_flow_path(flow) is not None else resolve_flow(flow)
        LullApp(compiled, flow_path=path, journal_dir=journal, notice=notice, verbose=verbose).run()
        return
    out.print(f"[bold]Lull[/]: rehearsing {compiled.spec.name} on the {backend} backend. Commands:\n{HELP}", highlight=False)

    def line(who: str, text: str) -> None:
        out.print(f"[bold]{who:>6} >[/] {text}", highlight=False)

    text_backend = TextBackend(on_line=line)
    session = LiveSession(compiled, text_backend, journal_dir=journal)
    outcome = asyncio.run(
        rehearse_headless(
            session,
            text_backend.say,
            write=lambda s: out.print(s, highlight=False),
            verbose=verbose,
            speaking=lambda: text_backend.speaking,
        )
    )
    out.print(f"call ended: {outcome or 'stopped'}" + (f"; journal in {journal}" if journal else ""))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
