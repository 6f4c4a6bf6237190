"""The official ``kubernetes`` client against a local fake API server (:mod:`omnidist_kubernetes.testing`):
idempotent creates, retries, status from conditions, logs from the pods, cancel as a delete."""

from __future__ import annotations

import socket

import pytest

from omnidist.kit import (
    AuthenticationError,
    BackendError,
    ConfigError,
    ConflictError,
    InvalidRequestError,
    JobState,
    NotFoundError,
    ValidationError,
    job_from_dict,
)
from omnidist.testing.fakeserver import Fault
from omnidist_kubernetes import KubernetesSettings
from omnidist_kubernetes.client import named, parse_job_id, status_of
from omnidist_kubernetes.tables import KINDS

SECRET = "hunter2-very-secret"
JOB = {"name": "bert", "framework": "pytorch", "image": "trainer.example/t:1.0", "command": ["python", "train.py"],
       "env": {"WANDB_API_KEY": SECRET}, "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 2}}


def submit(backend, settings, data=None, **fields):
    job = job_from_dict({**(data or JOB), **fields})
    return backend.submit(backend.compile(job, settings), settings)


def test_submit_creates_the_job_under_a_fixed_name(backend, settings, kube):
    handle = submit(backend, settings)
    assert handle.id == "default/pytorchjob/bert-abcde" and handle.url == ""
    (create,) = kube.calls("create")
    assert create.path == "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs"
    assert create.body["metadata"]["name"] == "bert-abcde"
    assert create.body["metadata"]["labels"] == {"omnidist-request-id": "f" * 32}
    stored = kube.jobs[("default", "pytorchjobs", "bert-abcde")]
    assert stored["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2


def test_the_namespace_setting_is_where_the_job_goes(backend, settings, kube):
    import attrs

    handle = submit(backend, attrs.evolve(settings, namespace="ml"))
    assert handle.id == "ml/pytorchjob/bert-abcde" and ("ml", "pytorchjobs", "bert-abcde") in kube.jobs


def test_a_create_whose_answer_was_lost_is_adopted_not_repeated(backend, settings, kube, sleeps):
    kube.fail("create", Fault.drop_after_create())
    handle = submit(backend, settings)
    assert len(kube.calls("create")) == 2 and len(kube.jobs) == 1  # the retry got 409, then found its own
    assert handle.id == "default/pytorchjob/bert-abcde" and len(sleeps) == 1


def test_a_name_held_by_another_job_is_a_clear_conflict(backend, settings, kube):
    submit(backend, settings)
    other = type(backend)(suffix=lambda: "abcde", request_id=lambda: "0" * 32, sleep=lambda s: None)
    with pytest.raises(ConflictError) as caught:
        submit(other, settings)
    assert caught.value.exit_code == 1
    assert "bert-abcde" in str(caught.value) and "did not make it" in str(caught.value)
    assert len(kube.jobs) == 1


@pytest.mark.parametrize("fault", [Fault.http(429, retry_after=7), Fault.http(503), Fault.http(500), Fault.reset()])
def test_transient_failures_are_retried(fault, backend, settings, kube, sleeps):
    kube.fail("create", fault)
    submit(backend, settings)
    assert len(kube.calls("create")) == 2 and len(kube.jobs) == 1
    if fault.retry_after:
        assert sleeps == [7]


def test_retries_are_bounded(backend, settings, kube, sleeps):
    kube.fail("create", *[Fault.http(503)] * 5)
    with pytest.raises(BackendError, match="HTTP 503"):
        submit(backend, settings)
    assert len(kube.calls("create")) == settings.retry_attempts and not kube.jobs


def test_a_rejection_is_final_and_its_echo_of_a_secret_masked(backend, settings, kube):
    kube.fail("create", Fault.http(422, f'PyTorchJob.kubeflow.org "bert" is invalid: env[0].value: "{SECRET}"'))
    with pytest.raises(InvalidRequestError) as caught:
        submit(backend, settings)
    assert SECRET not in str(caught.value) and "is invalid" in str(caught.value)
    assert len(kube.calls("create")) == 1


def test_the_fake_refuses_what_a_cluster_refuses(backend, settings, kube):
    compiled = backend.compile(job_from_dict(JOB), settings)
    request = {**compiled.request, "spec": {**compiled.request["spec"], "unknownField": 1}}
    with pytest.raises(InvalidRequestError, match="spec.unknownField: unknown field"):
        backend.submit(type(compiled)(backend="kubernetes", request=request, format="yaml"), settings)


def test_unreachable_api_server_is_not_retried(backend, kube, sleeps):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = KubernetesSettings(api_server=f"http://127.0.0.1:{port}", retry_attempts=4)
    with pytest.raises(BackendError, match="cannot reach the API server"):
        submit(backend, settings)
    assert sleeps == []


def test_status_follows_the_conditions_until_the_end(backend, settings, kube):
    handle = submit(backend, settings)
    seen = []
    final = handle.wait(poll_interval=0, on_change=lambda s: seen.append(s.state), sleep=lambda s: None)
    assert seen == [JobState.PENDING, JobState.RUNNING, JobState.SUCCEEDED]
    assert final.native_state == "Succeeded"


def test_a_failed_jobs_message_is_masked(backend, settings, kube):
    kube.fail_jobs(f"Master failed: WANDB_API_KEY={SECRET} was rejected")
    handle = submit(backend, settings)
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and SECRET not in final.message and "Master failed" in final.message


@pytest.mark.parametrize(("conditions", "labels", "state"), [
    ([], {}, JobState.QUEUED),
    ([("Created", "True")], {}, JobState.PENDING),
    ([("Created", "True"), ("Running", "True")], {}, JobState.RUNNING),
    ([("Created", "True"), ("Restarting", "True")], {}, JobState.RUNNING),
    ([("Created", "True"), ("Running", "False"), ("Succeeded", "True")], {}, JobState.SUCCEEDED),
    ([("Created", "True"), ("Running", "False"), ("Failed", "True")], {}, JobState.FAILED),
    ([("Created", "True"), ("Suspended", "True")], {}, JobState.PAUSED),
    ([("Created", "True"), ("Suspended", "True")], {"kueue.x-k8s.io/queue-name": "q"}, JobState.QUEUED),
])
def test_states_from_conditions(conditions, labels, state):
    job = {"metadata": {"labels": labels}, "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}
    assert status_of(job).state is state


def test_a_job_being_deleted_is_cancelling():
    job = {"metadata": {"deletionTimestamp": "2025-01-01T00:00:00Z"},
           "status": {"conditions": [{"type": "Running", "status": "True"}]}}
    assert status_of(job).state is JobState.CANCELLING


def test_logs_are_every_pods_lines_masked(backend, settings, kube):
    kube.output = "{tag}: WANDB_API_KEY=" + SECRET + " step {step}\n"
    handle = submit(backend, settings)
    handle.status(), handle.status()  # the fake starts the pods when the job runs
    lines = list(handle.logs())
    assert [line.split("]")[0] for line in lines[:-1:2]] == ["[master-0", "[worker-0", "[worker-1"]
    assert all(SECRET not in line for line in lines)
    assert lines[0].startswith("[master-0] master-0: WANDB_API_KEY=") and lines[-1].startswith("job state:")
    assert kube.calls("pods")[0].query["labelSelector"] == ["training.kubeflow.org/job-name=bert-abcde"]
    assert {c.query.get("container", [None])[0] for c in kube.calls("log")} == {"pytorch"}


def test_follow_streams_the_primary_pod_until_the_job_ends(backend, settings, kube):
    handle = submit(backend, settings)
    lines = list(handle.logs(follow=True))
    # The fake moves one state per read: created, then running (its pods start), then succeeded.
    assert lines == ["job state: pending — job is created", "[master-0] master-0: step 0",
                     "[master-0] master-0: step 1", "job state: running — job is running",
                     "job state: succeeded — job is succeeded"]
    assert [c.query.get("follow") for c in kube.calls("log")] == [["True"]]  # Go's ParseBool takes it


def test_follow_on_an_mpijob_streams_the_launcher(backend, settings, kube):
    handle = submit(backend, settings, framework="horovod", workers={"replicas": 1})
    assert handle.id == "default/mpijob/bert-abcde"
    lines = list(handle.logs(follow=True))
    assert "[launcher] launcher: step 0" in lines
    assert kube.calls("log")[0].query["container"] == ["launcher"]


def test_cancel_deletes_the_job_with_its_pods_first(backend, settings, kube):
    kube.keep_running()
    handle = submit(backend, settings)
    handle.status()
    handle.cancel()
    (delete,) = kube.calls("cancel")
    assert delete.query["propagationPolicy"] == ["Foreground"]
    assert handle.status().state is JobState.CANCELLING
    with pytest.raises(NotFoundError):
        handle.status()


def test_cancel_of_a_finished_job_does_nothing(backend, settings, kube):
    handle = submit(backend, settings)
    handle.wait(poll_interval=0, sleep=lambda s: None)
    handle.cancel()
    assert kube.calls("cancel") == []


def test_a_bare_name_is_found_in_any_kind(backend, settings, kube):
    submit(backend, settings, framework="tensorflow")
    status = backend.status("bert-abcde", settings)
    assert status.state is JobState.PENDING
    gets = [c.path for c in kube.calls("get")]
    assert gets[-1].endswith("/tfjobs/bert-abcde") and any("/mpijobs/" in g for g in gets)
    with pytest.raises(NotFoundError, match="no PyTorchJob, TFJob or MPIJob named 'nothing'"):
        backend.status("nothing", settings)
    backend.cancel("bert-abcde", settings)
    assert [c.path for c in kube.calls("cancel")] == ["/apis/kubeflow.org/v1/namespaces/default/tfjobs/bert-abcde"]


@pytest.mark.parametrize(("text", "expected"), [
    ("ml/pytorchjob/bert", ("ml", "PyTorchJob", "bert")),
    ("tfjobs/bert", ("default", "TFJob", "bert")),
    ("MPIJob/bert", ("default", "MPIJob", "bert")),
    ("bert", ("default", None, "bert")),
])
def test_job_ids(text, expected):
    namespace, kind, name = parse_job_id(text, KubernetesSettings())
    assert (namespace, kind.kind if kind else None, name) == expected


@pytest.mark.parametrize("text", ["a/b/c/d", "ml/deployment/bert", "ml//bert"])
def test_bad_job_ids_are_exit_2(text):
    with pytest.raises(ValidationError) as caught:
        parse_job_id(text, KubernetesSettings())
    assert caught.value.exit_code == 2


def test_the_submitted_name_fits_every_pod_name():
    request = {"kind": "PyTorchJob", "metadata": {"name": "a" * 54},
               "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 100}}}}
    name = named(request, "abcde", "f" * 32)["metadata"]["name"]
    assert name.endswith("-abcde") and len(name + "-worker-99") == 63
    assert request["metadata"] == {"name": "a" * 54}  # the compiled request is left as it was
    assert set(KINDS) == {"PyTorchJob", "TFJob", "MPIJob"}


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- {{name: fake, cluster: {{server: "{url}"}}}}
- {{name: elsewhere, cluster: {{server: "http://127.0.0.1:9"}}}}
users:
- {{name: trainer, user: {{token: kube-token-123}}}}
contexts:
- {{name: fake-ctx, context: {{cluster: fake, user: trainer, namespace: ml}}}}
- {{name: other-ctx, context: {{cluster: elsewhere, user: trainer}}}}
current-context: other-ctx
"""


def test_kubeconfig_and_context_choose_the_cluster_and_credentials(backend, kube, tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(url=kube.url))
    settings = KubernetesSettings(kubeconfig=str(path), context="fake-ctx", retry_attempts=2)
    handle = submit(backend, settings)
    assert handle.id == "default/pytorchjob/bert-abcde"
    headers = {k.lower(): v for k, v in kube.calls("create")[0].headers.items()}
    assert headers["authorization"] == "Bearer kube-token-123"


def test_no_kubeconfig_outside_a_cluster_is_missing_credentials(backend, monkeypatch, tmp_path):
    """Exit 1 with the way to get credentials, as on the clouds: nothing in the job is wrong."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(AuthenticationError) as caught:
        backend.status("bert", KubernetesSettings())
    assert caught.value.exit_code == 1
    assert str(caught.value).startswith("kubernetes: no kubeconfig and not inside a cluster: ")
    assert "get-credentials" in str(caught.value) and "api_server" in str(caught.value)


def test_a_kubeconfig_that_is_there_but_broken_is_a_config_error(backend, monkeypatch, tmp_path):
    broken = tmp_path / "config"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    monkeypatch.setenv("KUBECONFIG", str(broken))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError) as caught:
        backend.status("bert", KubernetesSettings())
    assert caught.value.exit_code == 2 and str(broken) in str(caught.value)


def test_a_named_context_that_is_missing_is_a_config_error(backend, kube, tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(url=kube.url))
    with pytest.raises(ConfigError, match="context"):
        backend.status("bert", KubernetesSettings(kubeconfig=str(path), context="nope"))


@pytest.mark.parametrize("fault", [Fault.close_after_create(), Fault.slow(3)])
def test_a_create_that_got_no_answer_is_adopted(fault, backend, settings, kube):
    import attrs

    kube.fail("create", fault)
    handle = submit(backend, attrs.evolve(settings, request_timeout_s=1))
    assert len(kube.jobs) == 1 and handle.id == "default/pytorchjob/bert-abcde"
    assert len(kube.calls("create")) == 2  # the repeat found the name taken by its own job


def _disrupt(kube, namespace, **status):
    for pod in kube.pods[namespace]:
        if pod["metadata"]["name"].endswith("worker-0"):
            pod["status"].update(status)


@pytest.mark.parametrize(("status", "ended"), [
    ({}, "failure"),
    ({"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}, "preemption"),
    ({"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]},
     "preemption"),
    ({"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}]},
     "node_failure"),
])
def test_a_failed_job_whose_pod_was_disrupted_ended_by_preemption_or_node_loss(backend, settings, kube, status,
                                                                                ended):
    kube.fail_jobs("PyTorchJob cassava is failed because 1 Worker replica(s) failed.")
    handle = submit(backend, settings, workers={"replicas": 1})
    assert handle.wait(poll_interval=0, sleep=lambda s: None).ended.value == "failure"
    namespace = handle.id.split("/")[0]
    _disrupt(kube, namespace, **status)
    assert handle.status().ended.value == ended


def test_mpi_operators_evicted_condition_is_a_preemption(backend, settings, kube):
    kube.fail_jobs("MPIJobEvicted: launcher pod evicted")
    final = submit(backend, settings, framework="horovod").wait(poll_interval=0, sleep=lambda s: None)
    assert final.ended.value == "preemption"
