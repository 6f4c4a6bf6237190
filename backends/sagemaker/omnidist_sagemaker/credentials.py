"""Where boto3 finds AWS credentials, looked up without the network (``plan``, placement), and
whether AWS accepts them (``omnidist check``: STS ``GetCallerIdentity``, which creates nothing)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Optional

from omnidist.kit import Credentials
from omnidist_sagemaker.settings import SageMakerSettings

FIX = ("run `aws configure` (or `aws sso login`), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
       "(or the profile's aws_profile to a profile of ~/.aws/config)")
"""How to give the SageMaker backend credentials."""

SOURCES = ("AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
           "AWS_CONTAINER_CREDENTIALS_FULL_URI")
"""Environment variables that are a credential source of boto3's chain by themselves."""


def find(settings: SageMakerSettings, environ: Optional[Mapping[str, str]] = None) -> Credentials:
    """The first source of boto3's chain that is present (instance roles are not looked for: only
    the network can tell, so a VM with a role and nothing else reads ``missing`` here; ``check``
    asks)."""
    environ = os.environ if environ is None else environ
    if settings.credentials == "anonymous":
        return Credentials(found=True, where="anonymous (a local endpoint): none needed", valid=True)
    for name in SOURCES:
        if environ.get(name):
            return Credentials(found=True, where=name, fix=FIX)
    home = environ.get("HOME") or os.path.expanduser("~")
    for variable, default in (("AWS_SHARED_CREDENTIALS_FILE", "credentials"), ("AWS_CONFIG_FILE", "config")):
        path = environ.get(variable) or os.path.join(home, ".aws", default)
        if os.path.isfile(path):
            return Credentials(found=True, where=path, fix=FIX)
    return Credentials(found=False, fix=FIX)


def check(settings: SageMakerSettings) -> Credentials:
    """:func:`find`, then STS ``GetCallerIdentity`` with them."""
    def probe() -> object:  # botocore's many errors all mean "not accepted" here
        from omnidist_sagemaker.client import aws_client

        return aws_client(settings, "sts").get_caller_identity()

    return find(settings).checked(probe)
