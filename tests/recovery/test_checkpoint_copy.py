"""The latest complete checkpoint copied between clouds' object stores with each cloud's real SDK
(google-cloud-storage against the fake Cloud Storage, boto3 against moto's S3), both ways: only the
newest ``step-N`` folder holding the completion marker, every object's bytes, the marker last."""

from __future__ import annotations

import os
import types
import uuid
from typing import Any

import pytest

from omnidist import errors
from omnidist.recovery import checkpoints
from omnidist.runtime.checkpoints import MARKER
from omnidist_aws import s3 as aws_s3
from omnidist_aws.session import translate_error
from omnidist_google import storage as google_storage

STATE = os.urandom(300_000)  # bigger than one read, not one of the others' bytes
SAVES = {  # name under the checkpoints folder -> bytes
    "step-1/state.pt": b"old", "step-1/" + MARKER: b"",
    "step-3/state.pt": STATE, "step-3/optim/adam.bin": b"moments", "step-3/" + MARKER: b"",
    "step-5/state.pt": b"cut off by the preemption",  # no marker: not a checkpoint
    ".step-6.tmp-41/state.pt": b"a save in progress",
}
COPIED = {"step-3/state.pt": STATE, "step-3/optim/adam.bin": b"moments", "step-3/" + MARKER: b""}


def gcs_store(gcs: Any) -> checkpoints.CheckpointStore:
    settings = types.SimpleNamespace(project="p", credentials="anonymous", storage_endpoint=gcs.endpoint)
    return google_storage.checkpoint_store(settings, "vertex")


def s3_store(client: Any) -> checkpoints.CheckpointStore:
    return aws_s3.checkpoint_store(lambda: client, lambda exc: translate_error(exc, backend="sagemaker"))


def bucket(client: Any) -> str:
    name = f"ckpt-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return name


def in_s3(client: Any, name: str, prefix: str) -> dict[str, bytes]:
    listed = client.list_objects_v2(Bucket=name, Prefix=prefix).get("Contents") or []
    return {o["Key"][len(prefix):]: client.get_object(Bucket=name, Key=o["Key"])["Body"].read() for o in listed}


def test_from_cloud_storage_to_s3_only_the_newest_complete_save_goes(gcs, s3):
    gcs.objects.update({("train", f"run/ckpt/{name}"): data for name, data in SAVES.items()})
    gcs.objects[("train", "run/ckpt-other/step-9/" + MARKER)] = b""  # a sibling prefix is not under it
    target = bucket(s3)
    step = checkpoints.copy_latest(gcs_store(gcs), "gs://train/run/ckpt", s3_store(s3), f"s3://{target}/moved/ckpt/")
    assert step == 3
    assert in_s3(s3, target, "moved/ckpt/") == COPIED
    # a second copy finds the complete save there and writes nothing
    s3.delete_object(Bucket=target, Key="moved/ckpt/step-3/optim/adam.bin")
    assert checkpoints.copy_latest(gcs_store(gcs), "gs://train/run/ckpt", s3_store(s3),
                                   f"s3://{target}/moved/ckpt") == 3
    assert "step-3/optim/adam.bin" not in in_s3(s3, target, "moved/ckpt/")


def test_from_s3_to_cloud_storage_the_marker_is_written_last(gcs, s3):
    source = bucket(s3)
    for name, data in SAVES.items():
        s3.put_object(Bucket=source, Key=f"ckpt/{name}", Body=data)
    for n in range(3):  # listings of several pages
        s3.put_object(Bucket=source, Key=f"ckpt/step-3/shard-{n}.bin", Body=bytes([n]) * 10)
    step = checkpoints.copy_latest(s3_store(s3), f"s3://{source}/ckpt", gcs_store(gcs), "gs://landing/ckpt")
    assert step == 3
    expected = {**COPIED, **{f"step-3/shard-{n}.bin": bytes([n]) * 10 for n in range(3)}}
    assert {name[len("ckpt/"):]: data for (b, name), data in gcs.objects.items() if b == "landing"} == expected
    assert len(gcs.written) == len(expected) and gcs.written[-1] == ("landing", f"ckpt/step-3/{MARKER}")
    assert checkpoints.latest_complete(gcs_store(gcs), "gs://landing/ckpt") == (3, sorted(expected_names(expected)))


def expected_names(objects: dict[str, bytes]) -> list[str]:
    return [name.split("/", 1)[1] for name in objects]


def test_no_complete_save_copies_nothing(gcs, s3):
    gcs.objects[("train", "ckpt/step-2/state.pt")] = b"half"
    target = bucket(s3)
    assert checkpoints.copy_latest(gcs_store(gcs), "gs://train/ckpt", s3_store(s3), f"s3://{target}/ckpt") is None
    assert in_s3(s3, target, "") == {}


