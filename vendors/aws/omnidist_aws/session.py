"""boto3 clients and botocore's errors, for any backend on AWS (boto3 is imported when called).

:func:`client` builds one client per service and settings, with botocore's own retries off
(``total_max_attempts: 1``: every retry is the backend client's template's), the settings'
timeouts, ``endpoint_url`` (a local endpoint, a VPC endpoint) and unsigned requests for
``credentials = "anonymous"``. :func:`translate_error` turns botocore's exceptions into omnidist's
error tree by code and status (throttling and 5xx transient).
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Collection
from typing import Any, Optional

from omnidist.kit import (
    AuthenticationError,
    BackendError,
    ConfigError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    TransientBackendError,
    error_for_status,
    parse_retry_after,
)

THROTTLING = frozenset({"RequestLimitExceeded", "SlowDown", "Throttling", "ThrottlingException",
                        "TooManyRequestsException", "ThrottledException", "ProvisionedThroughputExceededException"})
"""Error codes AWS throttles with (retried, like a 429)."""

NOT_FOUND = frozenset({"NoSuchBucket", "NoSuchKey", "NotFound", "ResourceNotFound", "ResourceNotFoundException", "404"})
"""Error codes of a thing that is not there."""

AUTH = frozenset({"ExpiredTokenException", "IncompleteSignature", "InvalidClientTokenId", "MissingAuthenticationToken",
                  "UnrecognizedClientException", "InvalidSignatureException"})
"""Error codes of credentials AWS does not take."""

NO_CREDENTIALS = ("no AWS credentials: run `aws configure` (or `aws sso login`), or set AWS_ACCESS_KEY_ID and "
                  "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE to a profile of ~/.aws/config; credentials = \"anonymous\" "
                  "for a local endpoint")
"""The error for a machine where boto3's chain (environment, ``~/.aws``, the instance's role) found
no credentials: one line, exit 1, as on the other clouds."""


@functools.lru_cache(maxsize=32)
def client(service: str, *, region: str, profile: Optional[str], endpoint: Optional[str], credentials: str,
           timeout: float, profile_setting: str) -> Any:
    """A boto3 client of ``service`` (one per process for the same arguments: a client reads its
    service model once, and is thread-safe).

    Args:
        service: the AWS service (``s3``, ``logs``, …).
        region: the region.
        profile: a profile of ``~/.aws/config`` (``None``: boto3's default chain).
        endpoint: ``endpoint_url`` (``None``: AWS's own).
        credentials: ``anonymous`` for unsigned requests (a local endpoint), else boto3's chain.
        timeout: connect and read timeout, seconds.
        profile_setting: the setting ``profile`` came from, for the error naming it.

    Raises:
        ConfigError: ``profile`` names no profile.
    """
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config
    from botocore.exceptions import ProfileNotFound

    config = Config(retries={"total_max_attempts": 1}, connect_timeout=timeout, read_timeout=timeout,
                    signature_version=UNSIGNED if credentials == "anonymous" else None)
    try:
        session = boto3.session.Session(profile_name=profile, region_name=region)
    except ProfileNotFound as exc:  # a setting that names nothing: the user's to fix, not the cloud's
        raise ConfigError(f"{profile_setting}: {profile!r} is not a profile of ~/.aws/config or "
                          "~/.aws/credentials (AWS_CONFIG_FILE); name one of them, or leave it out "
                          "for boto3's default chain") from exc
    return session.client(service, endpoint_url=endpoint, config=config)


def error_code(exc: Any) -> str:
    """The AWS error code of a botocore ``ClientError`` (empty for anything else)."""
    return str((getattr(exc, "response", None) or {}).get("Error", {}).get("Code", ""))


def error_status(exc: Any) -> Optional[int]:
    """The HTTP status of a botocore ``ClientError`` (``None`` for anything else)."""
    status = ((getattr(exc, "response", None) or {}).get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def translate_error(exc: BaseException, *, backend: str,
                    not_found_text: Collection[str] = ()) -> Optional[BackendError]:
    """omnidist's error for a botocore exception (``None`` when it is not one).

    Args:
        exc: what boto3 raised.
        backend: the backend the error is reported for.
        not_found_text: words of a ``ValidationException`` message that mean "not there" (a
            service that answers a describe of nothing that way).
    """
    from botocore import exceptions as aws

    if isinstance(exc, aws.ClientError):
        code, status = error_code(exc), error_status(exc)
        message = str(exc.response.get("Error", {}).get("Message") or "")
        text = f"{code}: {message}" if code and message else (message or code or str(exc))
        headers = (exc.response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
        after = parse_retry_after(headers.get("retry-after"))
        if code in THROTTLING:
            return TransientBackendError(text, backend=backend, status=status or 429, retry_after=after)
        if code in NOT_FOUND or (code == "ValidationException" and any(t in message for t in not_found_text)):
            return NotFoundError(text, backend=backend, status=status or 404)
        if code == "ResourceInUse":
            return ConflictError(text, backend=backend, status=409)
        if code in AUTH:
            return AuthenticationError(text, backend=backend, status=status)
        if code in ("AccessDeniedException", "AccessDenied"):
            return PermissionDeniedError(text, backend=backend, status=status or 403)
        return error_for_status(status)(text, backend=backend, status=status, retry_after=after)
    if isinstance(exc, (aws.ConnectionClosedError, aws.ReadTimeoutError, aws.ConnectTimeoutError,
                        aws.EndpointConnectionError, ConnectionError, TimeoutError, socket.timeout)):
        return TransientBackendError(f"connection failed ({type(exc).__name__}: {exc})", backend=backend)
    if isinstance(exc, aws.NoCredentialsError):
        return AuthenticationError(NO_CREDENTIALS, backend=backend)
    if isinstance(exc, aws.ParamValidationError):
        return InvalidRequestError(f"boto3 refused the request: {exc}", backend=backend)
    if isinstance(exc, aws.BotoCoreError):
        return BackendError(f"{type(exc).__name__}: {exc}", backend=backend)
    return None
