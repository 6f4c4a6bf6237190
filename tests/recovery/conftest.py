"""Local object stores for the checkpoint copy: the fake Cloud Storage JSON API, and moto's
server mode for S3, both on 127.0.0.1 with OS-chosen ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from omnidist.testing import FakeServer
from omnidist.testing.gcs import FakeStorage


@pytest.fixture
def gcs() -> Iterator[FakeStorage]:
    with FakeServer() as server:
        yield FakeStorage(server)


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    """moto's server mode (every AWS service on one endpoint)."""
    from omnidist_aws.testing import moto_server

    with moto_server() as url:
        yield url


@pytest.fixture
def s3(moto_url) -> object:
    """A boto3 S3 client of the moto server, signing with keys moto accepts (it refuses an unsigned
    read of a private object, as S3 does); each test makes its own buckets."""
    import boto3

    return boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                 region_name="us-east-1").client("s3", endpoint_url=moto_url)
