"""S3 objects, with boto3: code staged to S3, an object store for :func:`omnidist.kit.stage_folder`
whose check of what is already there reads the object's MD5 (its ETag when that is one, else its
bytes), so the same content is uploaded once and a different object under the name is never taken
for it; and the watcher's checkpoint copy (:class:`omnidist.kit.CheckpointStore`): list a prefix,
read an object to a file, write a file to an object."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from typing import Any, BinaryIO, Optional

from omnidist.kit import BackendError, CheckpointStore, ObjectStore
from omnidist_aws.session import NOT_FOUND, error_code, error_status

SCHEME = "s3://"
"""How an S3 URI begins."""

MD5_ETAG = re.compile(r"[0-9a-f]{32}")
"""An S3 ETag that is the object's MD5 (not a multipart or KMS-encrypted object's)."""


def split_s3(uri: str) -> tuple[str, str]:
    """``s3://BUCKET/KEY`` -> ``(BUCKET, KEY)``."""
    bucket, _, key = uri[len(SCHEME):].partition("/")
    return bucket, key


def stored_md5(s3: Any, uri: str) -> Optional[str]:
    """The object's MD5 (base64): its ETag when that is one (a single-part upload without KMS),
    else read from its bytes; ``None`` when nothing is there."""
    from botocore import exceptions as aws

    bucket, key = split_s3(uri)
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except aws.ClientError as exc:
        if error_status(exc) == 404 or error_code(exc) in NOT_FOUND:
            return None
        raise
    etag = str(head.get("ETag") or "").strip('"')
    if MD5_ETAG.fullmatch(etag):
        return base64.b64encode(bytes.fromhex(etag)).decode()
    digest = hashlib.md5(usedforsecurity=False)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    for chunk in iter(lambda: body.read(1 << 20), b""):
        digest.update(chunk)
    return base64.b64encode(digest.digest()).decode()


def upload(s3: Any, uri: str, stream: BinaryIO, size: int) -> None:
    """Put a gzipped archive at ``uri``."""
    bucket, key = split_s3(uri)
    s3.put_object(Bucket=bucket, Key=key, Body=stream, ContentLength=size, ContentType="application/gzip")


def object_store(s3: Callable[[], Any], translate: Callable[[BaseException], Optional[BackendError]]) -> ObjectStore:
    """The store :func:`omnidist.kit.stage_folder` stages code to, over the S3 client ``s3()`` gives
    (called when first used), with ``translate`` for botocore's errors."""
    return ObjectStore(stored=lambda uri: stored_md5(s3(), uri),
                       upload=lambda uri, stream, size: upload(s3(), uri, stream, size), translate=translate)


def list_prefix(s3: Any, uri: str) -> list[str]:
    """The ``s3://`` URIs of every object whose key begins with ``uri``'s (all pages)."""
    bucket, prefix = split_s3(uri)
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [f"{SCHEME}{bucket}/{item['Key']}" for page in pages for item in page.get("Contents") or ()]


def download(s3: Any, uri: str, path: str) -> None:
    """Write the object at ``uri`` to the local file ``path`` (in parts when it is big)."""
    bucket, key = split_s3(uri)
    s3.download_file(bucket, key, path)


def upload_file(s3: Any, uri: str, path: str) -> None:
    """Put the local file ``path`` at ``uri``, replacing what is there (a multipart upload when big)."""
    from boto3.exceptions import S3UploadFailedError

    bucket, key = split_s3(uri)
    try:
        s3.upload_file(path, bucket, key)
    except S3UploadFailedError as exc:  # boto3 wraps the service's answer: the caller translates that
        cause = exc.__cause__ or exc.__context__
        if cause is None:
            raise
        raise cause from exc


def checkpoint_store(s3: Callable[[], Any],
                     translate: Callable[[BaseException], Optional[BackendError]]) -> CheckpointStore:
    """The ``s3://`` store over the S3 client ``s3()`` gives (called when first used), with
    ``translate`` for botocore's errors."""
    return CheckpointStore(schemes=("s3",), listing=lambda uri: list_prefix(s3(), uri),
                           download=lambda uri, path: download(s3(), uri, path),
                           upload=lambda uri, path: upload_file(s3(), uri, path), translate=translate)
