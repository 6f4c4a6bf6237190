"""The quickstart notebook executes top to bottom with no cloud account (examples/quickstart.ipynb)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
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


def _three_clouds():
    import attrs

    import omnidist
    from omnidist import DistributedJob, Role

    job = DistributedJob(name="quickstart", framework="pytorch",
                         image="us-docker.pkg.dev/my-project/trainers/ddp-synthetic:1.0",
                         command=["python", "ddp/train.py"], env={"OMP_NUM_THREADS": "1", "WANDB_API_KEY": "secret-ish"},
                         primary=Role(accelerator="V100:8"), workers=Role(replicas=3))
    return [omnidist.compile(attrs.evolve(job), backend=b) for b in ("vertex", "azure_ml", "ai_platform")]


def test_the_request_view_leaves_the_runtime_hints_out_and_says_so():
    from omnidist import notebook

    vertex = _three_clouds()[0]
    html = vertex._repr_html_()
    assert "OMNIDIST_JOB_NAME" not in html and "OMP_NUM_THREADS" in html
    assert "6 <code>OMNIDIST_*</code> runtime hint variables are left out of this view" in html
    assert "OMNIDIST_JOB_NAME" in vertex.render()  # the request itself keeps them
    shown, left = notebook.without_hints({"env": [{"name": "OMNIDIST_ROLE", "value": "x"}, {"name": "A"}],
                                          "environment_variables": {"OMNIDIST_FRAMEWORK": "t", "B": "1"}})
    assert shown == {"env": [{"name": "A"}], "environment_variables": {"B": "1"}} and left == 2


def test_a_migration_report_tells_each_fidelity_at_a_glance():
    from omnidist import migration

    _, report = migration.migrate(Path(__file__).parent / "migration" / "golden" / "inputs"
                                  / "azure_ml_pytorch_infiniband.yaml", source="azure_ml", target="ai_platform")
    html = report._repr_html_()
    assert "--strict would refuse this migration" in html
    assert "background:#cf222e;color:#fff" in html and "background:#1a7f37;color:#fff" in html  # changed, exact
    summary = html.split("</p>")[0]
    assert summary.index(">changed<") < summary.index(">approximated<") < summary.index(">exact<")



def test_long_cells_may_wrap_at_separators_but_never_inside_a_number():
    from omnidist import notebook

    html = notebook.table([("Standard_NC4as_T4_v3", "14.4 GB", "2/3 replicas", "v1.2")], ("a", "b", "c", "d"))
    assert "Standard_<wbr>NC4as_<wbr>T4_<wbr>v3" in html
    assert ">14.4 GB<" in html and ">2/3 replicas<" in html and ">v1.2<" in html

CHROMIUM = next((p for p in ("chromium", "chromium-browser", "google-chrome") if __import__("shutil").which(p)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium here (Debian: apt-get install chromium)")
def test_three_clouds_side_by_side_fit_1400_pixels(tmp_path):
    """Laid out by a real browser in a 1,400 px output area: nothing sticks out to the right."""
    import subprocess

    from omnidist import notebook

    page = tmp_path / "side.html"
    page.write_text("<html><body style='margin:0;width:1400px;font:13px sans-serif'>"
                    + notebook.side_by_side(*_three_clouds())._repr_html_()
                    + "<script>document.body.setAttribute('data-width', document.documentElement.scrollWidth)"
                    "</script></body></html>")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    width = int(dom.split('data-width="')[1].split('"')[0])
    assert width <= 1400
