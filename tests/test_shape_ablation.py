"""`lull bench intents --yardstick FOLDER --shapes`: each word shape's figure, by reading
each turn with and without it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from console.cli import app
from voices.understanding import shape_ablation as ablation

FLOW = Path(__file__).parent / "flows" / "yardstick2" / "late_checkout.json"


class ScriptedMatcher:
    """Reads each text as scripted: the classifier's pick, and a shape that changes it."""

    def __init__(self, script: dict[str, tuple[str | None, str | None]]) -> None:
        self.script = script

    def explain(self, text: str, shapes_left_out: frozenset[str] | None = frozenset()):
        picked, shaped = self.script[text]
        if shapes_left_out is None or shaped is None:
            return picked, 0.9, "classifier"
        shape, intent = shaped.split("=")
        if shape in shapes_left_out:
            return picked, 0.9, "classifier"
        return (intent or None), 0.9, f"shape:{shape}"


def yardstick(tmp_path: Path, phrasings: dict) -> Path:
    folder = tmp_path / "yard"
    (folder / "dev").mkdir(parents=True)
    (folder / "sealed").mkdir()
    shutil.copy(FLOW, folder / FLOW.name)
    for name in ("dev", "sealed"):
        (folder / name / FLOW.name).write_text(json.dumps(phrasings))
    return folder


def test_each_shape_counts_the_turns_it_makes_right_or_wrong_and_the_off_topic_it_lets_in(tmp_path, monkeypatch):
    intents = json.loads(FLOW.read_text())["intents"]
    wait = "wait_request" if "wait_request" in intents else next(iter(intents))
    script = {
        "hang on a sec": (None, f"wait_words={wait}"),  # made right
        "hang on the tv": (None, f"wait_words={wait}"),  # off-topic let in
        "wait what was that": (wait, "asks_again=repeat_request"),  # made wrong
        "just a moment": (wait, None),  # no shape: no figure
    }
    monkeypatch.setattr(ablation, "_build", lambda intents, kind: (ScriptedMatcher(script), 0.0))
    folder = yardstick(tmp_path, {wait: ["hang on a sec", "wait what was that", "just a moment"], "none": ["hang on the tv"]})
    result = ablation.shape_ablation(folder)
    text = result["sets"]["sealed"]["text"]
    assert text["turns"] == 4 and text["flows"] == 1
    assert text["shapes"]["wait_words"] == {"decided": 2, "right": 1, "off_topic_accepted": 1}
    assert text["shapes"]["asks_again"] == {"decided": 1, "right": -1, "off_topic_accepted": 0}
    assert text["all_shapes"] == {"right": 0, "off_topic_accepted": 1}
    # nothing heard in this folder: the heard conditions say so rather than count nothing
    assert result["sets"]["dev"]["spoken"]["flows_not_heard"] == ["late_checkout"]


def test_shapes_asks_for_a_yardstick_alone(tmp_path):
    result = CliRunner().invoke(app, ["bench", "intents", "--shapes"])
    assert result.exit_code == 2
    assert "--shapes" in result.output and "--yardstick FOLDER" in result.output
    assert "Traceback" not in result.output


def _readme_shape_cells() -> dict[str, str]:
    """shape -> its "as text" cell of the README's table ("+3, 0 / +2, 0")."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = text.split("<!-- shapes -->", 1)[1].split("<!-- /shapes -->", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in block.strip().splitlines()[2:]]
    return {cells[0]: cells[1] for cells in rows}


def _cell(row: dict | None) -> str:
    if row is None:
        return "never"
    return f"{row['right']:+d}, {row['off_topic_accepted']:+d}".replace("+0", "0")


def test_the_readmes_shape_figures_as_text_are_the_benchs():
    # as written only: the heard columns re-read 8,000 turns, the bench's to print
    result = ablation.shape_ablation(Path(__file__).parent / "flows" / "yardstick2", conditions=("text",))
    cells = _readme_shape_cells()
    dev, sealed = (result["sets"][s]["text"] for s in ("dev", "sealed"))
    for shape in {*dev["shapes"], *sealed["shapes"]}:
        assert cells[shape] == f"{_cell(dev['shapes'].get(shape))} / {_cell(sealed['shapes'].get(shape))}", shape
    assert cells["every shape at once"] == f"{_cell(dev['all_shapes'])} / {_cell(sealed['all_shapes'])}"
