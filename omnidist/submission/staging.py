"""A job's local ``code`` folder uploaded to a cloud's object store once per content, for any
cloud: the store is two calls the backend gives (the MD5 it keeps for an object, put it).

The compiled request names the object with :data:`omnidist.compiler.code_data.CODE_HASH` in its
place (``compile`` uploads nothing); at submit the folder is packed
(:mod:`omnidist.submission.packaging`), the object is uploaded unless this very archive is already
there — a name is never trusted for what it says: an object whose stored MD5 is not the archive's
is left alone, and the archive goes beside it under a name that also holds its MD5
(:func:`omnidist.submission.packaging.upload_verified`) — and the name is filled in.
Both calls go through the backend client's retrying
:meth:`~omnidist.submission.clients.Client.call`, with the store SDK's errors translated by the
translator the backend gives. The vendor kits' object stores are of this kind.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, Optional

import attrs

from omnidist.compiler import code_data
from omnidist.submission import packaging

if TYPE_CHECKING:
    from omnidist.backend.values import CompiledJob
    from omnidist.errors import BackendError
    from omnidist.submission.clients import Client

log = logging.getLogger("omnidist.submission.staging")


@attrs.frozen(kw_only=True)
class ObjectStore:
    """Where a code archive goes, as two calls on one object URI (each made once per attempt;
    the caller retries).

    Attributes:
        stored: the MD5 (base64) the store keeps for the object, ``""`` when it keeps none, ``None``
            when nothing is there.
        upload: puts the archive (a readable file at its start, and its size in bytes); an
            upload that finds the name taken meanwhile returns quietly (what is there is checked next).
        translate: the store SDK's errors as omnidist's (``None`` for an exception that is not one).
    """

    stored: Callable[[str], Optional[str]]
    upload: Callable[[str, BinaryIO, int], None]
    translate: Optional[Callable[[BaseException], Optional[BackendError]]] = None


def stage_folder(compiled: CompiledJob, client: Client, store: ObjectStore, uri_template: str, *,
                 layout: str = packaging.SDIST) -> dict[str, Any]:
    """The request to create: unchanged for a job without a local code folder; else with the
    folder packed and uploaded to ``uri_template`` (unless this archive is already there) and the
    object's name filled in everywhere.

    Args:
        compiled: the compiled job (its ``job`` names the code folder).
        client: the backend's client (its retrying ``call``).
        store: the object store's calls.
        uri_template: the object's URI with :data:`~omnidist.compiler.code_data.CODE_HASH` in it.
        layout: the archive's layout (:data:`~omnidist.submission.packaging.SDIST` or ``FLAT``).
    """
    job = compiled.job
    folder = code_data.code_folder(job) if job is not None else None
    if folder is None:
        return compiled.request
    package = packaging.pack(folder, ship_secrets=job.ship_secrets, layout=layout)
    try:
        # The content hash names the object; when someone else's bytes sit there, the archive goes
        # beside it under a name that also holds its MD5 (docs/security.md).
        keys = [package.sha256, f"{package.sha256}-{base64.b64decode(package.md5).hex()}"]
        uris = {uri_template.replace(code_data.CODE_HASH, key): key for key in keys}

        def call(fn: Callable[[], Any]) -> Any:
            return client.call(fn, translate=store.translate)

        def upload(uri: str, stream: BinaryIO, size: int) -> None:
            def put() -> None:
                stream.seek(0)  # a retried upload starts from the first byte again
                store.upload(uri, stream, size)
            call(put)

        uri, uploaded = packaging.upload_verified(package, list(uris), lambda uri: call(lambda: store.stored(uri)),
                                                  upload)
        log.info("code %s %s", uri, "uploaded" if uploaded else "already there")
    finally:
        package.remove()
    return code_data.fill_code_hash(compiled.request, uris[uri])
