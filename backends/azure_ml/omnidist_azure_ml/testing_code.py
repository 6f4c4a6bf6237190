"""Test helper: the routes ``MLClient`` calls to upload a job's local ``code`` folder, on the
same :class:`omnidist.testing.FakeServer` as :class:`omnidist_azure_ml.testing.FakeAzureML`.

What ``jobs.create_or_update`` does for ``code: ./src`` (azure-ai-ml 1.35; the SDK hashes the
folder itself, honouring ``.amlignore`` / ``.gitignore``):

1. ``GET …/codes/{name}/versions?hash=H&hashVersion=V``: a code version with this content
   already? Then it is reused and nothing is uploaded (once per content).
2. ``POST …/codes/{name}/versions/{version}/startPendingUpload``: a SAS URL for a fresh
   blob container (here: this server, ``/blob/code-uploads-N``).
3. Blob storage (``azure-storage-blob`` with the SAS): list the asset's prefix, ``PUT`` each
   file, set metadata on them.
4. ``PUT …/codes/{name}/versions/{version}``: the code version, whose ``codeUri`` points at
   the upload and whose ``properties`` carry the hash; the job then refers to its id.

:class:`FakeAzureCode` keeps the versions and the blobs. Imports no SDK.
"""

from __future__ import annotations

import itertools
import re
import threading
from typing import Any
from urllib.parse import unquote

from omnidist.testing.fakeserver import FakeServer, Recorded, Response
from omnidist_azure_ml.testing import WORKSPACE

CODES = "^" + WORKSPACE + r"/codes/(?P<name>[^/]+)/versions"
CONTAINER = "code-uploads"
SAS = "sv=2021-08-06&sr=c&sp=rcwl&sig=fake-code-signature"


def _hash(version: dict[str, Any]) -> Any:
    return version.get("properties", {}).get("properties", {}).get("hash_sha256")


def _blob_error(status: int, code: str, message: str) -> Response:
    return Response(status, f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code>'
                            f"<Message>{message}</Message></Error>", {"x-ms-error-code": code})


