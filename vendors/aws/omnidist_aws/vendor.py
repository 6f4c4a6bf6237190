"""What this kit declares to the core (entry point ``omnidist.vendors: aws``): where AWS's prices
are, and how AWS's things are named where the core meets them: its image registries' hosts, its
object store's URI scheme and its tools' credential files.

Light on purpose: the core reads this while compiling (what a program sees names the registry its
image comes from), so the price readers stay in :mod:`omnidist_aws.prices`, named by reference.
"""

from __future__ import annotations

from pathlib import Path

from omnidist.kit import Vendor

CLOUD = "aws"
"""This vendor, as the price catalog's ``cloud`` column names it."""

REGISTRIES: tuple[tuple[str, str], ...] = (
    (r"\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$", "ecr"),
    (r"^public\.ecr\.aws$", "ecr-public"),
)
"""Registry host pattern -> kind: Amazon ECR (private, in every region and the China partition) and ECR Public."""

URI_SCHEMES = ("s3://",)
"""Amazon S3's URIs."""

SECRET_FILES = (".aws", ".boto", ".s3cfg")
"""The AWS CLI's and SDKs' credential folder, boto's and s3cmd's configuration (keys in clear)."""

VENDOR = Vendor(name=CLOUD, rows=Path(__file__).with_name("prices.csv"),
                price_lists="omnidist_aws.prices:PRICE_LISTS",
                registries=REGISTRIES, uri_schemes=URI_SCHEMES, secret_files=SECRET_FILES)
"""What this kit declares: the SageMaker ``ml.*`` rows it ships (``prices.csv``) and the AWS Price List."""
