"""Where DefaultAzureCredential finds credentials, looked up without the network (``plan``,
placement), and whether Azure gives a token for them (``omnidist check``; nothing is created)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Optional

from omnidist.kit import Credentials
from omnidist_azure_ml.settings import AzureMLSettings

FIX = "run `az login`, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET for a service principal"
"""How to give the Azure ML backend credentials."""

SCOPE = "https://management.azure.com/.default"
"""The token ``check`` asks for: Azure Resource Manager's, which every Azure ML call uses."""


def find(settings: AzureMLSettings, environ: Optional[Mapping[str, str]] = None) -> Credentials:
    """A service principal or workload identity in the environment, a managed identity endpoint,
    or the Azure CLI's login (its profile in ``AZURE_CONFIG_DIR``, default ``~/.azure``)."""
    environ = os.environ if environ is None else environ
    if settings.credential.lower() == "anonymous":
        return Credentials(found=True, where="anonymous (a local endpoint): none needed", valid=True)
    if environ.get("AZURE_CLIENT_ID") and environ.get("AZURE_TENANT_ID") and any(
            environ.get(v) for v in ("AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
                                     "AZURE_FEDERATED_TOKEN_FILE")):
        return Credentials(found=True, where="AZURE_CLIENT_ID (a service principal)", fix=FIX)
    for name in ("IDENTITY_ENDPOINT", "MSI_ENDPOINT"):
        if environ.get(name):
            return Credentials(found=True, where=f"{name} (a managed identity)", fix=FIX)
    folder = environ.get("AZURE_CONFIG_DIR") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".azure")
    for name in ("msal_token_cache.json", "msal_token_cache.bin", "accessTokens.json"):
        if os.path.isfile(os.path.join(folder, name)):
            return Credentials(found=True, where=f"the Azure CLI's login ({folder})", fix=FIX)
    return Credentials(found=False, fix=FIX)


def check(settings: AzureMLSettings) -> Credentials:
    """:func:`find`, then a Resource Manager token from the credential chain."""
    def probe() -> object:  # azure-identity's errors all mean "no token" here
        from omnidist_azure.credentials import credential

        return credential(settings.credential).get_token(SCOPE)

    return find(settings).checked(probe)
