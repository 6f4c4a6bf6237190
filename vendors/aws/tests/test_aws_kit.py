"""The AWS kit on its own: botocore's errors as omnidist's, S3 URIs, EC2 shapes, one client per settings."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, NoCredentialsError

from omnidist.kit import AuthenticationError, ConfigError, ConflictError, NotFoundError, TransientBackendError
from omnidist_aws import ec2, s3, session


def client_error(code: str, status: int, message: str = "m") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {"retry-after": "3"}}}, "Op")


@pytest.mark.parametrize("code, status, kind", [
    ("ThrottlingException", 400, TransientBackendError),
    ("NoSuchKey", 404, NotFoundError),
    ("ResourceInUse", 400, ConflictError),
    ("InvalidClientTokenId", 403, AuthenticationError),
])
def test_botocore_errors_become_omnidists(code, status, kind):
    error = session.translate_error(client_error(code, status), backend="b")
    assert type(error) is kind and error.backend == "b"
    assert session.error_code(client_error(code, status)) == code


def test_a_describe_of_nothing_is_not_found_when_the_service_says_so_in_words():
    exc = client_error("ValidationException", 400, "Requested resource not found: x")
    assert isinstance(session.translate_error(exc, backend="b", not_found_text=("not found",)), NotFoundError)
    assert not isinstance(session.translate_error(exc, backend="b"), NotFoundError)


def test_no_credentials_is_one_line_and_anything_else_is_not_translated():
    error = session.translate_error(NoCredentialsError(), backend="b")
    assert isinstance(error, AuthenticationError) and "aws configure" in str(error)
    assert session.translate_error(ValueError("x"), backend="b") is None


def test_a_profile_that_names_nothing_is_a_config_error_naming_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    with pytest.raises(ConfigError, match="backends.b.aws_profile: 'nope' is not a profile"):
        session.client("s3", region="us-east-1", profile="nope", endpoint=None, credentials="default", timeout=5,
                       profile_setting="backends.b.aws_profile")


def test_one_client_per_service_and_settings():
    args = {"region": "us-east-1", "profile": None, "endpoint": "http://127.0.0.1:9", "credentials": "anonymous",
            "timeout": 5.0, "profile_setting": "p"}
    assert session.client("s3", **args) is session.client("s3", **args)
    assert session.client("s3", **args).meta.endpoint_url == "http://127.0.0.1:9"


def test_s3_uris_and_ec2_shapes():
    assert s3.split_s3("s3://bucket/a/b.tar.gz") == ("bucket", "a/b.tar.gz")
    assert ec2.shape("m5", "xlarge") == (4, 16) and ec2.shape("c4", "8xlarge") == (36, 60)
    assert ec2.GPU_SHAPES["p4d.24xlarge"] == (96, 1152, "A100", 8)
