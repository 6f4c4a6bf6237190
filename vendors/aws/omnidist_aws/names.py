"""How AWS's things are named where the core meets them (declared on this kit's
:data:`~omnidist_aws.prices.PRICES`): its image registries' hosts, its object store's URI scheme
and its tools' credential files."""

from __future__ import annotations

REGISTRIES: tuple[tuple[str, str], ...] = (
    (r"\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$", "ecr"),
    (r"^public\.ecr\.aws$", "ecr-public"),
)
"""Registry host pattern -> kind: Amazon ECR (private, in every region and the China partition) and ECR Public."""

URI_SCHEMES = ("s3://",)
"""Amazon S3's URIs."""

SECRET_FILES = (".aws", ".boto", ".s3cfg")
"""The AWS CLI's and SDKs' credential folder, boto's and s3cmd's configuration (keys in clear)."""
