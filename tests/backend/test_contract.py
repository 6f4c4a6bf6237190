"""Values crossing the backend contract (omnidist/backend.py)."""

from __future__ import annotations

import json

import pytest

from omnidist.backend.contract import Backend, Capabilities
from omnidist.backend.values import CompiledJob, JobState, JobStatus, Note, NoteKind, Trial, best_trial
from omnidist.model.roles import RoleName
from omnidist.submission.handle import JobHandle


def test_compiled_job_renders_in_its_format_and_filters_notes():
    notes = [
        Note(kind="defaulted", field="primary", message="picked n1"),
        Note(kind=NoteKind.HINT, field="x", message="y"),
    ]
    compiled = CompiledJob(backend="b", request={"b": 1, "a": [1, 2]}, diagnostics=notes, format="yaml")
    assert str(compiled).splitlines()[0] == "b: 1"
    assert json.loads(compiled.render("json")) == {"b": 1, "a": [1, 2]}
    assert compiled.notes("hint") == (notes[1],)
    assert str(notes[0]) == "[defaulted] primary: picked n1"


class _Scripted(Backend):
    """A backend whose job goes through a fixed list of states, one per status call."""

    name = "scripted"
    capabilities = Capabilities(roles=frozenset({RoleName.PRIMARY}))
    settings_type = object

    def __init__(self, states):
        self.states = list(states)

    def compile(self, job, settings): raise NotImplementedError
    def import_native(self, request): raise NotImplementedError
    def submit(self, compiled, settings): raise NotImplementedError
    def logs(self, job_id, settings, follow=False): return iter(())
    def cancel(self, job_id, settings): pass

    def status(self, job_id, settings):
        return JobStatus(state=self.states.pop(0) if len(self.states) > 1 else self.states[0])


def test_wait_polls_until_terminal_and_reports_changes():
    driver = _Scripted(["queued", "queued", "running", "running", "succeeded"])
    seen, sleeps = [], []
    final = JobHandle(backend="scripted", id="1", driver=driver).wait(
        poll_interval=2, on_change=seen.append, sleep=sleeps.append
    )
    assert final.state is JobState.SUCCEEDED
    assert [s.state.value for s in seen] == ["queued", "running", "succeeded"]
    assert sleeps == [2, 2, 2, 2]


def test_wait_gives_up_after_its_timeout_without_cancelling():
    driver = _Scripted(["running"])
    with pytest.raises(TimeoutError, match="still running"):
        JobHandle(backend="scripted", id="1", driver=driver).wait(poll_interval=0, timeout=0.01, sleep=lambda s: None)


def test_terminal_states():
    assert {s for s in JobState if s.terminal} == {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}


def test_wait_with_progress_and_ctrl_c_stops_waiting_without_cancelling(capsys):
    driver = _Scripted(["running"])
    cancelled = []
    driver.cancel = lambda job_id, settings: cancelled.append(job_id)

    def interrupt(seconds):
        raise KeyboardInterrupt

    handle = JobHandle(backend="scripted", id="42", driver=driver)
    final = handle.wait(poll_interval=1, sleep=interrupt, progress=True)
    assert final.state is JobState.RUNNING and cancelled == []
    err = capsys.readouterr().err
    assert "job 42 keeps running" in err and "omnidist cancel 42 --backend scripted" in err
    assert handle.last_status == final


def test_wait_streams_logs():
    class _Logged(_Scripted):
        def logs(self, job_id, settings, follow=False):
            yield "epoch 1 loss 0.9"

    import contextlib
    import io
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        JobHandle(backend="s", id="1", driver=_Logged(["running", "succeeded"])).wait(
            poll_interval=0, sleep=lambda s: __import__("time").sleep(0.05), stream_logs=True)
    assert "epoch 1 loss 0.9" in buffer.getvalue()


# --- trials of a tuning job ---------------------------------------------------------------------------

def _trial(id_: str, value, state=JobState.SUCCEEDED, **params) -> Trial:
    return Trial(id=id_, state=state, parameters=params, value=value)


def test_best_trial_follows_the_goal_and_skips_failed_and_missing_values():
    trials = [_trial("1", 0.5), _trial("2", 0.9, state=JobState.FAILED), _trial("3", None),
              _trial("4", 0.7, state=JobState.RUNNING), _trial("5", float("nan")), _trial("6", 0.2)]
    assert best_trial(trials, maximize=True).id == "4", "a running trial's final value counts; a failed one's not"
    assert best_trial(trials, maximize=False).id == "6"
    assert best_trial([_trial("1", 0.5), _trial("2", 0.5)], maximize=True).id == "1", "the first of equals"
    assert best_trial([_trial("1", None)], maximize=True) is None and best_trial([], maximize=False) is None


def test_trial_is_immutable_and_keeps_the_parameters_order():
    trial = _trial("7", 0.1, lr=0.01, layers=4, optimizer="adam")
    assert trial.parameters == (("lr", 0.01), ("layers", 4), ("optimizer", "adam"))
    assert trial.flags == "--lr=0.01 --layers=4 --optimizer=adam"
    assert Trial(id="1", state="running", parameters=[("a", 1)]).parameters == (("a", 1),)
    status = JobStatus(state="running", metric="acc", trials=[trial], best=trial)
    assert status.trials == (trial,) and hash(status) == hash(JobStatus(state="running", metric="acc",
                                                                       trials=(trial,), best=trial))
    assert JobStatus(state="running").trials == () and JobStatus(state="running").best is None


def test_credentials_are_checked_once_found_and_refused_with_the_first_line_of_the_error():
    from omnidist.backend.values import Credentials

    calls = []
    found = Credentials(found=True, where="~/.config/token", fix="log in")
    assert found.checked(lambda: calls.append(1)).status == "ok" and calls == [1]

    def refuse() -> None:
        raise PermissionError("token expired\ntraceback-like detail")

    refused = found.checked(refuse)
    assert (refused.status, refused.detail, refused.where) == ("refused", "token expired", "~/.config/token")
    assert found.checked(lambda: (_ for _ in ()).throw(ValueError())).detail == "ValueError"
    assert Credentials(found=False, fix="log in").checked(lambda: calls.append(2)).status == "missing"
    assert Credentials(found=True, valid=True).checked(lambda: calls.append(3)).status == "ok"
    assert calls == [1]  # nothing to ask when none were found, or the answer is known
    with pytest.raises(KeyError):  # an error outside those listed is not a refusal
        found.checked(lambda: {}["x"], errors=(PermissionError,))
