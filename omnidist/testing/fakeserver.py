"""A tiny HTTP server on 127.0.0.1 (port chosen by the OS) that records every request,
answers from routes a test registers, and can misbehave on purpose.

Faults are queued per route and consumed one per matching request::

    server.fail("POST", r"/customJobs", Fault.http(429, retry_after=0), Fault.drop_after_create())

A route's pattern is searched in the request's path, or, on a server that speaks a protocol
naming each call's operation in a header (:data:`AWS_JSON`: every call is ``POST /`` with
``X-Amz-Target: SageMaker.CreateTrainingJob``), in that operation name; the protocol also
writes the error bodies of injected faults the way the cloud's SDK parses them.

``drop_after_create`` runs the real handler (so the job exists) and then resets the
connection without answering: the "ambiguous create" every client must survive;
``http_after_create`` runs it and answers a 5xx anyway (the outcome is just as unknown).
``close_after_create`` does the same but closes the connection cleanly, which some HTTP
libraries (httplib2) take for a stale keep-alive connection and silently send again. ``held``
keeps a request until the test releases it, and ``hook`` runs a test's function first, so
tests decide by events in order, not by the clock.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import parse_qs, urlsplit

import attrs


@attrs.frozen
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    raw: bytes = b""
    """The body's bytes as sent (uploads: ``body`` is decoded JSON or text)."""
    operation: str = ""
    """The operation the protocol's header names (``SageMaker.CreateTrainingJob``), else ``""``."""

    @property
    def route(self) -> str:
        """What route patterns are searched in: the operation, else the path."""
        return self.operation or self.path


@attrs.frozen
class Response:
    """What a route answers: status, JSON body (or text), extra headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Fault:
    """One injected misbehaviour."""

    kind: str
    status: int = 0
    retry_after: Optional[float] = None
    message: str = ""
    delay: float = 0.0
    release: Optional[threading.Event] = attrs.field(default=None, eq=False)
    call: Optional[Callable[[], None]] = attrs.field(default=None, eq=False)
    code: str = ""

    @classmethod
    def http(cls, status: int, message: str = "", retry_after: Optional[float] = None, code: str = "") -> Fault:
        """Answer with an HTTP error (JSON ``{"error": {"code", "message", "status"}}``; ``code``: the
        error's code as a string, as Azure APIs send it, instead of the number)."""
        return cls("status", status=status, message=message or f"injected {status}", retry_after=retry_after,
                   code=code)

    @classmethod
    def reset(cls) -> Fault:
        """Reset the connection before handling the request."""
        return cls("reset")

    @classmethod
    def drop_after_create(cls) -> Fault:
        """Handle the request (side effects happen), then reset without answering."""
        return cls("drop")

    @classmethod
    def http_after_create(cls, status: int, message: str = "") -> Fault:
        """Handle the request (side effects happen), then answer with an HTTP error anyway: a
        server that made the job and failed before saying so (a 5xx whose outcome is unknown)."""
        return cls("status_after", status=status, message=message or f"injected {status} after the create")

    @classmethod
    def close_after_create(cls) -> Fault:
        """Handle the request (side effects happen), then close the connection without answering."""
        return cls("close")

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        """Wait before answering normally (for client timeouts)."""
        return cls("slow", delay=seconds)

    @classmethod
    def held(cls, release: threading.Event, limit: float = 60.0) -> Fault:
        """Keep the request until ``release`` is set (at most ``limit`` seconds), then handle it
        normally: a client that gave up meanwhile sees a timeout, and the side effects happen
        when the test says so."""
        return cls("slow", delay=limit, release=release)

    @classmethod
    def hook(cls, call: Callable[[], None]) -> Fault:
        """Run ``call()`` in the server thread, then handle the request normally."""
        return cls("slow", call=call)


Handler = Callable[[Recorded, "re.Match[str]"], Response]

_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The error envelope Google and Azure APIs share the shape of (``error.code``/``message``)."""
    return {"error": {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}}


def rest_error(status: int, message: str, code: str = "") -> Response:
    """A Google or Azure error (:func:`error_body`); ``code`` replaces the numeric ``error.code``
    with a service's own (Azure's ``QuotaExceeded``…)."""
    body = error_body(status, message)
    if code:
        body["error"]["code"] = code
    return Response(status, body)


@attrs.frozen(kw_only=True)
class Protocol:
    """How a cloud's API names the operation of a request and writes an error.

    Attributes:
        operation_header: the header naming each call's operation (``None``: the path does).
        error: the response an injected ``Fault.http(status, message, code=…)`` answers with.
    """

    operation_header: Optional[str] = None
    error: Callable[[int, str, str], Response] = rest_error


AWS_ERROR_CODES = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFound",
                   409: "ResourceInUse", 429: "ThrottlingException", 500: "InternalFailure",
                   503: "ServiceUnavailable"}
"""HTTP status -> the error code an AWS JSON service answers with (for injected faults)."""


def aws_error(status: int, message: str, code: str = "") -> Response:
    """An AWS JSON protocol error: ``{"__type": CODE, "message": …}``, which botocore parses."""
    return Response(status, {"__type": code or AWS_ERROR_CODES.get(status, "UnknownError"), "message": message},
                    {"x-amzn-RequestId": "fake-request"})


REST = Protocol()
"""Google's and Azure's REST APIs: the path names the operation; errors are ``{"error": {…}}``."""

AWS_JSON = Protocol(operation_header="X-Amz-Target", error=aws_error)
"""AWS's JSON protocol (SageMaker, CloudWatch Logs): ``POST /``, the operation in ``X-Amz-Target``."""


