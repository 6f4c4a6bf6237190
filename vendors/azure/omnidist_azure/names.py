"""How Azure's things are named where the core meets them (declared on this kit's
:data:`~omnidist_azure.prices.PRICES`): its image registries' hosts, its storage's URI schemes,
Azure ML's registered data assets and its tools' credential files."""

from __future__ import annotations

from omnidist.kit import AssetReference

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
