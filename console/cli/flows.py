"""`lull flow check|schema` and `lull simulate`: flow files and the model-free simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

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

from ._app import app, check_record_folder, err, fail, out

# File names, field values and messages are the user's text: they are printed as
# rich Text, never parsed as console markup ("[/]x.json" is a file name, not a tag).

flow_app = typer.Typer(
    help="Flow files: the conversation graph, its voice timing and the silence ladder.",
    no_args_is_help=True,
)
app.add_typer(flow_app, name="flow")


@flow_app.command("check")
def flow_check(
    files: Annotated[list[str], typer.Argument(help="Flow files, or names of flows shipped with Lull.")],
) -> None:
    """Validate and compile flow files; exit 2 if any is refused.

    Each problem is one line: file:line:column: severity: JSON path: what was expected.
    Warnings are shown and do not refuse a flow.

    Examples:
      lull flow check my_flow.json
      lull flow check reference_code
    """
    refused = False
    for name in files:
        try:
            path = resolve_flow(name)
        except FlowFileError as exc:
            for problem in exc.problems:
                err.print(Text(problem.line(), style="red"), highlight=False, soft_wrap=True)
            refused = True
            continue
        report = check_file(path)
        for problem in report.problems:
            style = "red" if problem.severity == "error" else "yellow"
            err.print(Text(problem.line(), style=style), highlight=False, soft_wrap=True)
        if report.flow is None:
            refused = True
            continue
        stages = len(report.flow.main.order)
        overlays = len(report.flow.overlays)
        out.print(
            Text(f"{path}: ok: {stages} stages, {overlays} overlays, {len(report.warnings)} warning(s)"),
            highlight=False,
            soft_wrap=True,
        )
    if refused:
        raise typer.Exit(2)  # a refused flow is bad input, as everywhere in the CLI


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

    A scenario is a caller's script (what they say, when they stay silent) and what
    the call must and must not do; it needs no models and runs in milliseconds.

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
        loaded.append((path, scenario))
    if record is not None:
        check_record_folder(record, [s.name for _, s in loaded], "scenario")
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
                Text(o.scenario.name),
                Text("PASS", style="green") if o.passed else Text("FAIL", style="bold red"),
                Text(o.runtime.flow.spec.name),
                Text(str(snap["state"])),
                Text(str(snap["outcome"] or "-")),
            )
        out.print(table)
        for o in outcomes:
            for failure in o.failures:
                out.print(Text.assemble((o.scenario.name, "red"), f": {failure}"), highlight=False)
        passed = sum(o.passed for o in outcomes)
        out.print(f"{passed} of {len(outcomes)} scenarios passed")
    if any(not o.passed for o in outcomes):
        raise typer.Exit(1)
