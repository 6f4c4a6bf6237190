"""What the backends on Google Cloud share when they submit: credentials, and the code upload
to Cloud Storage (google.auth and ``google-cloud-storage`` are imported when called).

:func:`credentials` reads a ``credentials`` setting: ``anonymous`` (local endpoints),
``default`` (Application Default Credentials) or the path of a service-account key file.

:func:`stage_code` uploads a local ``code`` folder: it is packed (:mod:`omnidist.submission.packaging`)
and put into the settings' ``staging_bucket`` under its content hash with ``google-cloud-storage``
(imported when called), once per content; the request then names it
(:func:`omnidist.compiler.code_data.fill_code_hash`). The object is created with
``ifGenerationMatch=0`` (only if absent), so a retried or racing upload can never replace it; a
412 means the same content got there first, which is success. The storage client's own retries
are off: transient failures are retried under the backend's policy, by its client's
:meth:`~omnidist.submission.clients.Client.call`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, Optional

from omnidist.kit import (
    CODE_OBJECT,
    AuthenticationError,
    BackendError,
    ConfigError,
    Credentials,
    TransientBackendError,
    ValidationError,
    code_folder,
    error_for_status,
)

if TYPE_CHECKING:
    from omnidist.kit import Client, CompiledJob

LOGGER = "omnidist.vendors.google"
"""The logger staging reports to (``logging`` is imported when code is staged, not for a settings check)."""

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
"""The OAuth scope the Google Cloud APIs omnidist calls need."""

Translate = Callable[[BaseException], Optional[BackendError]]


NO_CREDENTIALS = ("no Google credentials: run `gcloud auth application-default login`, or set "
                  "GOOGLE_APPLICATION_CREDENTIALS to a service-account key file; credentials = \"anonymous\" for a "
                  "local endpoint")
"""The error for a machine with no Application Default Credentials (google.auth's own message,
with its link, is the error's cause: ``--debug`` shows it)."""


def google_credentials(mode: str, backend: str) -> Any:
    """google.auth credentials for a ``credentials`` setting (see the module docstring).

    Raises:
        AuthenticationError: no default credentials are configured.
        ConfigError: the key file cannot be read.
    """
    import google.auth
    from google.auth import exceptions as auth_exceptions
    from google.auth.credentials import AnonymousCredentials

    if mode == "anonymous":
        return AnonymousCredentials()
    try:
        if mode == "default":
            return google.auth.default(scopes=list(SCOPES))[0]
        from google.oauth2 import service_account

        return service_account.Credentials.from_service_account_file(mode, scopes=list(SCOPES))
    except auth_exceptions.DefaultCredentialsError as exc:
        raise AuthenticationError(NO_CREDENTIALS, backend=backend) from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{backend}: credentials {mode!r} is not a readable service-account key file ({exc})"
        ) from exc


def check_gs_prefix(instance: Any, attribute: Any, value: Optional[str]) -> None:
    """A Cloud Storage location setting (``staging_bucket``): ``gs://BUCKET[/PATH]``."""
    if value is not None and (not value.startswith("gs://") or len(value.rstrip("/")) <= len("gs://")):
        raise ValidationError(f"{value!r} is not a Cloud Storage location; write gs://BUCKET or gs://BUCKET/PATH",
                              path=attribute.name)


def split_gs(uri: str) -> tuple[str, str]:
    """``gs://BUCKET/OBJECT`` -> ``(BUCKET, OBJECT)``."""
    bucket, _, name = uri[len("gs://"):].partition("/")
    return bucket, name


def storage_client(settings: Any, credentials: Any) -> Any:
    """A ``google.cloud.storage.Client`` with ``credentials`` (and the settings' ``storage_endpoint``)."""
    from google.cloud import storage  # type: ignore[attr-defined]

    options = {"api_endpoint": settings.storage_endpoint} if settings.storage_endpoint else None
    return storage.Client(project=settings.project or "omnidist", credentials=credentials, client_options=options)


def storage_media_error(exc: BaseException, backend: str) -> Optional[BackendError]:
    """The storage client's upload errors (``InvalidResponse``) carry the HTTP response."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if not isinstance(status, int):
        return None
    return error_for_status(status)(f"uploading the code failed: {exc}", backend=backend, status=status)


def translate_storage_error(exc: BaseException, backend: str) -> Optional[BackendError]:
    """omnidist's error for a storage client exception (``None`` when it is not one), for a
    backend whose client has no translation of Google's API errors of its own."""
    import requests
    from google.api_core import exceptions as api_exceptions
    from google.auth import exceptions as auth_exceptions

    if isinstance(exc, api_exceptions.GoogleAPICallError):
        status = exc.code if isinstance(exc.code, int) else None
        return error_for_status(status)(f"uploading the code failed: {exc.message}", backend=backend, status=status)
    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout)):
        return TransientBackendError(f"connection failed: {exc}", backend=backend)
    if isinstance(exc, auth_exceptions.GoogleAuthError):
        return AuthenticationError(str(exc), backend=backend)
    return storage_media_error(exc, backend)


