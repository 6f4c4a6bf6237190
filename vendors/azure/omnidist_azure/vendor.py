"""What this kit declares to the core (entry point ``omnidist.vendors: azure``): where Azure's
prices are, and how Azure's things are named where the core meets them: its image registries'
hosts, its storage's URI schemes, Azure ML's registered data assets and its tools' credential files.

Light on purpose: the core reads this while compiling (what a program sees names the registry its
image comes from), so the price readers stay in :mod:`omnidist_azure.prices`, named by reference.
"""

from __future__ import annotations

from pathlib import Path

from omnidist.kit import AssetReference, Vendor

CLOUD = "azure"
"""This vendor, as the price catalog's ``cloud`` column names it."""

REGISTRIES: tuple[tuple[str, str], ...] = (
    (r"\.azurecr\.io$", "acr"),
    (r"^mcr\.microsoft\.com$", "mcr"),
)
"""Registry host pattern -> kind: Azure Container Registry and the Microsoft Artifact Registry."""

URI_SCHEMES = ("azureml://", "abfss://", "abfs://", "wasbs://", "wasb://")
"""Azure ML's datastore paths and Azure Storage's Data Lake and blob URIs."""

DATA_ASSET = AssetReference(prefix="azureml:", scheme="azureml", title="a registered Azure ML data asset",
                            fetch="az ml data download --name {name}")
"""``azureml:NAME:VERSION`` / ``azureml:NAME@latest``: data registered in an Azure ML workspace,
which only Azure ML resolves."""

SECRET_FILES = (".azure", "msal_token_cache.*", "accessTokens.json", "service_principal_entries.*")
"""The Azure CLI's folder and the token caches and service-principal secrets it keeps there."""

VENDOR = Vendor(name=CLOUD, rows=Path(__file__).with_name("prices.csv"),
                price_lists="omnidist_azure.prices:PRICE_LISTS",
                registries=REGISTRIES, uri_schemes=URI_SCHEMES, assets=(DATA_ASSET,), secret_files=SECRET_FILES)
"""What this kit declares: the Azure VM rows it ships (``prices.csv``), the skypilot catalog's and
the Azure Retail Prices API's lists."""
