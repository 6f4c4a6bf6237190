"""Azure Blob storage: which URLs point into it, and reading a blob from an offset through an
azure-core pipeline (a SAS URL is its own credential), with the service's XML errors read."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from omnidist.kit import OmnidistError, error_for_status, lazy_pattern

BLOB_HOSTS = (".blob.core.windows.net", ".dfs.core.windows.net")
"""Host suffixes of Azure Blob and Data Lake storage."""

_BLOB_MESSAGE = lazy_pattern(r"<Message>(.*?)</Message>", re.S)


def is_blob_url(uri: str) -> bool:
    """True for an ``https`` URI into Azure Blob / Data Lake storage."""
    host = uri.split("://", 1)[-1].split("/", 1)[0].lower()
    return host.endswith(BLOB_HOSTS)


def http_error(response: Any, what: str, *, backend: str) -> OmnidistError:
    """The omnidist error for a failed plain GET (blob storage answers in XML, others in JSON).

    The URL is left out on purpose: a blob's URL may carry its SAS signature.
    """
    from omnidist.kit import parse_retry_after  # client code: compiling checks URLs and loads none of it

    text = response.text() or ""
    found = _BLOB_MESSAGE.search(text)
    message = found.group(1).strip() if found else text.strip()[:300]
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        pass
    return error_for_status(response.status_code)(
        f"reading {what}: {message or response.reason}", backend=backend, status=response.status_code,
        retry_after=parse_retry_after(response.headers.get("Retry-After")))


def read_from(pipeline: Any, url: str, offset: int, *, what: str, backend: str,
              timeouts: Mapping[str, float]) -> bytes:
    """The bytes of the blob at ``url`` from ``offset`` on (empty when it is not there yet or holds
    nothing after the offset), through an azure-core ``pipeline``.

    Raises:
        OmnidistError: the read failed (:func:`http_error`).
    """
    response = pipeline.get(url, headers={"Range": f"bytes={offset}-"}, **timeouts)
    if response.status_code in (404, 416):  # not uploaded yet / nothing after the offset
        return b""
    if response.status_code == 206:
        return response.body()
    if response.status_code == 200:  # a server that ignores Range sends the whole file
        return response.body()[offset:]
    raise http_error(response, what, backend=backend)
