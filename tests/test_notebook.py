"""The quickstart notebook executes top to bottom with no cloud account (examples/quickstart.ipynb)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_quickstart_runs_top_to_bottom(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # local runs keep their state under HOME
    notebook = nbformat.read(EXAMPLES / "quickstart.ipynb", as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    ).execute()
    outputs = {
        i: "".join(o.get("text", "") + str(o.get("data", {}).get("text/html", "")) for o in cell.get("outputs", []))
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
    }
    text = "\n".join(outputs.values())
    assert "not-a-real-key" not in text  # masked in every display
    assert "succeeded" in text and "world size 2" in text
    assert "workerpool" not in text or "MASTER_ADDR" in text
    assert "tensorflow" in text  # the migration inferred the framework from the parameter servers
