"""`lull incidents list|run`: the incident library on a virtual clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from sessions.incidents import (
    Incident,
    IncidentError,
    Outcome,
    library_paths,
    load_incident,
    run_incident,
)

from ._app import app, check_record_folder, fail, out, plain, print_text, quiet_pipecat_logs

incidents_app = typer.Typer(
    help="The incident library: race, hold, media-failure and deadline schedules run on a virtual clock.",
    no_args_is_help=True,
)
app.add_typer(incidents_app, name="incidents")


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
        table.add_row(plain(i.name), plain(i.title), plain("; ".join(p.what for p in i.prohibit)))
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
    via: Annotated[
        str,
        typer.Option(
            "--via",
            metavar="core|pipecat|livekit",
            help="core: the core on a virtual clock; pipecat: a real Pipecat pipeline "
            "(its queues, Lull's processor, a simulated transport) on virtual time; livekit: a "
            "real LiveKit AgentSession (its audio recognition, speech handles, Lull's adapter, "
            "a scripted VAD and STT, a clocked output) on virtual time.",
        ),
    ] = "core",
) -> None:
    """Run incidents on a virtual clock; exit 1 if any fails.

    NAMES are incidents of the library (lull incidents list) or incident files; with
    none, the whole library runs. Each verdict lists what was expected and prohibited.

    Examples:
      lull incidents run
      lull incidents run seven_waits duplicate_timeout
      lull incidents run my_incident.json --json
      lull incidents run seven_waits --record sessions-out
      lull incidents run --via pipecat
      lull incidents run --via livekit
    """
    if via not in ("core", "pipecat", "livekit"):
        fail(f"--via: expected core, pipecat or livekit, got {via!r}")
    try:
        incidents = _resolve_incidents(names)
    except IncidentError as exc:
        fail(str(exc))
    if record is not None:
        check_record_folder(record, [i.name for i in incidents], "incident")
    folder = (lambda i: None) if record is None else (lambda i: record / i.name)
    frames = events = 0
    if via == "pipecat":
        quiet_pipecat_logs()
        try:
            from voices.pipecat.incidents import run_incident_via_pipecat
        except ImportError as exc:
            fail(str(exc))
        outcomes = []
        for incident in incidents:
            outcome, run = run_incident_via_pipecat(incident, record_to=folder(incident))
            outcomes.append(outcome)
            frames, events = frames + run.as_frames, events + run.as_events
    elif via == "livekit":
        try:
            from voices.livekit import quiet_livekit_logs
            from voices.livekit.incidents import run_incident_via_livekit
        except ImportError as exc:
            fail(str(exc))
        quiet_livekit_logs()
        outcomes = []
        for incident in incidents:
            outcome, run = run_incident_via_livekit(incident, record_to=folder(incident))
            outcomes.append(outcome)
            frames, events = frames + run.as_native, events + run.as_events
    else:
        outcomes = [run_incident(i, record_to=folder(i)) for i in incidents]
    if as_json:
        typer.echo(json.dumps([o.to_dict() | {"via": via} for o in outcomes], indent=2))
    else:
        titles = {"pipecat": "Incidents through a Pipecat pipeline, on virtual time",
                  "livekit": "Incidents through a LiveKit AgentSession, on virtual time"}
        _print_outcomes(outcomes, titles.get(via))
        if via == "pipecat":
            print_text(f"steps as Pipecat's own frames: {frames}; as LullEventFrame (no Pipecat frame for them): {events}")
        elif via == "livekit":
            print_text(f"steps through LiveKit (its VAD and STT plugins, session events): {frames}; "
                       f"through LullLadder.feed (no LiveKit way in for them): {events}")
    failed = [o for o in outcomes if not o.passed]
    if failed:
        raise typer.Exit(1)





def _print_outcomes(outcomes: list[Outcome], title: str | None = None) -> None:
    table = Table(title=title or "Incidents on a virtual clock", title_justify="left")
    table.add_column("incident", style="bold")
    table.add_column("verdict")
    table.add_column("requested", justify="right")
    table.add_column("started", justify="right")
    table.add_column("completed", justify="right")
    table.add_column("cancelled", justify="right")
    table.add_column("final state")
    table.add_column("outcome")
    for o in outcomes:
        verdict = Text("PASS", style="green") if o.passed else Text("FAIL", style="bold red")
        table.add_row(
            plain(o.incident.name),
            verdict,
            str(o.counts["requested"]),
            str(o.counts["started"]),
            str(o.counts["completed"]),
            str(o.counts["cancelled"]),
            plain(o.snapshot["state"]),
            plain(o.snapshot["outcome"] or "-"),
        )
    out.print(table)
    for o in outcomes:
        for failure in o.failures:
            print_text((o.incident.name, "red"), f": {failure}")
    passed = sum(o.passed for o in outcomes)
    print_text(f"{passed} of {len(outcomes)} incidents passed")
