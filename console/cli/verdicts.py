"""What a corpus command's verdict covers, said the same way by each of them.

`sessions timing`, `report`, `coverage` and `replay --summary` read a corpus and give a
verdict on it. Each names the journals it could not read, or read only up to their
damage, with why (which journal, what was wrong), and exits with the same status:

  0  the whole corpus was read and counted
  1  nothing to read: no session folders or archives there (or none of the flow asked for)
  2  bad arguments (a path that is not a corpus, options that do not go together)
  3  a verdict on less than the whole corpus: journals not read, read in part, or left
     out; also when none of them could be read (then no verdict is printed, only why)

The JSON of each carries the same: "verdict" ({"sessions", "of", "of_at_least",
"whole"}) and each journal left out as {"journal", "reason"} ("rest_of_archive": true
when it stands for however many journals an archive held past its damage).

A folder in the corpus that holds no journal is not a session to read, but it is named
(a session whose journal was deleted looks just like it); it does not change the status.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from ._app import print_text

NOTHING_TO_READ = 1
PARTIAL = 3  # a verdict on less than the whole corpus

NAMES_A_REASON = 5  # journals named beside a reason; --json names every one
REASONS_SHOWN = 10


def print_left_out(noun: str, what: str, entries: list[dict], console: Console | None = None,
                   style: str = "yellow") -> None:
    """`entries` ({"journal", "reason"}) under a count of them, grouped by reason: two
    thousand journals whose stored flow is missing are one line, not two thousand."""
    if not entries:
        return
    rests = sum(1 for entry in entries if entry.get("rest_of_archive"))
    counted = [f"{len(entries) - rests} {noun}"] if len(entries) > rests else []
    counted += [f"the rest of {rests} archive(s)"] if rests else []
    print_text((f"{' and '.join(counted)} {what}:", style), console=console)
    by_reason: dict[str, list[str]] = {}
    for entry in entries:
        by_reason.setdefault(entry["reason"], []).append(entry["journal"])
    for reason, journals in list(by_reason.items())[:REASONS_SHOWN]:
        if len(journals) == 1:
            print_text(f"  {journals[0]}: {reason}", console=console)
            continue
        shown = ", ".join(journals[:NAMES_A_REASON])
        more = f" and {len(journals) - NAMES_A_REASON} more" if len(journals) > NAMES_A_REASON else ""
        print_text(f"  {len(journals)} journals: {reason}", console=console)
        print_text(f"    {shown}{more}", console=console)
    if len(by_reason) > REASONS_SHOWN:
        print_text(f"  ... and {len(by_reason) - REASONS_SHOWN} more reason(s) (--json names every journal and why)",
                   console=console)


def print_folders_without_journal(roots: list[Path], console: Console | None = None) -> None:
    """Folders in the corpus that hold no journal, named: skipped, not silently."""
    from sessions.corpus import folders_without_journal

    bare = folders_without_journal(roots)
    if not bare:
        return
    more = f" and {len(bare) - NAMES_A_REASON} more" if len(bare) > NAMES_A_REASON else ""
    print_text((f"{len(bare)} folder(s) hold no journal.jsonl, not read as sessions (a session whose journal "
                "was lost, or not a session):", "yellow"), console=console)
    print_text(f"  {', '.join(bare[:NAMES_A_REASON])}{more}", console=console)


def print_verdict_line(verdict: dict, console: Console | None = None, none_could: str = "could be read") -> None:
    """One line saying what the verdict stands on, when it is not the whole corpus."""
    if verdict["whole"]:
        return
    of = f"{'at least ' if verdict['of_at_least'] else ''}{verdict['of']}"
    if verdict["sessions"] == 0:
        text = f"no verdict: none of the {of} session(s) found {none_could}"
    elif verdict["sessions"] == verdict["of"] and not verdict["of_at_least"]:
        text = f"verdict on {verdict['sessions']} of {of} session(s), some read only up to their damage: not the whole corpus"
    else:
        text = f"verdict on {verdict['sessions']} of {of} session(s), not the whole corpus"
    print_text((text, "bold yellow"), console=console)


def exit_if_partial(verdict: dict) -> None:
    if not verdict["whole"]:
        raise typer.Exit(PARTIAL)
