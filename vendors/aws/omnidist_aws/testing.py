"""Test support shared by every backend on AWS: moto's server mode on a local port."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto serving every AWS service on one endpoint, on 127.0.0.1 with a port the OS chose;
    yields its URL (``endpoint_url`` of the clients under test) and stops it after."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()
