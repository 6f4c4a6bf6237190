"""The retry policy (omnidist/retry.py): transient only, bounded, jittered, Retry-After."""

from __future__ import annotations

import pytest

from omnidist.backend.settings import DEFAULT_POLICY, ClientSettings, RetryPolicy
from omnidist.errors import InvalidRequestError, TransientBackendError
from omnidist.submission import retry


def _flaky(failures):
    calls = []

    def fn():
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "ok"

    return fn, calls


def test_transient_errors_are_retried_until_success():
    sleeps = []
    fn, calls = _flaky([TransientBackendError("busy", status=503), TransientBackendError("slow down", status=429)])
    assert retry.call(fn, sleep=sleeps.append) == "ok"
    assert len(calls) == 3 and len(sleeps) == 2
    assert all(0 <= s <= DEFAULT_POLICY.max_wait for s in sleeps)


def test_retry_after_is_honoured_and_capped():
    sleeps = []
    fn, _ = _flaky(
        [TransientBackendError("x", status=429, retry_after=3), TransientBackendError("x", status=429, retry_after=999)]
    )
    retry.call(fn, sleep=sleeps.append)
    assert sleeps == [3.0, DEFAULT_POLICY.max_wait]


def test_final_errors_fail_fast():
    fn, calls = _flaky([InvalidRequestError("bad field", status=400)])
    with pytest.raises(InvalidRequestError, match="bad field"):
        retry.call(fn, sleep=lambda s: None)
    assert len(calls) == 1


def test_attempts_are_bounded_and_the_last_error_is_raised():
    policy = RetryPolicy(attempts=3)
    fn, calls = _flaky([TransientBackendError(f"try {i}", status=503) for i in range(10)])
    with pytest.raises(TransientBackendError, match="try 2"):
        retry.call(fn, policy, sleep=lambda s: None)
    assert len(calls) == 3


def test_parse_retry_after():
    assert retry.parse_retry_after("7") == 7.0
    assert retry.parse_retry_after(None) is None
    assert retry.parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry.parse_retry_after("soon") is None


def test_client_settings_describe_the_retry_policy():
    assert ClientSettings().retry_policy() == DEFAULT_POLICY
    settings = ClientSettings(retry_attempts=2, retry_deadline_s=9, retry_initial_wait_s=0, retry_max_wait_s=1.5)
    assert settings.retry_policy() == RetryPolicy(attempts=2, deadline=9, initial_wait=0, max_wait=1.5)
    fn, calls = _flaky([TransientBackendError(f"try {i}", status=503) for i in range(5)])
    sleeps = []
    with pytest.raises(TransientBackendError, match="try 1"):
        retry.call(fn, settings.retry_policy(), sleep=sleeps.append)
    assert len(calls) == 2 and sleeps == [0.0]


@pytest.mark.parametrize("key, value", [("retry_attempts", 0), ("retry_deadline_s", 0), ("request_timeout_s", -1),
                                        ("retry_max_wait_s", -0.1), ("poll_interval_s", "soon")])
def test_client_settings_are_validated(key, value):
    from omnidist.errors import ValidationError

    with pytest.raises(ValidationError, match=rf"^{key}: must be"):
        ClientSettings(**{key: value})
