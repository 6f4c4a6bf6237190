"""Portable checkpoints (SPEC §15): one folder per step, complete only once its block ended."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from omnidist import runtime
from omnidist.runtime import checkpoints
from omnidist.runtime.errors import RuntimeEnvError


@pytest.fixture
def env(tmp_path):
    return {"OMNIDIST_OUTPUT_checkpoints": str(tmp_path / "ckpt")}


def test_no_checkpoints_output_means_none(tmp_path):
    assert runtime.checkpoint_dir({}) is None
    assert runtime.latest_checkpoint({}) is None
    with pytest.raises(RuntimeEnvError, match="no output named 'checkpoints'"), runtime.checkpoint(1, {}):
        pass


def test_a_save_becomes_the_latest_only_when_its_block_ends(env, tmp_path):
    assert runtime.checkpoint_dir(env) == tmp_path / "ckpt"
    assert runtime.latest_checkpoint(env) is None
    with runtime.checkpoint(10, env) as folder:
        (folder / "model.pt").write_text("ten")
        assert runtime.latest_checkpoint(env) is None  # not complete yet
    with runtime.checkpoint(20, env) as folder:
        (folder / "model.pt").write_text("twenty")
    last = runtime.latest_checkpoint(env)
    assert (last.step, (last.path / "model.pt").read_text()) == (20, "twenty")
    assert last.path == tmp_path / "ckpt" / "step-20"
    assert [c.step for c in checkpoints.checkpoints(env)] == [10, 20]
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["step-10", "step-20"]  # no temporary folder left


def test_a_failed_save_leaves_the_previous_one_latest(env, tmp_path):
    with runtime.checkpoint(1, env) as folder:
        (folder / "a").write_text("1")
    with pytest.raises(KeyboardInterrupt), runtime.checkpoint(2, env) as folder:
        (folder / "a").write_text("half")
        raise KeyboardInterrupt
    assert runtime.latest_checkpoint(env).step == 1
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["step-1"]


def test_a_folder_without_the_marker_is_ignored_and_a_step_is_replaced(env, tmp_path):
    (tmp_path / "ckpt" / "step-99").mkdir(parents=True)  # a copy cut off before its marker
    (tmp_path / "ckpt" / "notes").mkdir()
    with runtime.checkpoint(5, env) as folder:
        (folder / "a").write_text("old")
    with runtime.checkpoint(5, env) as folder:
        (folder / "b").write_text("new")
    last = runtime.latest_checkpoint(env)
    assert last.step == 5 and sorted(p.name for p in last.path.iterdir()) == [checkpoints.MARKER, "b"]


@pytest.mark.parametrize("step", [-1, 1.5, True, "3"])
def test_bad_steps_are_refused(env, step):
    with pytest.raises(ValueError, match="integer >= 0"), runtime.checkpoint(step, env):
        pass


def test_a_uri_without_a_local_folder_is_a_clear_error():
    with pytest.raises(RuntimeEnvError, match="OMNIDIST_OUTPUT_checkpoints.*no local folder"):
        runtime.checkpoint_dir({"OMNIDIST_OUTPUT_checkpoints": "s3://bucket/ckpt"})


def test_a_gs_uri_is_the_fuse_mount(monkeypatch, tmp_path):
    """Vertex AI mounts Cloud Storage under /gcs/ (its platform module's BOUND.mounts)."""
    import dataclasses

    from omnidist.runtime import platforms
    from omnidist.runtime.platforms import vertex

    assert vertex.BOUND.mounts == {"/gcs/": "gs://"}
    monkeypatch.setattr(platforms, "bound", lambda: {"vertex": dataclasses.replace(vertex.BOUND, mounts={f"{tmp_path}/": "gs://"})})
    assert runtime.checkpoint_dir({"OMNIDIST_OUTPUT_checkpoints": "gs://b/run/ckpt"}) == tmp_path / "b/run/ckpt"


def test_sagemaker_without_a_hint_uses_its_synced_folder(monkeypatch, tmp_path):
    from omnidist.runtime.platforms import sagemaker

    monkeypatch.setattr(sagemaker, "CHECKPOINT_PATH", str(tmp_path))
    assert runtime.checkpoint_dir({"SM_CURRENT_HOST": "algo-1"}) == tmp_path
    assert runtime.checkpoint_dir({"OTHER": "x"}) is None


def test_a_process_killed_mid_save_leaves_no_checkpoint(env, tmp_path):
    script = textwrap.dedent("""
        import os, signal, sys
        from omnidist import runtime
        with runtime.checkpoint(1) as folder:
            (folder / "a").write_text("done")
        with runtime.checkpoint(2) as folder:
            (folder / "a").write_text("half")
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, **env}, check=False)
    assert proc.returncode == -9
    assert runtime.latest_checkpoint(env).step == 1


def test_processes_saving_the_same_steps_into_one_folder_all_succeed(env, tmp_path):
    """Every replica of a job may save each step into the one folder they share (a local run, a mount
    every node sees): no save fails, and each step ends up whole and marked complete."""
    script = textwrap.dedent("""
        import sys
        from omnidist import runtime
        for step in range(30):
            with runtime.checkpoint(step) as folder:
                (folder / "state").write_text(str(step) * 1000)
        print("ok", flush=True)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in outputs]
    saved = checkpoints.checkpoints(env)
    assert [c.step for c in saved] == list(range(30))
    assert all((c.path / "state").read_text() == str(c.step) * 1000 for c in saved)
