"""What ``JobHandle.wait`` prints while it follows a job (omnidist/progress.py)."""

from __future__ import annotations

import threading

from omnidist.backend.contract import Backend, Capabilities
from omnidist.backend.values import JobState, JobStatus
from omnidist.model.roles import RoleName
from omnidist.submission.handle import JobHandle


class _Job(Backend):
    """A job that steps through ``states`` (one per status call); its logs report the same state
    changes as lines (as Vertex's do without Cloud Logging), plus ``lines`` of its own."""

    name = "scripted"
    capabilities = Capabilities(roles=frozenset({RoleName.PRIMARY}))
    settings_type = object

    def __init__(self, states, lines=()):
        self.states, self.lines = list(states), list(lines)
        self.lock = threading.Lock()

    def compile(self, job, settings): raise NotImplementedError
    def import_native(self, request): raise NotImplementedError
    def submit(self, compiled, settings): raise NotImplementedError
    def cancel(self, job_id, settings): pass

    def status(self, job_id, settings):
        with self.lock:
            return JobStatus(state=self.states.pop(0) if len(self.states) > 1 else self.states[0])

    def logs(self, job_id, settings, follow=False):
        yield from self.lines
        yield "state: succeeded"


def _handle(driver) -> JobHandle:
    return JobHandle(backend="scripted", id="42", driver=driver)


def test_progress_without_a_terminal_is_one_plain_line_per_state(capsys):
    final = _handle(_Job(["queued", "queued", "running", "succeeded"])).wait(
        poll_interval=0, sleep=lambda s: None, progress=True)
    assert final.state is JobState.SUCCEEDED
    err = capsys.readouterr().err
    assert err.splitlines() == ["state: queued", "state: running", "state: succeeded"]
    assert "\r" not in err and ": ," not in err


def test_streamed_state_changes_are_printed_once_in_order(capsys):
    # The wait loop sees queued, running, succeeded; the logs report running and succeeded too.
    driver = _Job(["queued", "running", "running", "succeeded"], lines=["epoch 1", "state: running"])
    _handle(driver).wait(poll_interval=0, sleep=lambda s: threading.Event().wait(0.01), stream_logs=True)
    lines = capsys.readouterr().err.splitlines()
    assert sorted(lines) == ["epoch 1", "state: queued", "state: running", "state: succeeded"], lines
    assert [line for line in lines if line.startswith("state:")] == ["state: queued", "state: running",
                                                                     "state: succeeded"]


def test_log_lines_that_are_not_state_changes_are_printed(capsys):
    driver = _Job(["succeeded"], lines=["state: training", "state: running (epoch 3)"])
    _handle(driver).wait(poll_interval=0, sleep=lambda s: None, stream_logs=True)
    lines = capsys.readouterr().err.splitlines()
    assert sorted(lines) == ["state: running (epoch 3)", "state: succeeded", "state: training"], lines


def test_a_notebook_without_ipywidgets_gets_text_not_an_error(monkeypatch, capsys):
    """tqdm.auto picks Jupyter's widget in a notebook; without ipywidgets it cannot be drawn (tqdm
    raises), so the wait prints a line per state change instead."""
    import sys

    import tqdm.auto
    import tqdm.notebook

    from omnidist.submission import progress

    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.notebook.tqdm)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # not installed
    assert progress.tqdm_class().__module__ == "tqdm.std" and not progress._interactive()
    final = _handle(_Job(["queued", "running", "succeeded"])).wait(poll_interval=0, sleep=lambda s: None,
                                                                     progress=True)
    assert final.state is JobState.SUCCEEDED
    assert capsys.readouterr().err.splitlines() == ["state: queued", "state: running", "state: succeeded"]


def test_the_plan_shows_its_notes_in_a_notebook():
    from omnidist.placement.plan import Plan, PlanRow

    row = PlanRow(profile="gcp", backend="vertex", region="us-central1", machines={"primary": "a2-highgpu-1g"},
                  accelerators="A100:1", price_per_hour=3.5, spot_price_per_hour=None, hours=1.0, estimated_cost=3.5,
                  available=None, notes=("no spot price <known>",))
    html = Plan([row])._repr_html_()
    assert "<li>gcp: no spot price &lt;known&gt;</li>" in html
