"""What this kit declares to the core (entry point ``omnidist.vendors: google``): where Google
Cloud's prices are and how Compute Engine VMs bill, and how Google Cloud's things are named where
the core meets them: its image registries' hosts, its object store's URI scheme and its tools'
credential files.

Light on purpose: the core reads this while compiling (what a program sees names the registry its
image comes from), so the price readers stay in :mod:`omnidist_google.prices`, named by reference.
"""

from __future__ import annotations

from pathlib import Path

from omnidist.kit import Billing, Vendor

CLOUD = "gcp"
"""This vendor, as the price catalog's ``cloud`` column names it."""

COMPUTE_ENGINE_PRICES = "compute_engine"
"""The price list of Compute Engine VMs and GPUs (the catalog's ``service``)."""

COMPUTE_ENGINE_BILLING = Billing(prices=COMPUTE_ENGINE_PRICES, gpus_apart=True,
                                 rule="Compute Engine VMs; GPUs billed apart")
"""How a plain Compute Engine VM bills (GPUs are SKUs of their own, added per GPU)."""

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

VENDOR = Vendor(name=CLOUD, rows=Path(__file__).with_name("prices.csv"),
                price_lists="omnidist_google.prices:PRICE_LISTS", billing={"compute_engine": COMPUTE_ENGINE_BILLING},
                registries=REGISTRIES, uri_schemes=URI_SCHEMES, secret_files=SECRET_FILES)
"""What this kit declares: the Compute Engine, Vertex AI and GKE rows it ships (``prices.csv``), the
skypilot catalog's and the Cloud Billing Catalog's lists, and how plain VMs bill."""
