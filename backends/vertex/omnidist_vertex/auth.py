"""Google credentials for the ``credentials`` setting (google.auth, imported when called): what
the client and the code upload (:mod:`.staging`) authenticate with."""

from __future__ import annotations

from typing import Any

from omnidist.errors import AuthenticationError, ConfigError
from omnidist_vertex.tables import NAME

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
"""The OAuth scope every Vertex call needs."""


def credentials(mode: str) -> Any:
    """google.auth credentials for the ``credentials`` setting: ``anonymous``, ``default`` (Application
    Default Credentials) or a service-account key file."""
    import google.auth
    from google.auth import exceptions as auth_exceptions
    from google.auth.credentials import AnonymousCredentials

    if mode == "anonymous":
        return AnonymousCredentials()
    try:
        if mode == "default":
            credentials, _ = google.auth.default(scopes=list(SCOPES))
            return credentials
        from google.oauth2 import service_account

        return service_account.Credentials.from_service_account_file(mode, scopes=list(SCOPES))
    except auth_exceptions.DefaultCredentialsError as exc:
        raise AuthenticationError(
            f"no Google credentials found ({exc}); run `gcloud auth application-default login`, set "
            'credentials to a service-account key file, or credentials = "anonymous" for a local endpoint',
            backend=NAME,
        ) from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{NAME}: credentials {mode!r} is not a readable service-account key file ({exc})"
        ) from exc
