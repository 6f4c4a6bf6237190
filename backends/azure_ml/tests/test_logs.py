"""``logs``: the job's log files streamed through the real ``MLClient`` from the fake's
workspace discovery, run history and blob storage (conftest.py), in-process and by the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from omnidist.kit import NotFoundError, PermissionDeniedError
from omnidist.testing import SleepRecorder
from omnidist.testing.fakeserver import Fault
from omnidist_azure_ml import AzureMLBackend
from omnidist_azure_ml.testing import FAILURE

NAME = "cassava-s1"
STD_LOG = "user_logs/std_log.txt"
URL_LINE = f"{NAME}: logs at https://ml.azure.com/runs/{NAME}?wsid=fake"
JOB = {"name": "cassava", "framework": "pytorch", "image": "trainer.example/t:1", "command": ["python", "train.py"],
       "primary": {"accelerator": "V100:8"}, "workers": {"replicas": 1}}
BLOB = r"/blob/azureml/ExperimentRun/dcid\.cassava-s1/user_logs/std_log\.txt$"
DETAILS = r"/runs/cassava-s1/details$"

CHUNKS = ["warming up\nepoch 1 lo", "ss=0.9\nepoch 2 loss=0.5\n", "", "done\nexit"]
"""What the job writes to std_log.txt between polls (a line split across two polls, an idle
poll, and a last line with no newline)."""

FOLLOWED = [URL_LINE, f"{NAME}: Running (running)", f"==> {STD_LOG} <==", "warming up", "epoch 1 loss=0.9",
            "epoch 2 loss=0.5", "done", "exit", f"{NAME}: Completed (succeeded)"]


class Sleeps(SleepRecorder):
    """Records like any SleepRecorder, and lets the job write its next log chunk at each wait."""

    def __init__(self, azure, chunks=()):
        super().__init__()
        self.azure, self.chunks = azure, list(chunks)

    def __call__(self, seconds: float) -> None:
        super().__call__(seconds)
        if self.chunks and self.azure.jobs:
            self.azure.write(NAME, STD_LOG, self.chunks.pop(0))


@pytest.fixture
def sleeps(azure):
    return Sleeps(azure)


def submit(azure, settings, compile_, sleep, timeline):
    """Submit JOB on a fake that writes nothing by itself but a rank-1 log Azure does not stream."""
    azure.timeline = timeline
    azure.output = {"Running": {"user_logs/std_log_process_1.txt": "rank 1 at step {step}\n"}}
    return AzureMLBackend(suffix=lambda: "s1", sleep=sleep).submit(compile_(JOB), settings)


def followed(azure, settings, compile_, chunks=CHUNKS):
    """Follow a job that runs for five polls while writing ``chunks``; returns (lines, sleeps)."""
    sleeps = Sleeps(azure, chunks)
    handle = submit(azure, settings, compile_, sleeps, ["NotStarted", "Queued"] + ["Running"] * 5 + ["Completed"])
    return list(handle.logs(follow=True)), sleeps


def test_without_follow_the_lines_written_so_far(azure, settings, compile_, sleeps):
    handle = submit(azure, settings, compile_, sleeps, ["Running"] * 9 + ["Completed"])
    azure.write(NAME, STD_LOG, "epoch 1\r\nepoch 2\nepo")
    azure.write(NAME, "system_logs/cs_capability/cs-capability.log", "capability check\n")
    lines = list(handle.logs())
    assert lines == [URL_LINE, f"{NAME}: Running (running)", f"==> {STD_LOG} <==", "epoch 1", "epoch 2", "epo"]
    assert sleeps == [] and len(azure.server.calls("GET", DETAILS)) == 1
    assert "rank 1 at step 2\n" in azure.log_text(NAME, "user_logs/std_log_process_1.txt"), "written, not streamed"
    azure.write(NAME, STD_LOG, "ch 3\n")
    assert list(handle.logs())[3:] == ["epoch 1", "epoch 2", "epoch 3"], "each call reads from the start"


def test_follow_streams_new_lines_in_order_each_once(azure, settings, compile_):
    lines, sleeps = followed(azure, settings, compile_)
    assert lines == FOLLOWED
    assert sleeps == [settings.poll_interval_s] * 5
    ranges = [r.headers["Range"] for r in azure.server.calls("GET", BLOB)]
    # Each poll asks for the bytes after the last complete line: an idle poll and the split
    # lines ("epoch 1 lo", "exit") are asked for again from the same offset.
    assert ranges == ["bytes=0-", "bytes=11-", "bytes=45-", "bytes=45-", "bytes=50-"]


def test_follow_yields_lines_while_the_job_runs(azure, settings, compile_):
    sleeps = Sleeps(azure, CHUNKS)
    handle = submit(azure, settings, compile_, sleeps, ["NotStarted", "Queued"] + ["Running"] * 5 + ["Completed"])
    stream = handle.logs(follow=True)
    assert next(line for line in stream if line == "warming up")
    assert azure.jobs[NAME]["properties"]["status"] == "Running" and len(sleeps) == 1
    assert list(stream) == FOLLOWED[4:]


@pytest.mark.parametrize("path, fault", [
    (BLOB, Fault.http(503, "server busy")), (BLOB, Fault.reset()), (DETAILS, Fault.http(503, "busy")),
    (r"^/discovery$", Fault.http(429, "slow down", retry_after=2)),
    (r"/workspaces/ws-1$", Fault.http(500, "internal")),
], ids=["blob-503", "blob-reset", "details-503", "discovery-429", "workspace-500"])
def test_transient_failures_are_retried_without_repeating_lines(path, fault, azure, settings, compile_):
    azure.server.fail("GET", path, fault)
    lines, sleeps = followed(azure, settings, compile_)
    assert lines == FOLLOWED
    retried = [s for s in sleeps if s != settings.poll_interval_s]
    assert len(retried) == 1 and (fault.retry_after is None or retried == [2])


def test_a_hung_log_fetch_is_abandoned_at_the_request_timeout(azure, settings, compile_):
    azure.server.fail("GET", BLOB, Fault.slow(2.0))
    lines, sleeps = followed(azure, attrs.evolve(settings, request_timeout_s=0.3), compile_)
    assert lines == FOLLOWED
    assert len(sleeps) == 6, "five polls and one retry: the hung fetch was abandoned, not waited out"


def test_a_refused_log_fetch_fails_at_once_with_the_service_message(azure, settings, compile_, sleeps):
    handle = submit(azure, settings, compile_, sleeps, ["Running"] * 3)
    azure.write(NAME, STD_LOG, "epoch 1\n")
    azure.server.fail("GET", BLOB, Fault.http(403, "Server failed to authenticate the request"))
    with pytest.raises(PermissionDeniedError, match="log file user_logs/std_log.txt: Server failed to auth") as info:
        list(handle.logs(follow=True))
    assert "sig=" not in str(info.value), "a SAS URL is a credential: never in a message"
    assert sleeps == [] and len(azure.server.calls("GET", BLOB)) == 1


def test_state_changes_frame_the_lines_of_the_default_fake_job(azure, settings, compile_, sleeps):
    azure.timeline = ["NotStarted", "Queued", "Preparing", "Running", "Running", "Failed"]
    handle = AzureMLBackend(suffix=lambda: "s1", sleep=sleeps).submit(compile_(JOB), settings)
    failed = f"{NAME}: Failed (failed) — {FAILURE}"  # the run's error, from run history
    assert list(handle.logs(follow=True)) == [
        URL_LINE, f"{NAME}: Preparing (pending)", f"{NAME}: Running (running)", f"==> {STD_LOG} <==",
        "step 3: training", "step 4: training", failed]
    assert sleeps == [settings.poll_interval_s] * 3
    # An ended job, read again: its lines, then how it ended.
    assert list(handle.logs()) == [URL_LINE, f"==> {STD_LOG} <==", "step 3: training", "step 4: training", failed]
    assert handle.status().message == FAILURE


def test_legacy_log_files_are_streamed_when_there_is_no_std_log(azure, settings, compile_, sleeps):
    handle = submit(azure, settings, compile_, sleeps, ["Completed"])
    azure.write(NAME, "azureml-logs/70_driver_log.txt", "driver says hi\n")
    azure.write(NAME, "azureml-logs/55_azureml-execution-tvmps.txt", "image pulled\n")
    azure.write(NAME, "logs/azureml/job_prep_azureml.log", "not a streamed file\n")
    assert list(handle.logs(follow=True)) == [
        URL_LINE, "==> azureml-logs/55_azureml-execution-tvmps.txt <==", "image pulled",
        "==> azureml-logs/70_driver_log.txt <==", "driver says hi", f"{NAME}: Completed (succeeded)"]


def test_unknown_job_is_not_found(azure, settings):
    with pytest.raises(NotFoundError, match="Job nope not found"):
        list(AzureMLBackend().logs("nope", settings))


def test_cli_follows_the_logs(azure, settings, compile_, tmp_path):
    submit(azure, settings, compile_, None, ["Queued"] + ["Running"] * 3 + ["Completed"])
    azure.output["Running"] = {STD_LOG: "step {step}: training\n"}
    (tmp_path / "omnidist.toml").write_text(
        f'default = "fake"\n[profiles.fake]\nbackend = "azure_ml"\nsubscription_id = "sub-1"\n'
        f'resource_group = "rg-1"\nworkspace = "ws-1"\ncredential = "anonymous"\nendpoint = "{azure.server.url}"\n'
        "poll_interval_s = 0.01\n")
    # The SDK records this process's custom cloud in AZUREML_CURRENT_CLOUD; a child inheriting
    # it fails importing the SDK, before it could register the cloud from the profile.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIDIST_") and k != "AZUREML_CURRENT_CLOUD"}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    result = subprocess.run([str(Path(sys.executable).with_name("omnidist")), "logs", NAME, "--backend", "azure_ml",
                             "--follow"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        URL_LINE, f"{NAME}: Running (running)", f"==> {STD_LOG} <==", "step 1: training", "step 2: training",
        "step 3: training", f"{NAME}: Completed (succeeded)"]