def stage_code(compiled: CompiledJob, client: Client, credentials: Any, translate: Translate) -> dict[str, Any]:
    """The request to create: unchanged for a job without a local code folder; else with the
    folder uploaded to the settings' ``staging_bucket`` (unless its content is already there) and
    its hash filled in (:func:`omnidist.kit.stage_folder` over Cloud Storage).

    Args:
        compiled: the compiled job (its ``job`` names the code folder).
        client: the backend's client (its ``settings`` and its retrying ``call``).
        credentials: google.auth credentials for the upload.
        translate: the backend's translation of the storage client's errors.
    """
    from omnidist.kit import ObjectStore, stage_folder  # settings checks import this module; only staging packs

    job = compiled.job
    if job is None or code_folder(job) is None:
        return compiled.request
    settings = client.settings
    bucket = storage_client(settings, credentials)

    def blob(uri: str) -> Any:
        bucket_name, name = split_gs(uri)
        return bucket.bucket(bucket_name).blob(name)

    def upload(uri: str, stream: BinaryIO, size: int) -> None:
        import logging

        from google.api_core import exceptions

        try:
            blob(uri).upload_from_file(stream, size=size, content_type="application/gzip", if_generation_match=0,
                                       checksum="md5", timeout=settings.request_timeout_s, retry=None)
        except exceptions.PreconditionFailed:  # taken meanwhile: what is there is checked next
            logging.getLogger(LOGGER).info("%s was written meanwhile", uri)

    def stored(uri: str) -> Optional[str]:
        from google.api_core import exceptions

        found = blob(uri)
        try:
            found.reload(timeout=settings.request_timeout_s, retry=None)
        except exceptions.NotFound:
            return None
        return found.md5_hash or ""

    store = ObjectStore(stored=stored, upload=upload, translate=translate)
    template = f"{settings.staging_bucket.rstrip('/')}/{CODE_OBJECT}"
    return stage_folder(compiled, client, store, template)


ADC_FIX = ("run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a "
           "service-account key file (or the profile's credentials setting)")
"""How to give the Google backends credentials."""


def find_google_credentials(mode: str, environ: Optional[Mapping[str, str]] = None) -> Credentials:
    """Where google.auth's default chain (or the ``credentials`` setting) finds credentials,
    without the network: the setting's key file, ``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's
    application-default file; on a Google VM the metadata server (``GCE_METADATA_HOST``) is
    taken as found, since only the network can tell."""
    environ = os.environ if environ is None else environ
    if mode == "anonymous":
        return Credentials(found=True, where="anonymous (a local endpoint): none needed", valid=True)
    if mode != "default":
        return Credentials(found=os.path.isfile(mode), where=f"key file {mode}", fix=ADC_FIX)
    named = environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if named:
        return Credentials(found=os.path.isfile(named), where=f"GOOGLE_APPLICATION_CREDENTIALS={named}",
                           fix=ADC_FIX)
    folder = environ.get("CLOUDSDK_CONFIG") or os.path.join(environ.get("HOME") or os.path.expanduser("~"),
                                                            ".config", "gcloud")
    adc = os.path.join(folder, "application_default_credentials.json")
    if os.path.isfile(adc):
        return Credentials(found=True, where=adc, fix=ADC_FIX)
    if environ.get("GCE_METADATA_HOST") or environ.get("GCE_METADATA_IP"):
        return Credentials(found=True, where="the metadata server of a Google VM", fix=ADC_FIX)
    return Credentials(found=False, fix=ADC_FIX)


def check_google_credentials(mode: str, backend: str) -> Credentials:
    """:func:`find_google_credentials`, then a token asked for (refreshing the credentials creates nothing)."""
    found = find_google_credentials(mode)
    if not found.found or found.valid is not None:
        return found
    from google.auth import exceptions as auth_exceptions
    from google.auth.transport.requests import Request

    return found.checked(lambda: google_credentials(mode, backend).refresh(Request()),
                         (AuthenticationError, ConfigError, auth_exceptions.GoogleAuthError))
