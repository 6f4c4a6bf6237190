"""A local Cloud Storage JSON API for the real ``google-cloud-storage`` client, on
:class:`omnidist.testing.FakeServer` (the Google backends' code-upload tests). Imports no SDK.

Routes, as the client calls them (verified with google-cloud-storage 3.x):

* ``GET /storage/v1/b/{bucket}/o/{object}``: object metadata (``blob.exists()``), 404 when absent;
* ``GET /storage/v1/b/{bucket}/o?prefix=P``: the objects whose names begin with ``P``
  (``client.list_blobs``), :data:`PAGE` a page with ``nextPageToken``;
* ``GET /download/storage/v1/b/{bucket}/o/{object}?alt=media``: the object's bytes
  (``blob.download_to_filename``), with its MD5 in ``X-Goog-Hash`` for the client to check;
* ``POST /upload/storage/v1/b/{bucket}/o?uploadType=multipart``: a ``multipart/related``
  body (JSON metadata, then the bytes) for uploads up to 8 MiB;
* ``POST …?uploadType=resumable`` then ``PUT …&upload_id=ID`` with ``Content-Range`` chunks
  (308 until the last one) for bigger uploads.

``ifGenerationMatch=0`` (create only if absent) is honoured with 412, as Cloud Storage does.
Objects are kept in :attr:`FakeStorage.objects` (``(bucket, name)`` -> bytes); ``md5Hash`` is
returned so the client can check what it sent.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import threading
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import unquote

from omnidist.testing.fakeserver import FakeServer, Recorded, Response, error_body

_OBJECT = r"^/storage/v1/b/(?P<bucket>[^/]+)/o/(?P<name>.+)$"
_UPLOAD = r"^/upload/storage/v1/b/(?P<bucket>[^/]+)/o$"
_LIST = r"^/storage/v1/b/(?P<bucket>[^/]+)/o$"
_DOWNLOAD = r"^/download/storage/v1/b/(?P<bucket>[^/]+)/o/(?P<name>.+)$"
PAGE = 2
"""Objects per listing page: small, so every listing in the tests crosses pages."""
PRECONDITION = "At least one of the pre-conditions you specified did not hold."


class FakeStorage:
    """The fake's objects and routes (one instance per :class:`FakeServer`)."""

    def __init__(self, server: FakeServer):
        self.server = server
        self.objects: dict[tuple[str, str], bytes] = {}
        self.written: list[tuple[str, str]] = []
        """Every object written, in the order its upload completed."""
        self._sessions: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        server.route("GET", _OBJECT, self.get_object)
        server.route("GET", _LIST, self.list_objects)
        server.route("GET", _DOWNLOAD, self.download)
        server.route("GET", r"^/storage/v1/b/(?P<bucket>[^/]+)$", self.get_bucket)
        server.route("POST", _UPLOAD, self.start_upload)
        server.route("PUT", _UPLOAD, self.put_chunk)

    @property
    def endpoint(self) -> str:
        """What to give the client as ``api_endpoint`` (the ``storage_endpoint`` setting)."""
        return self.server.url

    def uploads(self) -> list[Recorded]:
        """The requests that started an upload (one per object written)."""
        return self.server.calls("POST", r"^/upload/storage/v1/")

    def _resource(self, bucket: str, name: str) -> dict[str, Any]:
        data = self.objects[(bucket, name)]
        return {"kind": "storage#object", "bucket": bucket, "name": name, "size": str(len(data)),
                "generation": "1", "metageneration": "1", "contentType": "application/gzip",
                "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode()}

    def get_bucket(self, rec: Recorded, m: re.Match) -> Response:
        """Any bucket exists."""
        return Response(200, {"kind": "storage#bucket", "name": m["bucket"], "id": m["bucket"]})

    def get_object(self, rec: Recorded, m: re.Match) -> Response:
        key = (m["bucket"], unquote(m["name"]))
        with self._lock:
            if key not in self.objects:
                return Response(404, error_body(404, f"No such object: {key[0]}/{key[1]}"))
            return Response(200, self._resource(*key))

    def list_objects(self, rec: Recorded, m: re.Match) -> Response:
        """One page of the bucket's objects under ``prefix``, in name order."""
        prefix = (rec.query.get("prefix") or [""])[0]
        start = int((rec.query.get("pageToken") or ["0"])[0])
        with self._lock:
            names = sorted(n for b, n in self.objects if b == m["bucket"] and n.startswith(prefix))
            page = {"kind": "storage#objects",
                    "items": [self._resource(m["bucket"], n) for n in names[start:start + PAGE]]}
        if start + PAGE < len(names):
            page["nextPageToken"] = str(start + PAGE)
        return Response(200, page)

    def download(self, rec: Recorded, m: re.Match) -> Response:
        """An object's bytes (``alt=media``)."""
        key = (m["bucket"], unquote(m["name"]))
        with self._lock:
            if key not in self.objects:
                return Response(404, error_body(404, f"No such object: {key[0]}/{key[1]}"))
            data = self.objects[key]
        digest = base64.b64encode(hashlib.md5(data).digest()).decode()
        return Response(200, data, {"X-Goog-Hash": f"md5={digest}", "X-Goog-Generation": "1"})

    def _exists_conflict(self, rec: Recorded, key: tuple[str, str]) -> bool:
        return rec.query.get("ifGenerationMatch") == ["0"] and key in self.objects

    def start_upload(self, rec: Recorded, m: re.Match) -> Response:
        kind = (rec.query.get("uploadType") or [""])[0]
        if kind == "multipart":
            metadata, payload = _multipart(rec)
            key = (m["bucket"], metadata["name"])
            with self._lock:
                if self._exists_conflict(rec, key):
                    return Response(412, error_body(412, PRECONDITION))
                self.objects[key] = payload
                self.written.append(key)
                return Response(200, self._resource(*key))
        if kind == "resumable":
            metadata = rec.body if isinstance(rec.body, dict) else json.loads(rec.raw or b"{}")
            key = (m["bucket"], metadata.get("name") or (rec.query.get("name") or [""])[0])
            with self._lock:
                if self._exists_conflict(rec, key):
                    return Response(412, error_body(412, PRECONDITION))
                upload_id = f"upload-{next(self._ids)}"
                self._sessions[upload_id] = {"key": key, "data": b""}
            location = (f"{self.server.url}/upload/storage/v1/b/{m['bucket']}/o"
                        f"?uploadType=resumable&upload_id={upload_id}")
            return Response(200, None, {"Location": location})
        return Response(400, error_body(400, f"unsupported uploadType {kind!r}"))

    def put_chunk(self, rec: Recorded, m: re.Match) -> Response:
        upload_id = (rec.query.get("upload_id") or [""])[0]
        span = re.fullmatch(r"bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)", _header(rec, "Content-Range"))
        with self._lock:
            session = self._sessions.get(upload_id)
            if session is None or span is None:
                return Response(404, error_body(404, "No such upload session"))
            if span.group(1) is not None:
                if int(span.group(1)) != len(session["data"]):
                    return Response(400, error_body(400, "chunk does not start where the last one ended"))
                session["data"] += rec.raw
            total = span.group(3)
            if total != "*" and len(session["data"]) == int(total):
                self.objects[session["key"]] = session["data"]
                self.written.append(session["key"])
                del self._sessions[upload_id]
                return Response(200, self._resource(*session["key"]))
            return Response(308, None, {"Range": f"bytes=0-{len(session['data']) - 1}"})


def _header(rec: Recorded, name: str) -> str:
    """A request header, whatever case the client wrote it in."""
    return next((v for k, v in rec.headers.items() if k.lower() == name.lower()), "")


def _multipart(rec: Recorded) -> tuple[dict[str, Any], bytes]:
    """The JSON metadata and the bytes of a ``multipart/related`` upload body."""
    head = f"Content-Type: {_header(rec, 'Content-Type')}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + rec.raw)
    parts = [part.get_payload(decode=True) for part in message.iter_parts()]
    return json.loads(parts[0]), parts[1]
