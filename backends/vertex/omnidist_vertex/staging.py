"""Submit-time code upload for Vertex AI: a local ``code`` folder is packed
(:mod:`omnidist.packaging`) and put into ``staging_bucket`` under its content hash with
``google-cloud-storage`` (imported here only), once per content.

The object is created with ``ifGenerationMatch=0`` (only if absent), so a retried or racing
upload can never replace it; a 412 means another upload of the same content won, which is
success. Errors are translated like the job calls' (:meth:`omnidist_vertex.client.VertexClient.translate`)
and retried under the same policy, by the client's :meth:`~omnidist.clients.Client.call`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, BinaryIO, Optional

from omnidist import data, packaging
from omnidist.backend import CompiledJob
from omnidist.errors import BackendError, error_for_status
from omnidist_vertex.settings import VertexSettings

if TYPE_CHECKING:
    from omnidist.clients import Client

log = logging.getLogger("omnidist.vertex")


def split_gs(uri: str) -> tuple[str, str]:
    """``gs://BUCKET/OBJECT`` -> ``(BUCKET, OBJECT)``."""
    bucket, _, name = uri[len("gs://"):].partition("/")
    return bucket, name


def storage_client(settings: VertexSettings) -> Any:
    """A ``google.cloud.storage.Client`` with the backend's credentials (and ``storage_endpoint``)."""
    from google.cloud import storage

    from omnidist_vertex.auth import credentials

    options = {"api_endpoint": settings.storage_endpoint} if settings.storage_endpoint else None
    return storage.Client(project=settings.project or "omnidist", credentials=credentials(settings.credentials),
                          client_options=options)


def _media_error(exc: BaseException) -> Optional[BackendError]:
    """The storage client's upload errors (``InvalidResponse``) carry the HTTP response."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if not isinstance(status, int):
        return None
    return error_for_status(status)(f"uploading the code failed: {exc}", backend="vertex", status=status)


def stage(compiled: CompiledJob, client: Client) -> dict[str, Any]:
    """The request to create: unchanged for a job without a local code folder; else with the
    folder uploaded (unless its content is already there) and its hash filled in."""
    settings = client.settings

    def call(fn: Any) -> Any:
        return client.call(fn, translate=lambda exc: client.translate(exc) or _media_error(exc))

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

        uploaded = packaging.upload_once(
            package, exists=lambda: call(lambda: blob.exists(timeout=settings.request_timeout_s, retry=None)),
            upload=lambda stream, size: call(lambda: upload(stream, size)), what=uri)
        log.info("code %s %s", uri, "uploaded" if uploaded else "already there")
    finally:
        package.remove()
    return data.fill_code_hash(compiled.request, package.sha256)