def test_a_store_error_is_omnidists_naming_what_was_done(gcs, s3, tmp_path):
    gcs.objects.update({("train", f"ckpt/{name}"): data for name, data in SAVES.items()})
    with pytest.raises(errors.BackendError, match=r"listing s3://no-such-bucket/ckpt/step-3/") as info:
        checkpoints.copy_latest(gcs_store(gcs), "gs://train/ckpt", s3_store(s3), "s3://no-such-bucket/ckpt")
    assert info.value.exit_code == 1 and "NoSuchBucket" in str(info.value)
    store, local = s3_store(s3), tmp_path / "state.pt"
    local.write_bytes(b"x")
    with pytest.raises(errors.NotFoundError, match=r"writing s3://no-such-bucket/k: .*NoSuchBucket"):
        store.call("writing s3://no-such-bucket/k", lambda: store.upload("s3://no-such-bucket/k", str(local)))
    google = gcs_store(gcs)
    with pytest.raises(errors.NotFoundError, match=r"reading gs://train/gone: .*No such object"):
        google.call("reading gs://train/gone", lambda: google.download("gs://train/gone", str(local)))


def test_location_is_the_checkpoints_output_as_the_profiles_data_map_rewrites_it():
    from omnidist import api

    job = api.as_job({"name": "j", "framework": "pytorch", "image": "i", "command": ["t"], "primary": {}, "outputs": {"checkpoints": "gs://b/run/ckpt"}})
    mapped = types.SimpleNamespace(data_map={"gs://b/": "s3://copy/b/"})
    assert checkpoints.location(job, mapped) == "s3://copy/b/run/ckpt"
    assert checkpoints.location(job, types.SimpleNamespace()) == "gs://b/run/ckpt"
    bare = api.as_job({"name": "j", "framework": "pytorch", "image": "i", "command": ["t"], "primary": {}})
    assert checkpoints.location(bare, mapped) is None


def test_each_backend_gives_the_store_of_its_own_scheme_found_through_the_registry(gcs):
    from omnidist.backend import registry

    settings = types.SimpleNamespace(project="p", credentials="anonymous", storage_endpoint=gcs.endpoint,
                                     region="us-east-1", aws_profile=None, endpoint_url=None, s3_endpoint_url=None,
                                     request_timeout_s=5.0)
    for backend, uri in [("vertex", "gs://b/ckpt"), ("ai_platform", "gs://b/ckpt"), ("sagemaker", "s3://b/ckpt")]:
        driver = registry.get(backend)
        assert checkpoints.store_for(driver, settings, uri) is not None, backend
        assert checkpoints.store_for(driver, settings, "wasbs://c@a.blob.core.windows.net/ckpt") is None
    assert checkpoints.store_for(registry.get("kubernetes"), settings, "/mnt/ckpt") is None


def test_a_side_without_a_store_is_said_and_nothing_is_copied(gcs):
    from omnidist import api
    from omnidist.backend import registry

    gcs.objects.update({("train", f"ckpt/{name}"): data for name, data in SAVES.items()})
    job = api.as_job({"name": "j", "framework": "pytorch", "image": "i", "command": ["t"], "primary": {},
                      "outputs": {"checkpoints": "gs://train/ckpt"}})
    source = types.SimpleNamespace(project="p", credentials="anonymous", storage_endpoint=gcs.endpoint)
    volume = types.SimpleNamespace(data_map={"gs://train/": "/mnt/train/"})
    said: list[str] = []
    assert checkpoints.carry(job, (registry.get("vertex"), source), (registry.get("kubernetes"), volume),
                             said.append) is None
    assert said == ["recovery: checkpoints not copied: kubernetes has no store that reads /mnt/train/ckpt; "
                    "the next attempt starts from what /mnt/train/ckpt holds"]
    assert checkpoints.carry(job, (registry.get("vertex"), source), (registry.get("vertex"), source),
                             said.append) is None and len(said) == 1  # the same place: nothing to copy


def test_a_transient_failure_is_retried_under_the_policy():
    from omnidist.backend.settings import RetryPolicy

    failures = [errors.TransientBackendError("slow down", backend="b", status=503)]

    def listing(uri: str) -> list[str]:
        if failures:
            raise failures.pop()
        return [uri + "step-0/" + MARKER]

    store = checkpoints.CheckpointStore(schemes=("s3",), listing=listing, download=lambda u, p: None,
                                        upload=lambda u, p: None,
                                        retry=RetryPolicy(attempts=2, initial_wait=0.0, max_wait=0.0))
    assert checkpoints.latest_complete(store, "s3://b/ckpt") == (0, [MARKER]) and not failures
    failures.extend([errors.TransientBackendError("slow down", backend="b", status=503)] * 2)
    with pytest.raises(errors.TransientBackendError):
        checkpoints.latest_complete(store, "s3://b/ckpt")
