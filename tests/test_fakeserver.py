"""The fake cloud server the client tests rely on (omnidist/testing/fakeserver.py)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from omnidist.testing import FakeServer, Fault, Response


def _post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.status, json.loads(response.read() or b"null")


@pytest.fixture
def server():
    created = []
    with FakeServer() as fake:
        fake.created = created
        fake.route(
            "POST", r"^/jobs$", lambda req, m: (created.append(req.body), Response(200, {"id": len(created)}))[1]
        )
        yield fake


def test_routes_answer_and_requests_are_recorded(server):
    assert server.url.startswith("http://127.0.0.1:") and server.port > 0
    assert _post(server.url + "/jobs", {"a": 1}) == (200, {"id": 1})
    assert server.calls("POST", "/jobs")[0].body == {"a": 1}


def test_injected_status_carries_retry_after_and_an_error_body(server):
    server.fail("POST", "/jobs", Fault.http(429, "slow down", retry_after=3))
    with pytest.raises(urllib.error.HTTPError) as info:
        _post(server.url + "/jobs", {})
    assert info.value.code == 429 and info.value.headers["Retry-After"] == "3"
    assert json.loads(info.value.read())["error"]["message"] == "slow down"
    assert server.created == [] and _post(server.url + "/jobs", {})[0] == 200


def test_drop_after_create_runs_the_handler_then_resets(server):
    server.fail("POST", "/jobs", Fault.drop_after_create())
    with pytest.raises((ConnectionError, urllib.error.URLError, OSError)):
        _post(server.url + "/jobs", {"n": 1})
    assert server.created == [{"n": 1}]


def test_close_after_create_runs_the_handler_then_closes_without_answering(server):
    import http.client

    server.fail("POST", "/jobs", Fault.close_after_create())
    with pytest.raises(http.client.RemoteDisconnected):  # a clean close, not a reset
        _post(server.url + "/jobs", {"n": 1})
    assert server.created == [{"n": 1}]


def test_reset_happens_before_the_handler(server):
    server.fail("POST", "/jobs", Fault.reset())
    with pytest.raises((ConnectionError, urllib.error.URLError, OSError)):
        _post(server.url + "/jobs", {})
    assert server.created == []


def test_unknown_routes_are_404(server):
    with pytest.raises(urllib.error.HTTPError) as info:
        _post(server.url + "/other", {})
    assert info.value.code == 404


def test_a_held_request_is_handled_when_released_and_wait_idle_sees_it_end(server):
    release = threading.Event()
    server.fail("POST", "/jobs", Fault.held(release))
    request = urllib.request.Request(server.url + "/jobs", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with pytest.raises((TimeoutError, urllib.error.URLError, OSError)):
        urllib.request.urlopen(request, timeout=0.2)  # the client gives up; the server holds on
    assert server.created == [] and not server.wait_idle(limit=0.05)
    release.set()
    assert server.wait_idle()
    assert server.created == [{}], "handled after the release, although the client had gone"


def test_a_hook_runs_before_the_request_is_handled(server):
    seen = []
    server.fail("POST", "/jobs", Fault.hook(lambda: seen.append(len(server.created))))
    assert _post(server.url + "/jobs", {"n": 1}) == (200, {"id": 1})
    assert seen == [0] and server.created == [{"n": 1}]
