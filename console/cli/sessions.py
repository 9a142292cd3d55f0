"""`lull sessions ...`: recorded sessions listed, shown, replayed, stepped, reported, exported.

Journal content (caller words, stand-ins such as "[redacted]", flow names) is printed
as plain text, never read as console markup.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from sessions.flowfiles import (
    FlowFileError,
    load_flow,
)

from ._app import Progress, app, check_new_file, err, fail, out, plain, print_text, write_new_file
from .verdicts import (
    NOTHING_TO_READ,
    PARTIAL,
    exit_if_partial,
    print_folders_without_journal,
    print_left_out,
    print_verdict_line,
)

sessions_app = typer.Typer(help="Recorded sessions: list, show, step, replay, report, export.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")


def _session_folders(root: Path) -> list[Path]:
    # exists(), not is_file(): a journal that cannot be read is listed as unreadable
    if (root / "journal.jsonl").exists():
        return [root]
    return sorted(p.parent for p in root.glob("*/journal.jsonl"))


@sessions_app.command("list")
def sessions_list(folder: Annotated[Path, typer.Argument(help="A folder of session folders.")] = Path(".")) -> None:
    """List recorded sessions with their source, flow, length and outcome.

    Example: lull sessions list takes/
    """
    from sessions.journal import JournalError
    from sessions.replay import read_session

    if not folder.is_dir():
        fail(f"{folder}: no such folder")
    found = _session_folders(folder)
    if not found:
        fail(f"{folder}: no session folders (a session folder holds journal.jsonl)", code=1)
    table = Table(title=Text(f"Sessions in {folder}"), title_justify="left")
    for column in ("session", "source", "flow", "records", "length", "outcome", "skipped"):
        table.add_column(column)
    for path in found:
        try:
            journal = read_session(path)
        except JournalError as exc:
            table.add_row(plain(path.name), "-", "-", "-", "-", plain(f"unreadable: {exc}"), "-")
            continue
        closed = [r for r in journal.decisions() if r.get("effect") == "SessionClosed"]
        length = journal.records[-1]["t_ms"] / 1000 if journal.records else 0
        table.add_row(
            plain(path.name),
            plain(journal.header.get("source", "?")),
            plain(journal.header.get("flow") or journal.header.get("incident") or "-"),
            str(len(journal.records)),
            f"{length:.1f}s",
            plain(closed[-1]["outcome"] if closed else "not closed (cut off?)"),
            str(len(journal.skipped)),
        )
    out.print(table)


@sessions_app.command("show")
def sessions_show(session: Annotated[Path, typer.Argument(help="A session folder (or its journal.jsonl).")]) -> None:
    """Show a session: its header, what was loaded or skipped, and the event stream.

    Example: lull sessions show takes/1
    """
    from sessions.journal import JournalError
    from sessions.replay import read_session

    from ..describe import describe, seconds

    try:
        journal = read_session(session)
    except JournalError as exc:
        fail(str(exc))
    for label, value in header_lines(journal.header):
        print_text((f"{label:<9}", "bold"), " ", value)
    print_text(journal.report())
    for record in journal.records:
        if record["type"] == "decision":
            text = describe(record)
            if text:
                print_text(f"[{seconds(record['t_ms']):>7}] {text}")


def header_lines(header: dict) -> list[tuple[str, str]]:
    """A journal header as a person reads it: what was recorded, when, from what."""

    def flat(value: object) -> str:
        if isinstance(value, dict):
            return "; ".join(f"{k} {flat(v)}" for k, v in value.items()) or "none recorded"
        if isinstance(value, list | tuple):
            return ", ".join(map(flat, value)) or "none"
        return "-" if value is None else str(value)

    created = str(header.get("created", "?")).replace("T", " ")
    created = created.split(".")[0] + (" UTC" if created.endswith("+00:00") else "")
    source = str(header.get("source", "?"))
    named = header.get(source) if isinstance(header.get(source), str) else None  # "incident": its name
    lines = [
        ("recorded", f"{created} (journal schema {header.get('schema', '?')})"),
        ("source", f"{source} {named}" if named else source),
    ]
    if header.get("flow"):
        digest = header.get("flow_hash")
        lines.append(("flow", f"{header['flow']}" + (f" ({digest})" if digest else " (no hash recorded)")))
    elif "ladder_policy" in header:
        lines.append(("flow", "none: the ladder policy alone, recorded in the header"))
    shown = {"type", "schema", "created", "source", source, "flow", "flow_hash", "ladder_policy", "flow_document"}
    for key, value in header.items():
        if key not in shown:
            lines.append((key.replace("_", " "), flat(value)))
    return lines


@sessions_app.command("replay")
def sessions_replay(
    sessions: Annotated[list[Path], typer.Argument(help="Session folders, archives, or folders of them.")],
    flow: Annotated[str | None, typer.Option("--flow", help="Paired replay: the same inputs under this flow.")] = None,
    policy: Annotated[Path | None, typer.Option("--policy", help="Paired replay under this ladder policy (JSON): an incident's, or a flow's default ladder.")] = None,
    summary: Annotated[bool, typer.Option("--summary", help="Over a corpus: before and after with denominators and 95 % intervals, not session by session.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --summary: print JSON.")] = False,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="With --summary: processes (default: one a core).")] = None,
    scheduler: Scheduler = None,
) -> None:
    """Re-run each session's inputs through the core: CLEAN, or DRIFT at the first difference.

    A journal cut short (the process was killed) replays CLEAN up to its last whole
    step and says what was not compared. A damaged one (a line that cannot be read, a
    record missing or out of place) is replayed past the damage, and is INCOMPLETE
    if nothing differs but some of it could not be compared; skipped lines are listed
    by line and field. Exit status: 0 CLEAN, 1 if any session drifted, 2 if any could
    not be replayed, 3 if any was INCOMPLETE.

    With --flow or --policy, a paired replay: the same inputs under another policy, with
    what each decided per episode. With --summary the arguments may be folders of
    sessions (a corpus): reminders, closes, interruptions, time to answer and how
    episodes ended, before and after, each with its denominator and a 95 % interval.
    Sessions the edit cannot replay (a journal that cannot be read, its stored flow
    missing, an archive cut short), damaged ones and journals of another flow are named
    with why. Exit status with --summary: 0 the whole corpus replayed, 1 nothing to
    replay (no sessions there, or none of the edited flow), 2 bad arguments, 3 a verdict
    on less than the whole corpus (also when none could be replayed: no verdict is
    printed then, only why).

    Examples:
      lull sessions replay takes/*
      lull sessions replay takes/1 --flow my_flow_v2.json
      lull sessions replay calls/ --flow my_flow_v2.json --summary
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
    if summary:
        _replay_summary(sessions, flow, other_flow, policy, other_policy, as_json, workers, scheduler)
        return
    if as_json or workers is not None or scheduler is not None:
        fail("--json, --workers and --scheduler go with --summary")
    drift = broken = incomplete = False
    for path in _journals(sessions, broken_out := []):
        try:
            if other_flow is not None or other_policy is not None:
                report = paired_replay(path, flow=other_flow, policy=other_policy)
                print_text((str(path), "bold"), f": {report.caveat}")
                for diff in report.episodes:
                    print_text(f"  episode {diff.episode} ", ("changed", "yellow") if diff.changed else "same")
                    print_text(f"    recorded: {diff.before.line() if diff.before else '-'}")
                    print_text(f"    paired:   {diff.after.line() if diff.after else '-'}")
                print_text(f"  session outcome: recorded {report.session_outcome[0]}, paired {report.session_outcome[1]}")
                continue
            result = replay(path)
        except (JournalError, ReplayError, FlowFileError) as exc:
            # one line for this session; the others are still replayed
            print_text(("error:", "bold red"), f" {exc}", console=err)
            broken = True
            continue
        style = {"CLEAN": "green", "INCOMPLETE": "bold yellow"}.get(result.verdict, "bold red")
        print_text((result.verdict, style), " ", result.describe())
        if not result.report.endswith("; no lines skipped"):  # skipped lines, gaps, held times
            print_text(f"  {result.report}")
        drift |= result.verdict == "DRIFT"
        incomplete |= result.verdict == "INCOMPLETE"
    for line in broken_out:  # an archive damaged past some of its journals
        print_text(("error:", "bold red"), f" {line}", console=err)
        broken = True
    if broken:
        raise typer.Exit(2)
    if drift:
        raise typer.Exit(1)
    if incomplete:
        raise typer.Exit(3)  # no difference seen, but not all of a journal was compared


def _journals(paths: list[Path], damage: list[str]):
    """Each session folder as given; an archive's journals, or a corpus folder's, one by one."""
    from sessions.archive import is_archive, members
    from sessions.corpus import corpus_units
    from sessions.journal import JOURNAL_FILENAME

    for path in paths:
        if path.is_dir() and not (path / JOURNAL_FILENAME).exists() or is_archive(path):
            units = list(corpus_units([path]))
            if units:
                for unit in sorted(units):
                    if is_archive(unit):
                        yield from members(unit, damage)
                    else:
                        yield unit
                continue
        yield path  # a session folder, or what the replay names as not one


def _replay_summary(folders: list[Path], flow_ref: str | None, flow, policy_path: Path | None, policy,
                    as_json: bool, workers: int | None, scheduler: str | None) -> None:
    from sessions.whatif import Edit, corpus_whatif
    from sessions.whatif import summary as whatif_summary

    from .whatif_report import print_whatif, print_whatif_left_out

    for folder in folders:
        _check_corpus_folder(folder)
    edit = Edit(flow_document=flow.spec.model_dump(mode="json", by_alias=True, exclude_unset=True) if flow is not None else None,
                policy=policy.model_dump(mode="json") if policy is not None else None)
    progress = Progress("sessions replayed")
    part = _read_corpus("folders", lambda: corpus_whatif(folders, edit, workers=workers, progress=progress, scheduler=scheduler))
    progress.done()
    data = whatif_summary(part)
    if part.sessions == 0 and not part.not_replayed and not part.partly:
        if part.other_flow:
            fail(f"no journal of flow {edit.flow_name} among {len(part.other_flow)} session(s) (first: {part.other_flow[0]})",
                 code=NOTHING_TO_READ)
        fail(_no_corpus(folders), code=NOTHING_TO_READ)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        print_folders_without_journal(folders, err)
        print_whatif_left_out(data, console=err)  # stdout stays JSON; the terminal still says why
    else:
        after = " and ".join(x for x in (flow_ref and f"flow {flow_ref}", policy_path and f"policy {policy_path}") if x)
        print_whatif(data, "as recorded", after or "the recorded flow, replayed (every change should be 0)")
        print_folders_without_journal(folders)
    exit_if_partial(data["verdict"])


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
        if not 0 <= at <= len(cursor):
            fail(f"--at {at}: the session has {len(cursor)} inputs; expected 0..{len(cursor)}")
        position = cursor.seek(at)
    except (JournalError, ReplayError) as exc:
        fail(str(exc))
    if not cursor.journal.report().endswith("; no lines skipped"):
        print_text(cursor.journal.report(), console=err)
    if cursor.stopped:
        print_text(f"stepping stops at {cursor.stopped}", console=err)
    print_text(f"input {position.index} of {len(cursor)} at {position.t_ms / 1000:.3f}s: {json.dumps(position.event, ensure_ascii=False)}")
    for decision in position.decisions:
        print_text(f"  -> {json.dumps(decision, ensure_ascii=False)[:160]}")
    from ..describe import masked_span

    for span in cursor.masked_around(position.t_ms):
        print_text(f"  audio masked: {masked_span(span)}")
    typer.echo(json.dumps(position.state, indent=2, ensure_ascii=False))


@sessions_app.command("export")
def sessions_export(
    session: Annotated[Path, typer.Argument(help="A session folder.")],
    as_: Annotated[str, typer.Option("--as", help="incident or scenario.")] = "incident",
    out_path: Annotated[Path | None, typer.Option("--out", help="Where to write (default: print).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="The fixture's name.")] = None,
) -> None:
    """Make a regression fixture from a recorded session.

    A session cut short exports its whole steps; the fixture passes on its own
    (lull incidents run / lull simulate on the exported file).

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
    if out_path is not None:
        check_new_file("--out", out_path)  # before the work, so a bad path costs nothing
    fixture_name = name or re.sub(r"[^a-z0-9_\-]", "_", (out_path.stem if out_path else session.name).lower())
    try:
        document = export_incident(session, fixture_name) if as_ == "incident" else export_scenario(session, fixture_name)
    except (JournalError, ReplayError, ValueError) as exc:
        fail(str(exc).splitlines()[0])
    text = json.dumps(document, indent=2) + "\n"
    if out_path is None:
        typer.echo(text)
    else:
        write_new_file("--out", out_path, text.encode("utf-8"))
        print_text(f"wrote {out_path}")


Scheduler = Annotated[str | None, typer.Option(
    "--scheduler", help="A Dask scheduler's address (tcp://host:8786): read on that cluster; its workers must see "
                        "the corpus at the same path. Without it: every core of this machine.")]


def _check_corpus_folder(path: Path) -> None:
    """A session folder, an archive, or a folder of them; refused in one line otherwise."""
    from sessions.archive import SUFFIXES, is_archive

    if not path.exists():
        fail(f"{path}: no such session, archive or folder")
    if not path.is_dir() and not is_archive(path):
        fail(f"{path}: not a folder or an archive ({', '.join('*' + s for s in SUFFIXES)}); "
             "expected a session folder, an archive, or a folder of them")


def _no_corpus(paths: list[Path]) -> str:
    return (f"{', '.join(map(str, paths))}: no session folders or archives "
            "(a session folder holds journal.jsonl; an archive is *.jsonl.gz or *.jsonl.zst)")


def _say_what_is_left_out(data: dict, machine: bool, roots: list[Path]) -> None:
    """The journals a verdict does not wholly cover, each with why, and what it stands on;
    folders that hold no journal. Beside JSON or CSV on stderr: stdout stays data, and the
    terminal still says why."""
    console = err if machine else None
    print_folders_without_journal(roots, console)
    print_left_out("journal(s)", "not read, not counted", data["unreadable"], console)
    print_left_out("journal(s)", "read only up to their damage (lines skipped or records missing), counted up to it",
                   data["read_in_part"], console)
    print_verdict_line(data["verdict"], console)


def _read_corpus(what: str, run):
    """Run a corpus reader with its failures as one line each."""
    from sessions.corpus import CorpusError

    try:
        return run()
    except CorpusError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read the {what}: {exc.strerror or exc}")


@sessions_app.command("coverage")
def sessions_coverage(
    folders: Annotated[list[Path], typer.Argument(help="Session folders, or folders of them.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    scheduler: Scheduler = None,
) -> None:
    """How often each stage, ladder stage, route and intent was reached, per flow, over
    a corpus of journals (rehearsals or production), and which never were.

    Journals that cannot be read (a damaged archive, a stored flow missing, a header
    that is not one) are named with why, and so are journals read only up to damage.
    Exit status: 0 the whole corpus read, 1 no session folders or archives there, 2 bad
    arguments, 3 a verdict on less than the whole corpus (also when none could be read:
    no verdict is printed then, only why).

    Examples:
      lull sessions coverage takes/
      lull sessions coverage takes/ production/ --json
    """
    from sessions.coverage import coverage

    for folder in folders:
        _check_corpus_folder(folder)
    progress = Progress("journals read")
    result = _read_corpus("folders", lambda: coverage(folders, progress=progress, scheduler=scheduler))
    progress.done()
    if result.sessions == 0 and not result.unreadable:
        fail(_no_corpus(folders), code=NOTHING_TO_READ)
    data = result.to_dict()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        _print_coverage(data, result)
    _say_what_is_left_out(data, machine=as_json, roots=folders)
    exit_if_partial(data["verdict"])


def _print_coverage(data: dict, result) -> None:  # noqa: ANN001
    from sessions.coverage import KINDS

    for name, flow in data["flows"].items():
        table = Table(title=f"{name}: {flow['sessions']} session(s)", title_justify="left")
        for column in ("what", "reached", "never reached"):
            table.add_column(column)
        for kind in KINDS:
            counts = flow[kind]
            if not counts:
                continue
            reached = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
            table.add_row(kind.replace("_", " "), plain(reached or "-"), Text(", ".join(flow["never"][kind]) or "-",
                                                                          style="yellow" if flow["never"][kind] else ""))
        table.add_row("model readings", plain(result.flows[name].model_readings.line()), "-")
        out.print(table)


@sessions_app.command("report")
def sessions_report(
    path: Annotated[Path, typer.Argument(help="A session folder, or a folder of them.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV: metric,count,denominator,of.")] = False,
    scheduler: Scheduler = None,
) -> None:
    """Counts with their denominators over one session or many (read on every core).

    Each count says what it is out of (prompts requested, episodes eligible), so a
    rate is never shown without the number it is a rate of. Journals that cannot be
    read, or were read only up to damage, are named with why (beside --json or --csv,
    on stderr). Exit status: 0 the whole corpus read, 1 no session folders or archives
    there, 2 bad arguments, 3 a verdict on less than the whole corpus (also when none
    could be read: no table is printed then, only why).

    Examples:
      lull sessions report takes/
      lull sessions report takes/ --csv > metrics.csv
    """
    import csv

    from sessions.metrics import folder_metrics

    if as_json and as_csv:
        fail("--json and --csv: choose one output format")
    _check_corpus_folder(path)
    progress = Progress("journals read")
    metrics = _read_corpus("folder", lambda: folder_metrics(path, progress=progress, scheduler=scheduler))
    progress.done()
    if metrics.sessions == 0 and not metrics.unreadable:
        fail(_no_corpus([path]), code=NOTHING_TO_READ)
    data = metrics.to_dict()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    elif as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(["metric", "count", "denominator", "of"])
        writer.writerows(metrics.rows())
    elif metrics.sessions:
        _print_metrics(metrics)
    _say_what_is_left_out(data, machine=as_json or as_csv, roots=[path])
    exit_if_partial(data["verdict"])


def _print_metrics(metrics) -> None:
    table = Table(title=f"Metrics over {metrics.sessions} session(s)", title_justify="left")
    for column in ("metric", "count", "of", "share"):
        table.add_column(column)
    for metric, count, denominator, of in metrics.rows():
        share = f"{count / denominator:.0%}" if denominator else ""
        table.add_row(plain(metric), str(count), plain(f"{denominator} {of}") if denominator is not None else "", share)
    out.print(table)
    if metrics.sequences:
        sequences = Table(title="Prompt sequence per episode", title_justify="left")
        sequences.add_column("sequence")
        sequences.add_column("episodes")
        for sequence, count in sorted(metrics.sequences.items(), key=lambda kv: (-kv[1], kv[0]))[:12]:
            sequences.add_row(plain(sequence), str(count))
        out.print(sequences)


@sessions_app.command("timing")
def sessions_timing(
    folders: Annotated[list[Path], typer.Argument(help="Session folders, or folders of them.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV, a row per question and ladder stage.")] = False,
    flow: Annotated[str | None, typer.Option("--flow", help="Only journals of this flow (a file or a shipped flow's name); others are counted and named.")] = None,
    scheduler: Scheduler = None,
) -> None:
    """How long callers take: per question and ladder stage, the time from the observed
    end of what the agent said to the caller's first speech (N, p50, p90, p99, the share
    past each stage's wait); reminders begun under 1.5 s before the caller spoke;
    callers closed who had spoken; holds against their budget; and a suggested first
    wait with what it would change. Callers the call moved on from before they spoke
    count as censored (Kaplan-Meier), not as fast.

    Journals that cannot be read (a damaged archive, a stored flow missing, a header
    that is not one) are named with why, and so are journals read only up to damage
    (counted up to it); beside --json or --csv, on stderr. With --flow, journals of
    other flows are named but are not a gap in the verdict. Exit status: 0 the whole
    corpus read, 1 nothing to read (no session folders or archives, or no journal of
    the --flow), 2 bad arguments, 3 a verdict on less than the whole corpus (also when
    none could be read: no verdict is printed then, only why).

    Examples:
      lull sessions timing calls/
      lull sessions timing calls/ --csv > timing.csv
      lull sessions timing production/ --flow my_flow.json
    """
    import csv

    from sessions.timing import corpus_timing, csv_rows, summary

    if as_json and as_csv:
        fail("--json and --csv: choose one output format")
    for folder in folders:
        _check_corpus_folder(folder)

    only_flow = None
    if flow is not None:
        try:
            only_flow = load_flow(flow).spec.name
        except FlowFileError as exc:
            fail(f"--flow: {exc}")
    progress = Progress("journals read")
    part = _read_corpus("folders", lambda: corpus_timing(folders, progress=progress, only_flow=only_flow, scheduler=scheduler))
    progress.done()
    if part.sessions == 0 and not part.unreadable:
        if part.other_flow:
            fail(f"no journal of flow {only_flow} among {len(part.other_flow)} session(s) (first: {part.other_flow[0]})",
                 code=NOTHING_TO_READ)
        fail(_no_corpus(folders), code=NOTHING_TO_READ)
    data = summary(part)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    elif as_csv:
        csv.writer(sys.stdout).writerows(csv_rows(data))
    elif data["sessions"]:
        _print_timing(data)
    if data["other_flow"] and not as_json:
        print_text((f"{len(data['other_flow'])} journal(s) of another flow, not counted: {', '.join(data['other_flow'][:10])}", "yellow"),
                   console=err if as_csv else None)
    _say_what_is_left_out(data, machine=as_json or as_csv, roots=folders)
    exit_if_partial(data["verdict"])


def _print_timing(data: dict) -> None:
    out.print(plain(f"{data['sessions']} session(s) of {', '.join(data['flows'])}: response time from the observed "
                    "end of what was said to the caller's first speech"))
    unreached = False  # a percentile the corpus never gets to, shown as "-"
    for q in data["questions"]:
        table = Table(title=f"{q['question']}: {q['n']} spoke, {q['censored']} cut off first", title_justify="left")
        for column in ("from the end of", "wait", "N", "cut off", "p50", "p90", "p99", "past wait", "silent at start"):
            table.add_column(column)

        def s(ms):
            return "-" if ms is None else f"{ms / 1000:.1f}s"
        for row in (q, *q["stages"]):
            unreached |= bool(row.get("n")) and any(row.get(k) is None for k in ("p50_ms", "p90_ms", "p99_ms"))
        table.add_row("the question (whole episode)", "", str(q["n"]), str(q["censored"]), s(q["p50_ms"]), s(q["p90_ms"]), s(q["p99_ms"]), "", "")
        for st in q["stages"]:
            past = st.get("share_past_wait")
            silent = st.get("callers_still_silent_when_it_starts")
            table.add_row(plain(st["stage"]), s(st["wait_ms"]), str(st.get("n", "-")), str(st.get("censored", "-")),
                          s(st.get("p50_ms")), s(st.get("p90_ms")), s(st.get("p99_ms")),
                          "-" if past is None else f"{past:.0%}", "-" if silent is None else f"{silent:.0%}")
        out.print(table)
        lines = [f"  reminders: {q['reminders']}, of which begun under 1.5 s before the caller spoke: {q['reminders_too_early']}",
                 f"  closes: {q['closes']}, of callers who had spoken: {q['closed_after_speaking']}"
                 + (f" ({', '.join(q['closed_after_speaking_sessions'])})" if q["closed_after_speaking_sessions"] else "")]
        sug = q["suggestion"]
        if sug and sug.get("wait_ms") is not None:
            lines.append(f"  suggested {sug['stage']} wait: {sug['wait_ms'] / 1000:.1f}s (now {sug['current_wait_ms'] / 1000:.1f}s): "
                         f"callers reminded before they speak {sug['reminded_before_speaking_now']:.0%} -> "
                         f"{sug['reminded_before_speaking_then']:.0%}; {_silent_wait(sug['silent_callers_wait_longer_ms'])}")
        elif sug:
            lines.append(f"  no suggested {sug['stage']} wait: {sug['why']}")
        for line in lines:
            out.print(plain(line))
    if unreached:
        out.print(plain("  p50/p90/p99 \"-\": fewer callers than that spoke before the rest were cut off "
                        "(hung up, closed or routed), so the corpus never shows that time"))
    h = data["holds"]
    if h["n"]:
        out.print(plain(f"holds: {h['n']} (p50 {h['p50_ms'] / 1000:.1f}s, p90 {h['p90_ms'] / 1000:.1f}s); "
                        f"{h['past_hold_ms']} past the hold of {h['hold_ms'] / 1000:.0f}s; "
                        f"{h['episodes_past_budget']} of {h['episodes_with_holds']} episode(s) with holds past the budget of {h['budget_ms'] / 1000:.0f}s"))


def _silent_wait(longer_ms: float) -> str:
    """What a suggested wait does to a silent caller, in words (never "waits -3.5s")."""
    if abs(longer_ms) < 50:
        return "a silent caller hears the next stage as soon as now"
    more = "later" if longer_ms > 0 else "sooner"
    return f"a silent caller hears the next stage {abs(longer_ms) / 1000:.1f}s {more}"


@sessions_app.command("phrasings")
def sessions_phrasings(
    corpus: Annotated[list[Path], typer.Argument(help="Session folders, archives, or folders of them.")],
    out_path: Annotated[Path | None, typer.Option("--out", help="Write the phrasing file here (default: print it).")] = None,
    force: Annotated[bool, typer.Option("--force", help="With --out: replace a file that exists.")] = False,
    include_stale: Annotated[bool, typer.Option(
        "--include-stale", help="Keep turns whose model decision came after the caller's next turn began (not acted on).")] = False,
    min_agreement: Annotated[float, typer.Option(
        "--min-agreement", min=0.5, max=1.0,
        help="Words the model read more than one way go under the intent of at least this share of their turns "
             "(1.0: only words it read one way).")] = 1.0,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="Processes (default: one a core).")] = None,
    scheduler: Scheduler = None,
) -> None:
    """A phrasing file from the turns the agent's own model labelled, for `lull bench
    intents FLOW --phrasings FILE`.

    Beside an LLM (Pipecat's turn-completion markers, LiveKit's tools), each journal holds
    the model's reading of each caller turn (`model_reading`). The model's "needs time"
    becomes wait_request, "the caller is back" ready, and a complete turn goes under
    "none": it is none of the ladder's intents, so a matcher that reads one in it is
    wrong. Not where Lull read the caller back, asking again or a backchannel and the
    model could not have said so (Pipecat's markers have no "the caller is back"): those
    are left out. Turns the model said were cut off teach no intent and are left out, as
    are stale decisions (unless --include-stale). Each phrase once, masked as the journal
    holds it. What was read and left out is said on stderr.

    Exit status: 0 the whole corpus read; 1 nothing to read or nothing to export; 2
    bad arguments; 3 written from less than the whole corpus (the journals that could
    not be read are named).

    Examples:
      lull sessions phrasings calls/ --out callers.json
      lull bench intents my_flow.json --phrasings callers.json
    """
    from sessions.model_readings import corpus_phrasings, phrasing_file

    from ._app import check_output_file, write_file_atomically

    if force and out_path is None:
        fail("--force goes with --out")
    for path in corpus:
        _check_corpus_folder(path)
    if out_path is not None:
        check_output_file("--out", out_path, overwrite=force)  # before the work, so a bad path costs nothing
    progress = Progress("journals read")
    part = _read_corpus("corpus", lambda: corpus_phrasings(corpus, workers=workers, progress=progress, scheduler=scheduler))
    progress.done()
    if part.journals == 0 and not part.unreadable:
        fail(f"{', '.join(map(str, corpus))}: no session folders or archives (a session folder holds journal.jsonl; an archive is *.jsonl.gz or *.jsonl.zst)", code=1)
    export = phrasing_file(part, include_stale=include_stale, min_agreement=min_agreement)
    for line in _phrasings_summary(part, export, min_agreement):
        print_text(line, console=err)
    if not export.file:
        fail("no model-labelled turns to export (nothing was written)", code=PARTIAL if part.unreadable else NOTHING_TO_READ)
    text = json.dumps(export.file, indent=2, ensure_ascii=False) + "\n"
    if out_path is None:
        typer.echo(text, nl=False)
    else:
        write_file_atomically("--out", out_path, text.encode("utf-8"), overwrite=force)
        print_text(f"wrote {out_path}", console=err)
    if part.unreadable:
        raise typer.Exit(PARTIAL)  # written from less than the whole corpus: the journals left out are named above


def _phrasings_summary(part, export, min_agreement: float) -> list[str]:
    """What went into the phrasing file and what was left out, and why, in plain lines."""
    lines = [f"{part.journals} journal(s) read: {part.turns} turn(s) the model read"
             + (f", {part.unusable} model reading(s) with fields that cannot be read" if part.unusable else "")]
    if export.file:
        per_intent = ", ".join(f"{intent} {len(phrases)} ({export.turns[intent]} turns)" for intent, phrases in export.file.items())
        lines.append(f"exported {export.phrases} phrase(s) from {sum(export.turns.values())} turn(s): {per_intent}")
    left = export.left_out
    why = {
        "cut_off": f"{left['cut_off']} turn(s) the model said were cut off: no intent to teach",
        "stale": f"{left['stale']} stale turn(s): decided after the caller's next turn began, not acted on "
                 "(--include-stale keeps them)",
        "no_words": f"{left['no_words']} turn(s) with no words",
        "unsayable": f"{left['unsayable']} complete turn(s) Lull read as the caller back, asking again or a backchannel: "
                     "the model's decisions cannot say those, so its label is not theirs",
        "two_ways": f"{left['two_ways']} turn(s) of {export.two_ways} phrase(s) the model read more than one way, "
                    f"no one intent having --min-agreement {min_agreement:g} of them",
        "outvoted": f"{left['outvoted']} turn(s) outvoted: words kept under the intent most of their turns had",
    }
    shown = [text for key, text in why.items() if left[key]]
    if shown:
        lines += ["left out:", *(f"  {text}" for text in shown)]
    if part.unreadable:
        lines.append(f"{len(part.unreadable)} journal(s) could not be read: " + "; ".join(sorted(part.unreadable)[:10])
                     + ("; ..." if len(part.unreadable) > 10 else ""))
    return lines
