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

from ._app import (
    app,
    check_new_file,
    check_record_folder,
    err,
    fail,
    out,
    write_new_file,
)

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
        for route_id, reading in report.flow.route_roles.items():
            out.print(Text(f"  route {route_id}: {reading.role}: {reading.reason}"), highlight=False, soft_wrap=True)
    if refused:
        raise typer.Exit(2)  # a refused flow is bad input, as everywhere in the CLI


@flow_app.command("new")
def flow_new(
    file: Annotated[Path, typer.Argument(help="The flow file to write (it must not exist).", show_default=False)],
    slot: Annotated[str | None, typer.Option("--slot", help="The slot the flow asks for (an id: prescription_number).")] = None,
    slot_type: Annotated[
        str | None, typer.Option("--type", help="What the slot holds: digits, number, text or yes_no.")
    ] = None,
    min_length: Annotated[int | None, typer.Option("--min-length", help="digits: the fewest a complete answer has.")] = None,
    max_length: Annotated[int | None, typer.Option("--max-length", help="digits: the most a complete answer has.")] = None,
    label: Annotated[
        str | None, typer.Option("--label", help="How the agent says the slot (\"prescription number\"); its id in words if unset.")
    ] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help="What the question asks for: find (a number on a card), choose (how many, "
                                 "which day) or know (a name); the ladder's wording follows it. Default: digits find, "
                                 "number choose, text know.")
    ] = None,
) -> None:
    """Start a flow of your own: one question for one slot, its read-back, a route to go
    on without it, closes that say what is true; plus a scenario that rehearses it.

    Writes FILE and, beside it, FILE's name with .scenario.json. What is not given as a
    flag is asked for when Lull runs at a terminal. Nothing that exists is overwritten.

    Examples:
      lull flow new refill.json --slot prescription_number --type digits --min-length 6 --max-length 7
      lull flow new booking.json
    """
    import sys

    from ladder.flow.scaffold import SLOT_ID, scaffold_flow, scaffold_scenario

    types = ("digits", "number", "text", "yes_no")
    scenario_path = file.with_name(f"{file.name.removesuffix('.json')}.scenario.json")
    if file.suffix != ".json":
        fail(f"{file}: a flow file's name ends in .json")
    check_new_file("FILE", file)
    check_new_file("scenario", scenario_path)
    asking = sys.stdin.isatty()

    def need(value, flag: str, question: str, default=None):
        if value is not None:
            return value
        if not asking:
            fail(f"{flag} is needed: Lull can ask for it only at a terminal (stdin is not one)")
        return typer.prompt(question, default=default)

    slot = need(slot, "--slot", "The slot the flow asks for (an id, like prescription_number)")
    if not SLOT_ID.match(slot):
        fail(f"--slot {slot!r}: expected an id of lowercase letters, digits and _ that starts with a letter")
    slot_type = need(slot_type, "--type", f"What it holds ({', '.join(types)})", "digits")
    if slot_type not in types:
        fail(f"--type {slot_type!r}: expected one of {', '.join(types)}")
    if slot_type == "digits":
        if min_length is None and asking:
            min_length = int(typer.prompt("The fewest digits a complete answer has", default=4, type=int))
        if max_length is None and asking:
            max_length = int(typer.prompt("The most digits a complete answer has", default=max(min_length or 4, 8), type=int))
        for flag, value in (("--min-length", min_length), ("--max-length", max_length)):
            if value is not None and not 1 <= value <= 64:
                fail(f"{flag} {value}: expected a count of digits from 1 to 64")
        if min_length is not None and max_length is not None and max_length < min_length:
            fail(f"--max-length {max_length} is below --min-length {min_length}, so no answer could fit both")
    elif min_length is not None or max_length is not None:
        fail(f"--min-length and --max-length are for digits; a {slot_type} slot has no length")
    if kind is not None and kind not in ("find", "choose", "know"):
        fail(f"--kind {kind!r}: expected find, choose or know")
    if kind is not None and slot_type == "yes_no":
        fail("--kind is for a value; a yes_no slot asks for a yes or a no")
    if label is not None and not label.strip():
        fail("--label is empty; expected how the agent says the slot, like \"prescription number\"")
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in file.stem) or "my_flow"
    if not name[0].isalpha():
        name = f"flow_{name}"
    document = scaffold_flow(name, slot, slot_type, min_length, max_length, label and label.strip(), kind)  # type: ignore[arg-type]
    scenario = scaffold_scenario(document, file.name)
    from sessions.flowfiles import check_data

    report = check_data(document, str(file))
    if report.flow is None or report.problems:  # the scaffold must pass as written: a Lull bug if not
        fail(f"{file}: the new flow does not pass its check: {report.problems[0].line()}", code=1)
    write_new_file("FILE", file, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode())
    write_new_file("scenario", scenario_path, (json.dumps(scenario, indent=2, ensure_ascii=False) + "\n").encode())
    out.print(Text(f"wrote {file} (flow {name!r}: asks for {slot}, {slot_type}) and {scenario_path}"), highlight=False, soft_wrap=True)
    if label is None and slot_type != "yes_no":
        spoken = document["slots"][slot]["label"]
        out.print(Text(f"the agent says {slot} as \"{spoken}\" (its label; --label or the file sets your own)"),
                  highlight=False, soft_wrap=True)
    out.print(Text(f"next: lull flow check {file}; lull simulate {scenario_path}; lull rehearse {file}"), highlight=False, soft_wrap=True)


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
