"""`lull flow check|schema` and `lull simulate`: flow files and the model-free simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sessions.flowfiles import (
    FlowFileError,
    check_file,
    resolve_flow,
)
from sessions.scenarios import (
    ScenarioError,
    ScenarioOutcome,
    load_scenario,
    run_scenario,
)

from ._app import app, err, fail, out

flow_app = typer.Typer(
    help="Flow files: the conversation graph, its voice timing and the silence ladder.",
    no_args_is_help=True,
)
app.add_typer(flow_app, name="flow")




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
