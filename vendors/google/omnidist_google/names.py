"""How Google Cloud's things are named where the core meets them (declared on this kit's
:data:`~omnidist_google.prices.PRICES`): its image registries' hosts, its object store's URI
scheme and its tools' credential files."""

from __future__ import annotations

REGISTRIES: tuple[tuple[str, str], ...] = (
    (r"-docker\.pkg\.dev$", "artifact-registry"),
    (r"(^|\.)gcr\.io$", "gcr"),
)
"""Registry host pattern -> kind: Artifact Registry (``REGION-docker.pkg.dev``) and Container
Registry (``gcr.io`` and its regional hosts)."""

URI_SCHEMES = ("gs://",)
"""Cloud Storage's URIs."""

SECRET_FILES = ("gcloud/", ".config/gcloud/", ".boto", "application_default_credentials.json",
                "legacy_credentials/", "access_tokens.db", "credentials.db")
"""The gcloud CLI's configuration folder (tokens, application-default credentials, its databases)
and gsutil's ``.boto`` (keys in clear)."""