class FakeServer:
    """A local HTTP server for SDK round trips. Use as a context manager."""

    def __init__(self, protocol: Protocol = REST) -> None:
        self.protocol = protocol
        self.requests: list[Recorded] = []
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._faults: list[tuple[str, re.Pattern[str], list[Fault]]] = []
        self._lock = threading.Lock()
        self._busy = 0
        self._idle = threading.Condition(self._lock)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval keeps shutdown (and so each test's teardown) fast.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        """The port the OS chose."""
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``"""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Answer ``method`` requests whose path (or operation) matches ``pattern`` (re.search) with ``handler``."""
        self._routes.append((method.upper(), re.compile(pattern), handler))

    def fail(self, method: str, pattern: str, *faults: Fault) -> None:
        """Queue faults for the next matching requests, one each."""
        with self._lock:
            self._faults.append((method.upper(), re.compile(pattern), list(faults)))

    def calls(self, method: str, pattern: str = "") -> list[Recorded]:
        """The recorded requests with this method whose path matches ``pattern``."""
        rx = re.compile(pattern)
        return [r for r in self.requests if r.method == method.upper() and rx.search(r.route)]

    def wait_idle(self, limit: float = 60.0) -> bool:
        """Wait until no request is being handled (a held or slow one has finished), at most
        ``limit`` seconds; whether the server is idle."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout=limit)

    @contextmanager
    def _handling(self):
        with self._lock:
            self._busy += 1
        try:
            yield
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def _next_fault(self, method: str, route: str) -> Optional[Fault]:
        with self._lock:
            for m, rx, queue in self._faults:
                if m == method and rx.search(route) and queue:
                    return queue.pop(0)
        return None

    def _handle(self, method: str, handler: BaseHTTPRequestHandler) -> None:
        with self._handling():
            self._answer(method, handler)

    def _answer(self, method: str, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        header = self.protocol.operation_header
        operation = (handler.headers.get(header) or "") if header else ""
        record = Recorded(method, parts.path, parse_qs(parts.query), dict(handler.headers.items()), body, raw,
                          operation)
        with self._lock:
            self.requests.append(record)
        fault = self._next_fault(method, record.route)
        if fault and fault.kind == "reset":
            _reset(handler)
            return
        if fault and fault.kind == "status":
            headers = {} if fault.retry_after is None else {"Retry-After": str(int(fault.retry_after))}
            error = self.protocol.error(fault.status, fault.message, fault.code or "")
            _send(handler, attrs.evolve(error, headers={**error.headers, **headers}))
            return
        if fault and fault.kind == "slow":
            if fault.call is not None:
                fault.call()
            if fault.release is not None:
                fault.release.wait(fault.delay)
            else:
                time.sleep(fault.delay)
        response = self._dispatch(record)
        if fault and fault.kind == "status_after":
            _send(handler, Response(fault.status, error_body(fault.status, fault.message)))
            return
        if fault and fault.kind == "drop":
            _reset(handler)
            return
        if fault and fault.kind == "close":  # no answer; the server closes with a FIN, not a reset
            handler.close_connection = True
            return
        _send(handler, response)

    def _dispatch(self, record: Recorded) -> Response:
        for method, rx, fn in self._routes:
            match = rx.search(record.route)
            if method == record.method and match:
                try:
                    return fn(record, match)
                except Exception as exc:  # a bug in a test's handler: answer 500 and say why
                    return self.protocol.error(500, f"fake server handler failed: {exc!r}")
        return self.protocol.error(404, f"no route for {record.method} {record.route}")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                server._handle("GET", self)

            def do_POST(self) -> None:
                server._handle("POST", self)

            def do_PUT(self) -> None:
                server._handle("PUT", self)

            def do_PATCH(self) -> None:
                server._handle("PATCH", self)

            def do_DELETE(self) -> None:
                server._handle("DELETE", self)

            def do_HEAD(self) -> None:
                server._handle("HEAD", self)

        return _Handler


def _send(handler: BaseHTTPRequestHandler, response: Response) -> None:
    if isinstance(response.body, (dict, list)):
        payload, ctype = json.dumps(response.body).encode(), "application/json"
    elif response.body is None:
        payload, ctype = b"", "application/json"
    elif isinstance(response.body, bytes):  # an object's own bytes (a download)
        payload, ctype = response.body, "application/octet-stream"
    else:
        payload, ctype = str(response.body).encode(), "text/plain"
    handler.send_response(response.status)
    handler.send_header("Content-Type", ctype)
    handler.send_header("Content-Length", str(len(payload)))
    for key, value in response.headers.items():
        handler.send_header(key, value)
    try:
        handler.end_headers()
        if handler.command != "HEAD":  # a HEAD answer has the GET's headers and no body
            handler.wfile.write(payload)
        handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up (a timeout test): nothing left to answer


def _reset(handler: BaseHTTPRequestHandler) -> None:
    # SO_LINGER with a zero timeout makes close() send RST: the client sees a reset
    # connection, not a clean end of stream.
    sock = handler.connection
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    handler.close_connection = True
    try:
        sock.close()
    except OSError:
        pass