class FakeAzureCode:
    """Code versions and the blob container their files are uploaded to.

    Attributes:
        versions: ``(name, version)`` -> the code version resource as PUT.
        blobs: ``container/blob path`` -> bytes.
    """

    def __init__(self, server: FakeServer):
        self.server = server
        self.versions: dict[tuple[str, str], dict[str, Any]] = {}
        self.blobs: dict[str, bytes] = {}
        self.metadata: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        self._containers = itertools.count(1)
        server.route("GET", CODES + "$", self.list_versions)
        server.route("POST", CODES + r"/(?P<version>[^/]+)/startPendingUpload$", self.start_pending_upload)
        server.route("PUT", CODES + r"/(?P<version>[^/]+)$", self.put_version)
        server.route("GET", CODES + r"/(?P<version>[^/]+)$", self.get_version)
        blob = rf"^/blob/(?P<container>{CONTAINER}-\d+)/(?P<blob>.+)$"
        server.route("GET", rf"^/blob/(?P<container>{CONTAINER}-\d+)$", self.list_blobs)
        server.route("PUT", blob, self.put_blob)
        server.route("GET", blob, self.get_blob)
        server.route("HEAD", blob, self.get_blob)

    def uploaded_files(self) -> list[str]:
        """The blob paths written (the code folder's files), over every upload."""
        return sorted(name.split("/", 1)[1] for name in self.blobs)

    # --- management -------------------------------------------------------------------------

    def _resource(self, path: str, name: str, version: str, properties: dict[str, Any]) -> dict[str, Any]:
        return {"id": path, "name": version, "type": "Microsoft.MachineLearningServices/workspaces/codes/versions",
                "properties": properties}

    def list_versions(self, rec: Recorded, m: re.Match) -> Response:
        """Versions of a code asset; with ``hash``, any code version with that content (the SDK
        asks under a fresh anonymous name and reuses whatever comes back)."""
        wanted = (rec.query.get("hash") or [None])[0]
        workspace = rec.path.split("/codes/")[0]
        with self._lock:
            found = [self._resource(f"{workspace}/codes/{n}/versions/{v}", n, v, body.get("properties", {}))
                     for (n, v), body in self.versions.items()
                     if (wanted is None and n == m["name"])
                     or (wanted is not None and _hash(body) == wanted)]
        return Response(200, {"value": found})

    def start_pending_upload(self, rec: Recorded, m: re.Match) -> Response:
        container = f"{self.server.url}/blob/{CONTAINER}-{next(self._containers)}"
        return Response(200, {
            "blobReferenceForConsumption": {
                "blobUri": container,
                "storageAccountArmId": "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Storage/"
                                       "storageAccounts/fakeaccount",
                "credential": {"credentialType": "SAS", "sasUri": f"{container}?{SAS}"},
            },
            "pendingUploadId": f"pending-{m['version']}", "pendingUploadType": "TemporaryBlobReference"})

    def put_version(self, rec: Recorded, m: re.Match) -> Response:
        body = rec.body or {}
        with self._lock:
            self.versions[(m["name"], m["version"])] = body
        return Response(200, self._resource(rec.path, m["name"], m["version"], body.get("properties", {})))

    def get_version(self, rec: Recorded, m: re.Match) -> Response:
        with self._lock:
            body = self.versions.get((m["name"], m["version"]))
        if body is None:
            return Response(
                404, {"error": {"code": "UserError", "message": f"code {m['name']}:{m['version']} not found"}}
            )
        return Response(200, self._resource(rec.path, m["name"], m["version"], body.get("properties", {})))

    # --- blob storage ---------------------------------------------------------------------------

    def _signed(self, rec: Recorded) -> bool:
        return rec.query.get("sig") == ["fake-code-signature"]

    def list_blobs(self, rec: Recorded, m: re.Match) -> Response:
        if not self._signed(rec):
            return _blob_error(403, "AuthenticationFailed", "Signature did not match")
        prefix = f"{m['container']}/" + (rec.query.get("prefix") or [""])[0]
        with self._lock:
            names = [n.split("/", 1)[1] for n in sorted(self.blobs) if n.startswith(prefix)]
        items = "".join(f"<Blob><Name>{n}</Name><Properties><Content-Length>{len(self.blobs[n])}</Content-Length>"
                        "<BlobType>BlockBlob</BlobType></Properties><Metadata>"
                        + "".join(f"<{k}>{v}</{k}>" for k, v in self.metadata.get(f"{m['container']}/{n}", {}).items())
                        + "</Metadata></Blob>" for n in names)
        return Response(200, f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults ContainerName="{CONTAINER}">'
                             f"<Prefix>{prefix}</Prefix><Blobs>{items}</Blobs><NextMarker /></EnumerationResults>",
                        {"Content-Type": "application/xml"})

    def put_blob(self, rec: Recorded, m: re.Match) -> Response:
        if not self._signed(rec):
            return _blob_error(403, "AuthenticationFailed", "Signature did not match")
        name = f"{m['container']}/{unquote(m['blob'])}"
        meta = {k[len("x-ms-meta-"):]: v for k, v in rec.headers.items() if k.lower().startswith("x-ms-meta-")}
        stamp = {"ETag": '"0x1"', "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"}
        with self._lock:
            if rec.query.get("comp") == ["metadata"]:  # set metadata: 200 OK
                if name not in self.blobs:
                    return _blob_error(404, "BlobNotFound", "The specified blob does not exist.")
                self.metadata[name] = meta
                return Response(200, None, stamp)
            self.blobs[name] = rec.raw  # put blob: 201 Created
            self.metadata[name] = meta
        return Response(201, None, stamp)

    def get_blob(self, rec: Recorded, m: re.Match) -> Response:
        name = f"{m['container']}/{unquote(m['blob'])}"
        with self._lock:
            data = self.blobs.get(name)
            meta = self.metadata.get(name, {})
        if data is None:
            return _blob_error(404, "BlobNotFound", "The specified blob does not exist.")
        headers = {"x-ms-blob-type": "BlockBlob", **{f"x-ms-meta-{k}": v for k, v in meta.items()}}
        return Response(200, data.decode("utf-8", "replace"), headers)
