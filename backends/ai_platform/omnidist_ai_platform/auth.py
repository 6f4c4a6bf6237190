"""Google credentials for the ``credentials`` setting (google.auth, imported when called): what
the client and the code upload (:mod:`.staging`) authenticate with."""

from __future__ import annotations

from typing import Any

from omnidist.errors import AuthenticationError

from omnidist_ai_platform.settings import AIPlatformSettings
from omnidist_ai_platform.tables import NAME

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
"""The OAuth scope the legacy API needs."""


def credentials(settings: AIPlatformSettings) -> Any:
    """google.auth credentials: the default chain, or anonymous (local and compatible endpoints)."""
    if settings.credentials == "anonymous":
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials()
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        found, _ = google.auth.default(scopes=list(SCOPES))
    except DefaultCredentialsError as exc:
        raise AuthenticationError(f"no Google credentials found ({exc}); run `gcloud auth "
                                  "application-default login` or set credentials = \"anonymous\" for a "
                                  "local endpoint", backend=NAME) from exc
    return found
