"""Azure credentials, endpoints and azure-core's errors (the SDKs are imported when called).

:func:`credential` gives azure-identity's default chain, or, for ``anonymous`` (a local
endpoint that checks no token), a static fake token. :func:`translate` turns azure-core's
transport and HTTP errors into omnidist's error tree.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from omnidist.kit import (
    AuthenticationError,
    OmnidistError,
    TransientBackendError,
    error_for_status,
    parse_retry_after,
)

PUBLIC_CLOUD: dict[str, str] = {
    "active_directory": "https://login.microsoftonline.com/",
    "aml_resource_id": "https://ml.azure.com/",
    "azure_portal": "https://portal.azure.com/",
    "registry_discovery_endpoint": "https://eastus.api.azureml.ms/",
    "resource_manager": "https://management.azure.com/",
    "storage_endpoint": "core.windows.net",
}
"""Azure public cloud endpoints (an endpoint setting replaces ``resource_manager``)."""

NO_CREDENTIALS = ("no Azure credentials: run `az login`, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and "
                  "AZURE_CLIENT_SECRET for a service principal (DefaultAzureCredential found none that gives a "
                  "token; --debug shows what each source said)")
"""The error for a credential chain that gave no token (one line: the chain's own message lists
ten sources, most of which the user never meant to use)."""


class StaticTokenCredential:
    """A credential that hands out one fake bearer token (``credential = "anonymous"``), for
    local endpoints that check no token."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        """A token valid for an hour."""
        from azure.core.credentials import AccessToken

        return AccessToken("omnidist-anonymous", int(time.time()) + 3600)


def credential(kind: str) -> Any:
    """azure-identity's default chain, or the static fake token for ``kind == "anonymous"``."""
    if kind == "anonymous":
        return StaticTokenCredential()
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()


def plain_http_policy() -> Any:
    """A pipeline policy that lets bearer tokens go to a plain-http endpoint (local test servers):
    some SDK calls do not pass ``enforce_https`` themselves."""
    from azure.core.pipeline.policies import SansIOHTTPPolicy

    class AllowPlainHttp(SansIOHTTPPolicy):
        def on_request(self, request: Any) -> None:
            request.context.options.setdefault("enforce_https", False)

    return AllowPlainHttp()


def translate(exc: BaseException, *, backend: str) -> Optional[OmnidistError]:
    """The omnidist error for an azure-core exception, with the service's message (``None`` for
    an exception that is not azure-core's)."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        HttpResponseError,
        ServiceRequestError,
        ServiceResponseError,
    )

    if isinstance(exc, ClientAuthenticationError) and exc.response is None:  # no token, not a refusal (401)
        return AuthenticationError(NO_CREDENTIALS, backend=backend)
    if isinstance(exc, (ServiceRequestError, ServiceResponseError)):
        return TransientBackendError(f"connection failed: {exc}", backend=backend)
    if isinstance(exc, HttpResponseError):
        status = exc.status_code
        error = getattr(exc, "error", None)
        message = getattr(error, "message", None) or exc.message or str(exc)
        headers = exc.response.headers if exc.response is not None else {}  # type: ignore[attr-defined]
        return error_for_status(status)(message, backend=backend, status=status,
                                        retry_after=parse_retry_after(headers.get("Retry-After")))
    return None
