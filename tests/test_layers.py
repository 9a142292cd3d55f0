"""The house rules, checked on the real import graph (grimp):

- the layers run one way, console -> voices -> sessions -> ladder;
- no import circle among the project's modules (a module that needs another's piece
  gives the piece a home of its own);
- nothing below the console imports the console's frameworks (textual, typer, rich);
- a live call can be run without the console: importing sessions.live and
  voices.backends loads no console, textual or typer module;
- Lull's own live call does not reach into a framework's: nothing in voices outside the
  adapters (voices.pipecat, voices.livekit) imports one, and neither adapter imports
  the other; what runs them side by side (`lull bench turn`'s CLI) is the console's.

Imports under `if TYPE_CHECKING:` count: a circle a type checker follows is still a
circle a reader has to untangle.
"""

import subprocess
import sys

import grimp
import pytest

from ladder.flow.compile import _strongly_connected

PACKAGES = ("console", "voices", "sessions", "ladder")  # top to bottom
UI_FRAMEWORKS = ("textual", "typer", "rich")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, *UI_FRAMEWORKS, exclude_type_checking_imports=False)


def circles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (the flow compiler's
    Tarjan, the same walk that finds a flow's cycles)."""
    successors = {m: sorted(graph.find_modules_directly_imported_by(m) & modules) for m in modules}
    found = _strongly_connected(sorted(modules), successors)
    return sorted(sorted(component) for component in found if len(component) > 1)


def own_modules(graph: grimp.ImportGraph) -> set[str]:
    return {m for m in graph.modules if m.split(".")[0] in PACKAGES}


def test_the_layers_run_one_way(graph):
    illegal = graph.find_illegal_dependencies_for_layers(layers=PACKAGES)
    assert not illegal, "a lower layer imports a higher one: " + "; ".join(
        f"{d.importer} -> {d.imported} ({graph.find_shortest_chain(d.importer, d.imported)})" for d in illegal
    )


def test_no_import_circles(graph):
    found = circles(graph, own_modules(graph))
    assert found == [], "modules that import each other in a loop: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_circle_check_finds_a_circle():
    fake = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"):
        fake.add_module(name)
    fake.add_import(importer="pkg.a", imported="pkg.b")
    fake.add_import(importer="pkg.b", imported="pkg.c")
    fake.add_import(importer="pkg.c", imported="pkg.a")
    fake.add_import(importer="pkg.c", imported="pkg.d")
    assert circles(fake, {"pkg.a", "pkg.b", "pkg.c", "pkg.d"}) == [["pkg.a", "pkg.b", "pkg.c"]]


@pytest.mark.parametrize("framework", UI_FRAMEWORKS)
def test_nothing_below_the_console_imports_its_frameworks(graph, framework):
    below = {m for m in own_modules(graph) if not m.startswith("console")}
    offenders = sorted(
        m for m in below
        if any(i.split(".")[0] == framework for i in graph.find_modules_directly_imported_by(m))
    )
    assert offenders == [], f"{framework} is the console's; imported by {offenders}"


ADAPTERS = ("voices.pipecat", "voices.livekit")


def _adapter(module: str) -> str | None:
    return next((a for a in ADAPTERS if module == a or module.startswith(a + ".")), None)


def test_no_voices_module_but_an_adapter_reaches_into_a_framework_adapter(graph):
    voices = {m for m in own_modules(graph) if m == "voices" or m.startswith("voices.")}
    reaching = sorted(
        f"{m} -> {i}" for m in voices for i in graph.find_modules_directly_imported_by(m)
        if _adapter(i) is not None and _adapter(m) != _adapter(i)
    )
    assert reaching == [], "a framework adapter imported from outside it: " + "; ".join(reaching)


def test_a_live_call_runs_without_the_console():
    code = (
        "import sys, sessions.live, sessions.live_incidents, voices.backends, voices.turn_bench, sessions.bench\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('console', 'textual', 'typer'))\n"
        "print(' '.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"loaded: {result.stdout.strip()}"
