"""Cloud Storage objects for the watcher's checkpoint copy (:class:`omnidist.kit.CheckpointStore`):
list a ``gs://`` prefix, read an object to a file, write a file to an object, with
``google-cloud-storage`` (imported when called)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from omnidist.kit import AuthenticationError, BackendError, CheckpointStore, TransientBackendError, error_for_status
from omnidist_google.google_cloud import google_credentials, split_gs, storage_client

SCHEME = "gs"
"""The URI scheme Cloud Storage objects are named with (``gs://BUCKET/OBJECT``)."""


def list_prefix(client: Any, uri: str) -> list[str]:
    """The ``gs://`` URIs of every object whose name begins with ``uri``'s (all pages)."""
    bucket, prefix = split_gs(uri)
    return [f"gs://{bucket}/{blob.name}" for blob in client.list_blobs(bucket, prefix=prefix)]


def download(client: Any, uri: str, path: str) -> None:
    """Write the object at ``uri`` to the local file ``path`` (the client checks its MD5)."""
    bucket, name = split_gs(uri)
    client.bucket(bucket).blob(name).download_to_filename(path)


def upload(client: Any, uri: str, path: str) -> None:
    """Put the local file ``path`` at ``uri``, replacing what is there."""
    bucket, name = split_gs(uri)
    client.bucket(bucket).blob(name).upload_from_filename(path, content_type="application/octet-stream")


def translate(exc: BaseException, backend: str) -> Optional[BackendError]:
    """omnidist's error for a storage client exception (``None`` when it is not one)."""
    import requests
    from google.api_core import exceptions as api_exceptions
    from google.auth import exceptions as auth_exceptions

    if isinstance(exc, api_exceptions.GoogleAPICallError):
        status = exc.code if isinstance(exc.code, int) else None
        return error_for_status(status)(exc.message, backend=backend, status=status)
    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout)):
        return TransientBackendError(f"connection failed: {exc}", backend=backend)
    if isinstance(exc, auth_exceptions.GoogleAuthError):
        return AuthenticationError(str(exc), backend=backend)
    status = getattr(getattr(exc, "response", None), "status_code", None)  # a media upload's or download's
    if isinstance(status, int):
        return error_for_status(status)(str(exc), backend=backend, status=status)
    return None


def checkpoint_store(settings: Any, backend: str) -> CheckpointStore:
    """The ``gs://`` store of a Google backend's settings (``project``, ``credentials``,
    ``storage_endpoint``); the client is made when first used."""
    made: list[Any] = []

    def client() -> Any:
        if not made:
            made.append(storage_client(settings, google_credentials(settings.credentials, backend)))
        return made[0]

    call: Callable[[BaseException], Optional[BackendError]] = lambda exc: translate(exc, backend)  # noqa: E731
    return CheckpointStore(schemes=(SCHEME,), listing=lambda uri: list_prefix(client(), uri),
                           download=lambda uri, path: download(client(), uri, path),
                           upload=lambda uri, path: upload(client(), uri, path), translate=call)
