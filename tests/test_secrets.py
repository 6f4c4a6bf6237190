"""Displays: short reprs, notebook HTML, secret masking (omnidist/display.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnidist import notebook as display
from omnidist import secrets
from omnidist.backend.values import CompiledJob, JobState, JobStatus, Note
from omnidist.errors import InvalidRequestError, TransientBackendError
from omnidist.model.job import DistributedJob
from omnidist.model.roles import Role
from omnidist.secrets import MASK, mask_lines, mask_status, mask_text, masking_errors, secret_values
from omnidist.submission.handle import JobHandle


def _job():
    return DistributedJob(
        name="vision", framework="pytorch", image="img:1", command="python t.py",
        env={"WANDB_API_KEY": "abc123secret", "NCCL_DEBUG": "INFO"},
        workers=Role(replicas=3),
        backends={"vertex": {"machine_types": {"workers": "n1-highmem-96"}}},
    )


def test_short_repr():
    assert repr(_job()) == "DistributedJob('vision', pytorch, primary×1, workers×3)"


def test_job_html_lists_roles_machines_and_masks_secrets():
    html = _job()._repr_html_()
    assert "<table style='max-width:100%'>" in html and "workers" in html
    text = html.replace("<wbr>", "")  # <wbr>: where a long cell may wrap
    assert "vertex: n1-highmem-96" in text
    assert "abc123secret" not in text and MASK in text and "NCCL_DEBUG=INFO" in text


def test_compiled_html_masks_every_env_shape_but_the_request_keeps_values():
    request = {
        "pools": [{"env": [{"name": "DB_PASSWORD", "value": "hunter22"}, {"name": "A", "value": "1"}]}],
        "environment_variables": {"HF_TOKEN": "tok-999", "B": "2"},
        "containerCommand": ["env", "MY_SECRET=s3cr3t", "C=3", "python"],
    }
    compiled = CompiledJob(backend="x", request=request, diagnostics=[Note(kind="hint", field="f", message="m")])
    html = compiled._repr_html_()
    for secret in ("hunter22", "tok-999", "s3cr3t"):
        assert secret not in html
        assert secret in str(compiled)  # the request itself is never altered
    assert "C=3" in html and "hint" in html
    assert repr(compiled) == "CompiledJob(backend='x', 1 notes)"


def test_mask_text_for_log_lines():
    assert mask_text("token is abc123secret!", ["abc123secret"]) == f"token is {MASK}!"


def test_secret_values_reads_every_env_shape():
    native = {
        "jobSpec": {"workerPoolSpecs": [{"containerSpec": {"env": [{"name": "DB_PASSWORD", "value": "hunter22"},
                                                                   {"name": "NCCL_DEBUG", "value": "INFO"}]}}]},
        "environment_variables": {"HF_TOKEN": "tok-999", "B": "2", "MY_KEY": "abc"},
        "trainingInput": {"masterConfig": {"containerCommand": ["env", "WANDB_API_KEY=w4ndb", "C=3", "python"]}},
    }
    assert secret_values(native) == {"hunter22", "tok-999", "w4ndb"}, "short values are not secrets"


def test_mask_text_finds_escaped_and_nested_values():
    secrets = {'pa"ss\\word', "abcd", "abcdef"}
    text = 'rejected "pa\\"ss\\\\word", then abcdef and abcd'
    assert mask_text(text, secrets) == f'rejected "{MASK}", then {MASK} and {MASK}'


def test_masking_errors_masks_the_message_and_keeps_the_error():
    with pytest.raises(InvalidRequestError) as err:
        with masking_errors({"sk-live-1234"}):
            raise InvalidRequestError("bad value sk-live-1234 for env", backend="vertex", status=400)
    assert str(err.value) == f"vertex: bad value {MASK} for env (HTTP 400)"
    assert err.value.status == 400 and err.value.backend == "vertex"


def test_mask_lines_masks_each_line_and_an_error_while_reading():
    def lines():
        yield "token sk-live-1234"
        raise TransientBackendError("lost sk-live-1234", backend="x")

    masked = mask_lines(lines(), {"sk-live-1234"})
    assert next(masked) == f"token {MASK}"
    with pytest.raises(TransientBackendError, match=f"lost {MASK}"):
        next(masked)


def test_handle_html_shows_state_and_console_link():
    handle = JobHandle(backend="vertex", id="projects/p/jobs/1", url="https://console/x?a=<b>")
    assert "not polled yet" in handle._repr_html_()
    handle._seen["status"] = JobStatus(state=JobState.RUNNING, message="2/3 replicas")
    html = handle._repr_html_()
    assert "running — 2/3 replicas" in html and "href='https://console/x?a=&lt;b&gt;'" in html


def _search() -> JobStatus:
    from omnidist.backend.values import Trial

    good = Trial(id="2", state="succeeded", parameters={"lr": 0.0031622776, "opt": "<adam>"}, value=0.84, step=9)
    bad = Trial(id="1", state="failed", parameters={"lr": 0.1}, message="exit 1 with key sk-live-1234")
    return JobStatus(state=JobState.RUNNING, metric="accuracy", trials=(bad, good), best=good)


def test_trials_table_and_best_line():
    status = _search()
    header, rows = display.trial_rows(status)
    assert header == ("trial", "state", "accuracy", "lr", "opt")
    assert rows == [("1", "failed", "", "0.1", ""), ("2", "succeeded", "0.84", "0.00316228", "<adam>")]
    assert display.best_line(status) == "best: trial 2, accuracy=0.84: --lr=0.0031622776 --opt=<adam>"
    assert display.best_line(JobStatus(state="running")) == ""


def test_status_and_handle_html_show_the_trials_and_the_best():
    status = _search()
    for html in (status._repr_html_(), display.handle_html(JobHandle(backend="vertex", id="j", _seen={"status": status}))):
        assert "trials (2)" in html and "&lt;adam&gt;" in html and "best: trial 2, accuracy=0.84" in html
    plain = JobHandle(backend="vertex", id="j", _seen={"status": JobStatus(state="running")})
    assert "trials" not in plain._repr_html_()


def test_mask_status_masks_the_trials_messages():
    masked = mask_status(_search(), {"sk-live-1234"})
    assert masked.trials[0].message == f"exit 1 with key {MASK}"
    assert masked.trials[1] == _search().trials[1] and masked.best == _search().best


def test_escaping():
    assert "&lt;script&gt;" in display.table([("<script>",)], ("x",))


def test_runtime_context_renders_short_and_as_html():
    import json

    import omnidist.runtime as rt

    ctx = rt.context({"CLUSTER_SPEC": json.dumps({"cluster": {"workerpool0": ["a:2222"], "workerpool1": ["b:2222"]},
                                                  "task": {"type": "workerpool1", "index": 0}})})
    assert repr(ctx) == "RuntimeContext(vertex worker 0: rank 1/2, nodes 2, master a:2222)"
    html = ctx._repr_html_()
    assert "runtime context (vertex)" in html and "<td style='text-align:left'>worker</td>" in html and "b:2222" in html


def test_migration_report_repr_is_a_summary():
    import omnidist

    _, report = omnidist.migrate(
        str(__import__("pathlib").Path(__file__).resolve().parents[1] / "examples/migration/ai-platform-job.yaml"),
        target="vertex",
    )
    text = repr(report)
    assert text.startswith("MigrationReport(ai_platform -> vertex: ") and "inferred" in text and len(text) < 120
    html = report._repr_html_()
    assert "ai_platform → vertex" in html and f"<td style='{display.CELL}'>{display.badge('inferred')}</td>" in html


# --- the clues that spare a text the patterns it cannot match ------------------------------------

_FRAGMENTS = ["://", "@", "=", ":", "\"", " ", "user", "pa55word", "Bearer ", "Basic ", "Token ", "ghp_", "hf_",
              "AKIA", "sk-", "eyJ", ".", "DB_PASSWORD", "HF_TOKEN", "API_KEY", "\"name\": ", "\"value\": ", "==",
              "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "AccountKey", "sig", ";", "&",
              "0123456789abcdefABCDEF", "x" * 20, "Z" * 40, "/" * 3, "+" * 5, "postgres", "TOKEN", "Pwd", "DSN"]


def _every_shape(text: str) -> str:
    """The masking as it was before the clues: every shape tried on every text."""
    for shape in secrets.SECRET_SHAPES:
        if shape.search(text):
            text = shape.sub(lambda m: (m.groupdict().get("keep") or "") + secrets.MASK, text)
    return text


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=6)), max_size=14).map("".join))
def test_the_clues_never_change_what_is_masked(text):
    assert secrets.mask_shapes(text) == _every_shape(text)
    assert secrets.secret_parts(text) == [m["secret"] for shape in secrets.SECRET_SHAPES for m in shape.finditer(text)]


def test_every_shape_has_its_clues_and_a_shape_without_them_fails_loudly(monkeypatch):
    assert len(secrets.SHAPE_CLUES) == len(secrets.SECRET_SHAPES)
    monkeypatch.setattr(secrets, "SHAPE_CLUES", secrets.SHAPE_CLUES[:-1])
    with pytest.raises(ValueError):  # never a shape silently left untried
        secrets.mask_shapes("-----BEGIN RSA PRIVATE KEY-----")


def test_a_line_without_clues_compiles_none_of_the_costly_patterns(monkeypatch):
    from omnidist.patterns import LazyPattern

    costly = secrets.SECRET_SHAPES[5]  # the secret-looking variable names: the slowest to compile
    fresh = LazyPattern(costly.pattern, costly.flags)
    monkeypatch.setattr(secrets, "SECRET_SHAPES", (*secrets.SECRET_SHAPES[:5], fresh, *secrets.SECRET_SHAPES[6:]))
    line = "processes_per_node: 8 processes per node: the platform starts the command once per node"
    assert secrets.mask_shapes(line) == line and fresh._compiled is None
    assert secrets.mask_shapes("DB_PASSWORD=hunter22") == "DB_PASSWORD=" + secrets.MASK
    assert fresh._compiled is not None
