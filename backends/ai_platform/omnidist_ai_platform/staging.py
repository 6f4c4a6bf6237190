"""Submit-time code upload for legacy AI Platform: a local ``code`` folder is packed
(:mod:`omnidist.packaging`) and put into ``staging_bucket`` under its content hash with
``google-cloud-storage`` (imported here only), once per content; the job's ``packageUris``
then name it.

The object is created with ``ifGenerationMatch=0`` (only if absent), so a retried or racing
upload can never replace it; a 412 means the same content is already there. The storage
client's own retries are off; transient failures are retried under the backend's policy, by
the client's :meth:`~omnidist.clients.Client.call` (with this module's :func:`translate`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, BinaryIO, Optional

from omnidist import data, packaging
from omnidist.backend import CompiledJob
from omnidist.errors import AuthenticationError, BackendError, TransientBackendError, error_for_status
from omnidist_ai_platform.settings import AIPlatformSettings
from omnidist_ai_platform.tables import NAME

if TYPE_CHECKING:
    from omnidist.clients import Client

log = logging.getLogger("omnidist.ai_platform")


def split_gs(uri: str) -> tuple[str, str]:
    """``gs://BUCKET/OBJECT`` -> ``(BUCKET, OBJECT)``."""
    bucket, _, name = uri[len("gs://"):].partition("/")
    return bucket, name


def storage_client(settings: AIPlatformSettings) -> Any:
    """A ``google.cloud.storage.Client`` with the backend's credentials (and ``storage_endpoint``)."""
    from google.cloud import storage

    from omnidist_ai_platform.auth import credentials

    options = {"api_endpoint": settings.storage_endpoint} if settings.storage_endpoint else None
    return storage.Client(project=settings.project or "omnidist", credentials=credentials(settings),
                          client_options=options)


def translate(exc: BaseException) -> Optional[BackendError]:
    """omnidist's error for a storage client exception (None when it is not one)."""
    import requests
    from google.api_core import exceptions as api_exceptions
    from google.auth import exceptions as auth_exceptions

    if isinstance(exc, api_exceptions.GoogleAPICallError):
        status = exc.code if isinstance(exc.code, int) else None
        return error_for_status(status)(f"uploading the code failed: {exc.message}", backend=NAME, status=status)
    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout)):
        return TransientBackendError(f"connection failed: {exc}", backend=NAME)
    if isinstance(exc, auth_exceptions.GoogleAuthError):
        return AuthenticationError(str(exc), backend=NAME)
    status = getattr(getattr(exc, "response", None), "status_code", None)  # the media upload's InvalidResponse
    if isinstance(status, int):
        return error_for_status(status)(f"uploading the code failed: {exc}", backend=NAME, status=status)
    return None


def stage(compiled: CompiledJob, client: Client) -> dict[str, Any]:
    """The body to create: unchanged for a job without a local code folder; else with the
    folder uploaded (unless its content is already there) and its hash filled in."""
    settings = client.settings

    def call(fn: Any) -> Any:
        return client.call(fn, translate=translate)

    job = compiled.job
    folder = data.code_folder(job) if job is not None else None
    if folder is None:
        return compiled.request
    package = packaging.pack(folder)
    try:
        uri = f"{settings.staging_bucket.rstrip('/')}/{data.CODE_OBJECT}".replace(data.CODE_HASH, package.sha256)
        bucket_name, name = split_gs(uri)
        blob = storage_client(settings).bucket(bucket_name).blob(name)

        def upload(stream: BinaryIO, size: int) -> None:
            from google.api_core import exceptions

            stream.seek(0)  # a retried upload starts from the first byte again
            try:
                blob.upload_from_file(stream, size=size, content_type="application/gzip", if_generation_match=0,
                                      checksum="md5", timeout=settings.request_timeout_s, retry=None)
            except exceptions.PreconditionFailed:  # the same content got there first
                log.info("code %s was uploaded meanwhile", package.sha256[:12])

        packaging.upload_once(
            package,
            exists=lambda: call(lambda: blob.exists(timeout=settings.request_timeout_s, retry=None)),
            upload=lambda stream, size: call(lambda: upload(stream, size)), what=uri)
    finally:
        package.remove()
    return data.fill_code_hash(compiled.request, package.sha256)
