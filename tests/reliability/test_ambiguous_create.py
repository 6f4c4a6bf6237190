"""The ambiguous create on every cloud backend: the server makes the job, then the connection
ends without an answer, by a reset or by a clean close, or the server answers a 5xx anyway
(whose outcome the client cannot know: it must look before it creates again). Whatever the SDK's transport does with
that (httplib2 sends the create again by itself on a clean close; requests and azure-core's
RequestsTransport do not), the submit succeeds, its handle names the job, and exactly one exists.
"""

from __future__ import annotations

import pytest

from omnidist.testing import Fault

FAULTS = {"reset": Fault.drop_after_create(), "closed": Fault.close_after_create(),
          **{f"{status}-after-create": Fault.http_after_create(status) for status in (500, 502, 503, 504)}}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_created_then_connection_dropped_leaves_exactly_one_job(cloud, fault):
    cloud.server.fail(*cloud.create, FAULTS[fault])
    handle = cloud.submit()
    assert len(cloud.service.jobs) == 1, "exactly one job, none cancelled either"
    assert cloud.job_count() == 1
    assert handle.status().state.value in ("queued", "pending", "running"), "the handle names that job"
    assert 1 <= cloud.creates() <= 2, "the create, and at most one repeat that made nothing"


@pytest.mark.parametrize("status", [500, 503])
def test_concurrent_submits_answered_5xx_after_the_create_make_one_job_each(cloud, status):
    """Each submit settles its own unknown create by its own key: N submits, N jobs."""
    from concurrent.futures import ThreadPoolExecutor

    cloud.server.fail(*cloud.create, *[Fault.http_after_create(status)] * 5)
    with ThreadPoolExecutor(5) as pool:
        handles = list(pool.map(lambda _: cloud.submit(), range(5)))
    assert cloud.server.wait_idle()
    assert len({h.id for h in handles}) == 5
    assert cloud.job_count() == 5, "one job per submit, however the creates were answered"


def test_a_second_submit_after_an_ambiguous_create_makes_a_second_job(cloud):
    """Exactly once per submit, not per job definition: the marker is per submit."""
    cloud.server.fail(*cloud.create, Fault.close_after_create())
    cloud.submit()
    cloud.submit()
    assert cloud.job_count() == 2


@pytest.mark.parametrize("status", [500, 503])
def test_a_quota_refusal_after_a_create_that_made_its_job_adopts_that_job(cloud, status):
    """The server makes the job and answers 5xx; the repeat is refused for quota (the quota that job
    now takes): the refusal is believed only after the job is looked up, which finds it."""
    from omnidist.errors import ShortageError

    refusal = Fault.http(400, "Quota exceeded: the request exceeds the quota of 0 GPUs for this project")
    cloud.server.fail(*cloud.create, Fault.http_after_create(status), refusal)
    try:
        handle = cloud.submit()
    except ShortageError as exc:  # pragma: no cover - the defect this guards against
        pytest.fail(f"a refusal was believed while this submit's job exists: {exc}")
    assert cloud.job_count() == 1 and handle.status().state.value in ("queued", "pending", "running")
