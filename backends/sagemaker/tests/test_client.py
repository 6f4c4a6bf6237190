"""boto3 end to end: against moto's server mode for the request shapes, S3 and CloudWatch Logs, and
against the kit's fake SageMaker where moto stops short (it completes jobs at once and answers
StopTrainingJob with 500): states over time, stop, throttling, refusals, a taken name."""

from __future__ import annotations

import hashlib
import io
import logging
import tarfile
import time

import attrs
import pytest

from omnidist.kit import BackendError, ConfigError, ConflictError, JobHandle, JobState, NotFoundError, job_from_dict
from omnidist.testing import Fault
from omnidist_sagemaker.tables import LOG_GROUP


def boto(url, service):
    """A plain boto3 client for ``service`` on ``url`` (what a test reads back with)."""
    import boto3

    return boto3.session.Session(region_name="us-east-1").client(service, endpoint_url=url)

JOB = {"name": "bert", "framework": "pytorch", "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/bert:1",
       "command": ["python", "train.py"], "args": ["--epochs", "2"], "env": {"WANDB_API_KEY": "wandb-secret-77"},
       "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 1}, "labels": {"team": "nlp"}}


def submit(backend, settings, **fields):
    job = job_from_dict({**JOB, **fields})
    return backend.submit(backend.compile(job, settings), settings)


# --- moto: request shapes, S3, CloudWatch Logs ------------------------------------------------------------

def test_a_submit_creates_exactly_the_compiled_job_under_a_unique_name(backend, moto_settings, moto_url):
    handle = submit(backend, moto_settings)
    assert handle.id == "bert-s0"
    sagemaker = boto(moto_url, "sagemaker")
    job = sagemaker.describe_training_job(TrainingJobName="bert-s0")
    assert job["ResourceConfig"] == {"InstanceType": "ml.g4dn.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}
    assert job["AlgorithmSpecification"]["ContainerEntrypoint"] == ["python", "train.py"]
    assert job["AlgorithmSpecification"]["ContainerArguments"] == ["--epochs", "2"]
    assert job["RoleArn"] == moto_settings.role_arn
    tags = {t["Key"]: t["Value"] for t in sagemaker.list_tags(ResourceArn=job["TrainingJobArn"])["Tags"]}
    assert tags == {"team": "nlp", "omnidist-request-id": "req0"}
    assert handle.status().state is JobState.SUCCEEDED  # moto completes jobs at once
    assert "sagemaker/home?region=us-east-1#/jobs/bert-s0" in handle.url


def test_code_is_uploaded_to_s3_once_per_content_with_its_files_at_the_root(backend, moto_settings, moto_url,
                                                                            tmp_path, caplog):
    s3 = boto(moto_url, "s3")
    s3.create_bucket(Bucket="staging")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('training')\n")
    fields = {"image": None, "framework_version": "2.3", "code": str(tmp_path / "src")}
    first = submit(backend, moto_settings, **fields)
    job = boto(moto_url, "sagemaker").describe_training_job(TrainingJobName=first.id)
    uri = job["HyperParameters"]["sagemaker_submit_directory"].strip('"')
    assert uri.startswith("s3://staging/omnidist/code/") and uri.endswith("/sourcedir.tar.gz")
    key = uri[len("s3://staging/"):]
    archive = s3.get_object(Bucket="staging", Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert tar.getnames() == ["train.py"], "script mode unpacks the archive into /opt/ml/code"
    with caplog.at_level(logging.INFO, logger="omnidist.submission.staging"):
        second = submit(backend, moto_settings, **fields)
    assert "already there" in caplog.text and second.id != first.id
    assert len(s3.list_objects_v2(Bucket="staging")["Contents"]) == 1


def staged(backend, settings, moto_url, tmp_path):
    """A submit whose code folder (of this test's own content) went to the staging bucket: the
    S3 and SageMaker clients, the fields that submit it again, and the archive's key and bytes."""
    s3, sagemaker = boto(moto_url, "s3"), boto(moto_url, "sagemaker")
    s3.create_bucket(Bucket="staging")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(f"print({tmp_path.name!r})\n")
    fields = {"image": None, "framework_version": "2.3", "code": str(tmp_path / "src")}
    key = code_key(sagemaker, submit(backend, settings, **fields).id)
    return s3, sagemaker, fields, key, s3.get_object(Bucket="staging", Key=key)["Body"].read()


def code_key(sagemaker, job_id):
    """The staging bucket's key of the code a job runs."""
    uri = sagemaker.describe_training_job(TrainingJobName=job_id)["HyperParameters"]["sagemaker_submit_directory"]
    return uri.strip('"')[len("s3://staging/"):]


def test_other_bytes_under_the_content_name_are_left_alone_and_the_archive_goes_beside(backend, moto_settings,
                                                                                      moto_url, tmp_path):
    """The staging bucket is not trusted by name: an object under the content hash's name is used
    only when its MD5 (the ETag of a plain upload, else its bytes) is the archive's."""
    s3, sagemaker, fields, key, archive = staged(backend, moto_settings, moto_url, tmp_path)
    s3.put_object(Bucket="staging", Key=key, Body=b"planted by someone else")
    moved = code_key(sagemaker, submit(backend, moto_settings, **fields).id)
    assert moved != key and hashlib.md5(archive).hexdigest() in moved
    assert s3.get_object(Bucket="staging", Key=key)["Body"].read() == b"planted by someone else"
    assert s3.get_object(Bucket="staging", Key=moved)["Body"].read() == archive


def test_an_object_whose_etag_is_no_md5_is_checked_by_its_bytes(backend, moto_settings, moto_url, tmp_path):
    """A multipart (or KMS-encrypted) object's ETag is not its MD5: its bytes are read instead, so
    the same archive put there in parts is used and nothing is uploaded again."""
    s3, sagemaker, fields, key, archive = staged(backend, moto_settings, moto_url, tmp_path)
    upload = s3.create_multipart_upload(Bucket="staging", Key=key)["UploadId"]
    part = s3.upload_part(Bucket="staging", Key=key, UploadId=upload, PartNumber=1, Body=archive)["ETag"]
    s3.complete_multipart_upload(Bucket="staging", Key=key, UploadId=upload,
                                 MultipartUpload={"Parts": [{"ETag": part, "PartNumber": 1}]})
    assert "-" in s3.head_object(Bucket="staging", Key=key)["ETag"]
    assert code_key(sagemaker, submit(backend, moto_settings, **fields).id) == key
    content = key.split("/")[2][:64]  # the content hash: nothing else was uploaded for this code
    assert len(s3.list_objects_v2(Bucket="staging", Prefix=f"omnidist/code/{content}")["Contents"]) == 1


def test_logs_are_read_from_cloudwatch_one_stream_per_host(backend, moto_settings, moto_url):
    handle = submit(backend, moto_settings)
    logs = boto(moto_url, "logs")
    try:
        logs.create_log_group(logGroupName=LOG_GROUP)
    except logs.exceptions.ResourceAlreadyExistsException:
        pass
    now = int(time.time() * 1000)  # CloudWatch refuses events older than 14 days
    for host, lines in (("algo-1", ["epoch 1", "epoch 2"]), ("algo-2", ["epoch 1 on 2"])):
        stream = f"{handle.id}/{host}-1700000000"
        logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream,
                            logEvents=[{"timestamp": now + i, "message": m} for i, m in enumerate(lines)])
    lines = list(handle.logs())
    assert lines[0].startswith(f"logs: CloudWatch Logs {LOG_GROUP}")
    assert lines[1:4] == ["[algo-1] epoch 1", "[algo-1] epoch 2", "[algo-2] epoch 1 on 2"]


def test_a_job_with_no_logs_yet_shows_its_state(backend, moto_settings):
    handle = submit(backend, attrs.evolve(moto_settings), name="quiet")
    assert any(line.startswith("state: succeeded") for line in handle.logs())


# --- the fake: states over time, stop, refusals, a taken name ------------------------------------------------

def test_states_follow_the_secondary_status(backend, fake_settings, fake):
    fake.capacity(False)
    handle = submit(backend, fake_settings)
    seen = []
    while not seen or not seen[-1][0].terminal:
        status = handle.status()
        seen.append((status.state, status.native_state))
    assert seen == [(JobState.QUEUED, "InProgress/Starting"), (JobState.QUEUED, "InProgress/Pending"),
                    (JobState.QUEUED, "InProgress/Pending"), (JobState.PENDING, "InProgress/Downloading"),
                    (JobState.RUNNING, "InProgress/Training"), (JobState.SUCCEEDED, "Completed")]


def test_cancel_stops_a_running_job_and_nothing_once_it_ended(backend, fake_settings, fake):
    fake.keep_running()
    handle = submit(backend, fake_settings)
    handle.cancel()
    assert len(fake.calls("cancel")) == 1
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.CANCELLED
    handle.cancel()
    assert len(fake.calls("cancel")) == 1


def test_a_quota_refusal_is_final_and_says_so(backend, fake_settings, fake):
    fake.refuse("ResourceLimitExceeded", "The account-level service limit 'ml.p4d.24xlarge for training job usage' "
                                         "is 0 Instances")
    with pytest.raises(BackendError, match="ResourceLimitExceeded: The account-level service limit") as caught:
        submit(backend, fake_settings)
    assert caught.value.status == 400 and not fake.jobs and len(fake.calls("create")) == 1


def test_throttled_calls_are_retried_honouring_retry_after(backend, fake_settings, fake, sleeps):
    fake.fail("create", Fault.http(429, "Rate exceeded", retry_after=2))
    handle = submit(backend, fake_settings)
    fake.fail("get", Fault.http(429, "Rate exceeded", retry_after=1))
    assert handle.status().state is JobState.QUEUED
    assert sleeps == [2.0, 1.0] and len(fake.jobs) == 1


def test_a_taken_name_is_adopted_only_when_its_request_id_tag_is_ours(backend, fake_settings, fake):
    other = {"TrainingJobName": "bert-s0", "Tags": [{"Key": "omnidist-request-id", "Value": "someone-else"}]}
    fake.add("bert-s0", {**other, "TrainingJobArn": "arn:aws:sagemaker:us-east-1:1:training-job/bert-s0"})
    with pytest.raises(ConflictError, match="already exists and this submit did not make it"):
        submit(backend, fake_settings)
    fake.reset()
    fake.fail("create", Fault.drop_after_create())  # made, the answer lost: the retry finds the name taken
    handle = submit(backend, fake_settings)
    assert handle.id == "bert-s1" and len(fake.jobs) == 1 and len(fake.calls("create")) == 2


def test_a_failed_job_says_why_with_its_secrets_masked(backend, fake_settings, fake):
    fake.fail_jobs("AlgorithmError: token wandb-secret-77 was refused")
    handle = submit(backend, fake_settings)
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and final.message.startswith("AlgorithmError: token ")
    assert "wandb-secret-77" not in final.message and final.message.endswith(" was refused")


def test_followed_logs_read_every_page_of_every_host_secrets_masked(backend, fake_settings, fake):
    handle = submit(backend, fake_settings)
    fake.print_line(handle.id, "logged in with wandb-secret-77")
    lines = list(handle.logs(follow=True))
    assert "[algo-1] epoch 2 on algo-1" in lines and "[algo-2] epoch 2 on algo-2" in lines
    assert any(line.startswith("[algo-1] logged in with ") for line in lines)
    assert all("wandb-secret-77" not in line for line in lines)  # (moto drops a job's Environment: the fake keeps it)
    assert lines[-1].startswith("state: succeeded")


def test_an_unknown_job_is_not_found(backend, fake_settings, fake):
    attached = JobHandle(backend="sagemaker", id="nope", settings=fake_settings, driver=backend)
    with pytest.raises(NotFoundError):
        attached.status()


def test_a_capacity_failure_reads_as_sagemaker_says_it(backend, fake_settings, fake):
    fake.fail_jobs("CapacityError: Unable to provision requested ML compute capacity. Please retry using a "
                   "different ML instance type.")
    fake.capacity(False)
    handle = submit(backend, fake_settings)
    assert handle.status().state is JobState.QUEUED  # Starting, then waiting for capacity
    assert handle.status().native_state == "InProgress/Pending"
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and final.message.startswith("CapacityError: Unable to provision")


def test_an_aws_profile_that_is_not_there_is_a_setting_to_fix(backend, fake_settings, monkeypatch, tmp_path):
    """boto3's ProfileNotFound is the user's setting naming nothing: exit 2 naming the setting."""
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    settings = attrs.evolve(fake_settings, aws_profile="nope")
    attached = JobHandle(backend="sagemaker", id="bert-s0", settings=settings, driver=backend)
    with pytest.raises(ConfigError) as caught:
        attached.status()
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith("backends.sagemaker.aws_profile: 'nope' is not a profile of ~/.aws/config")


def test_an_endpoint_that_answers_no_job_is_a_clear_error_not_a_key_error(backend, moto_settings):
    """moto places each request by its signature: unsigned (credentials anonymous), it answers a
    describe with 200 and no job, which once ended cancel in ``internal error: KeyError``."""
    handle = submit(backend, moto_settings)
    unsigned = attrs.evolve(moto_settings, credentials="anonymous")
    for act in (lambda: backend.cancel(handle.id, unsigned), lambda: backend.status(handle.id, unsigned)):
        with pytest.raises(BackendError, match=r"answered DescribeTrainingJob with no job in it \(HTTP 200\): "
                                               r"check backends.sagemaker.endpoint_url"):
            act()


def test_a_tuning_job_is_found_by_its_name_where_the_endpoint_says_could_not_find(backend, moto_settings):
    """moto says "Could not find training job" for a name that is a tuning job's: not found, so the
    tuning job is described (and, ended, not stopped)."""
    job = job_from_dict({**{k: v for k, v in JOB.items() if k not in ("command", "args")}, "name": "tune",
                         "tuning": {"metric": {"name": "accuracy", "goal": "maximize"}, "max_trials": 2,
                                    "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}}})
    handle = backend.submit(backend.compile(job, moto_settings), moto_settings)
    client = backend.connect(moto_settings)
    assert client.get_job(handle.id.rsplit("/", 1)[-1])["HyperParameterTuningJobName"] == "tune-s0"
    backend.cancel(handle.id, moto_settings)  # moto ends it at once: nothing to stop

@pytest.mark.parametrize(("reason", "ended"), [
    ("AlgorithmError: ExecuteUserScriptError: the training script exited with 1", "failure"),
    ("CapacityError: Unable to provision requested ML compute capacity.", "capacity"),
    ("InternalServerError: We encountered an internal error. Please try again.", "node_failure"),
])
def test_how_a_failed_job_ended_is_read_from_its_failure_reason(backend, fake_settings, fake, reason, ended):
    fake.fail_jobs(reason)
    final = submit(backend, fake_settings).wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and final.ended.value == ended


def test_a_spot_job_whose_interruptions_outlast_its_wait_was_preempted(backend, fake_settings, fake):
    fake.timeline = ["InProgress/Starting", "InProgress/Training", "InProgress/Interrupted",
                     "Stopped/MaxWaitTimeExceeded"]
    handle = submit(backend, fake_settings)
    seen = []
    final = handle.wait(poll_interval=0, sleep=lambda s: None, on_change=lambda s: seen.append(s.ended))
    assert final.native_state == "Stopped/MaxWaitTimeExceeded" and final.ended.value == "preemption"
    assert seen[:-1] == [None] * (len(seen) - 1)  # an interruption SageMaker resumes itself is no ending
    fake.timeline = ["InProgress/Starting", "Stopped/Stopped"]
    assert submit(backend, fake_settings, name="other").wait(poll_interval=0, sleep=lambda s: None).ended.value == \
        "cancelled"
