"""`lull corpus ...`: corpora of calls made on the virtual clock."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from sessions.flowfiles import DEFAULT_FLOW, FlowFileError, load_flow

from ._app import Progress, app, fail, print_text

corpus_app = typer.Typer(help="Corpora of calls: simulate a caller population.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")


@corpus_app.command("simulate")
def corpus_simulate(
    out_dir: Annotated[Path, typer.Argument(help="A new or empty folder for the journals (one session folder a call).")],
    flow: Annotated[str, typer.Option("--flow", help="A flow file or the name of a shipped flow.")] = DEFAULT_FLOW,
    calls: Annotated[int, typer.Option("--calls", min=1, help="How many calls.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="The same seed makes the same calls.")] = 0,
    population: Annotated[Path | None, typer.Option("--population", help="A population file (JSON); the defaults without it.")] = None,
    workers: Annotated[int, typer.Option("--workers", min=0, help="Processes (0: every core).")] = 0,
    archive: Annotated[str | None, typer.Option("--archive", help="gz or zst: archives of calls (calls-NNNNNNN.jsonl.gz), the flow stored once in flows/, instead of a folder a call.")] = None,
    per_archive: Annotated[int, typer.Option("--per-archive", min=1, help="With --archive: at most this many calls an archive.")] = 1000,
    resume: Annotated[bool, typer.Option("--resume", help="Complete a corpus a killed run left (or extend one to --calls): the same flow, seed, population and archive kind; whole calls are kept.")] = False,
) -> None:
    """Calls on the virtual clock, each a journal (source: simulated) from a caller
    population: how long callers take to answer each kind of question, who asks for
    time, partial answers, mishearings, off-topic turns, hang-ups, media faults and
    tool latency. The README's "How long callers take" lists the fields and defaults.

    Examples:
      lull corpus simulate calls/ --calls 10000 --seed 7
      lull corpus simulate calls/ --flow my_flow.json --population slow_callers.json
      lull corpus simulate calls/ --calls 100000 --archive zst
      lull corpus simulate calls/ --calls 100000 --archive zst --resume   # after a kill
    """
    from sessions.population import PopulationError, load_population
    from sessions.simulate import MANIFEST, ResumeError, simulate_corpus

    if archive not in (None, "gz", "zst"):
        fail(f"--archive {archive!r}: expected gz or zst")
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"{out_dir}: exists and is not a folder; a corpus is written to a new or empty folder")
    if resume and not (out_dir / MANIFEST).is_file():
        fail(f"{out_dir}: no {MANIFEST}: --resume completes a corpus `lull corpus simulate` began there")
    if not resume and out_dir.exists() and any(out_dir.iterdir()):
        hint = " (a corpus this command began: --resume completes it)" if (out_dir / MANIFEST).is_file() else ""
        fail(f"{out_dir}: exists and is not an empty folder; a corpus is written to a new or empty folder{hint}")
    try:
        pop = load_population(population)
    except PopulationError as exc:
        fail(str(exc))
    try:
        compiled = load_flow(flow)
    except FlowFileError as exc:
        fail(f"--flow: {exc}")
    flow_ref = str(Path(flow).resolve()) if Path(flow).exists() else flow
    progress = Progress("calls simulated", calls)
    start = time.monotonic()
    try:
        done, kept = simulate_corpus(out_dir, flow_ref, None, calls, seed, pop, workers or os.cpu_count(), progress,
                                     archive=archive, per_archive=per_archive, resume=resume)
    except ResumeError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{out_dir}: cannot write the corpus: {exc.strerror or exc}")
    progress.done()
    elapsed = time.monotonic() - start
    made = done - kept
    already = f" ({kept} kept from before, {made} made now)" if kept else ""
    print_text(f"{done} calls of {compiled.spec.name} (seed {seed}, population {pop.name}) in {out_dir}{already} "
               f"in {elapsed:.1f} s ({made / elapsed:,.0f} calls/s)")
