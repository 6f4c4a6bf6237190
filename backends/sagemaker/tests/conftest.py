"""Fixtures for the SageMaker backend tests: the backend with deterministic ids, settings, a fake
SageMaker on the kit's FakeServer, and moto's server mode started on 127.0.0.1 (an OS-chosen port)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from omnidist.testing import FakeServer, SleepRecorder
from omnidist_sagemaker import SageMakerBackend, SageMakerSettings
from omnidist_sagemaker.testing import ROLE, FakeSageMaker

ROLE_ARN = ROLE


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def backend(sleeps) -> SageMakerBackend:
    ids, suffixes = (f"req{n}" for n in itertools.count()), (f"s{n}" for n in itertools.count())
    return SageMakerBackend(request_id=lambda: next(ids), suffix=lambda: next(suffixes), sleep=sleeps)


@pytest.fixture
def fake() -> Iterator[FakeSageMaker]:
    with FakeServer() as server:
        yield FakeSageMaker(server)


@pytest.fixture
def fake_settings(fake) -> SageMakerSettings:
    return SageMakerSettings(region="us-east-1", endpoint_url=fake.url, credentials="anonymous", role_arn=ROLE,
                             base_output_dir="s3://out/runs", retry_attempts=4, retry_initial_wait_s=0.01,
                             poll_interval_s=0)


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    """moto's server mode, on 127.0.0.1 with a port the OS chose; every AWS service on one endpoint."""
    from omnidist_aws.testing import moto_server

    with moto_server() as url:
        yield url


@pytest.fixture
def aws_env(monkeypatch) -> None:
    """Credentials moto accepts (boto3 signs every request), and no real configuration."""
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


@pytest.fixture
def moto_settings(moto_url, aws_env) -> SageMakerSettings:
    return SageMakerSettings(region="us-east-1", endpoint_url=moto_url, role_arn=ROLE, base_output_dir="s3://out/runs",
                             staging_bucket="s3://staging", retry_attempts=3, retry_initial_wait_s=0.01,
                             poll_interval_s=0)

