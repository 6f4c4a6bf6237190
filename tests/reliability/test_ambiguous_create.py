"""The ambiguous create on every cloud backend: the server makes the job, then the connection
ends without an answer, by a reset or by a clean close. Whatever the SDK's transport does with
that (httplib2 sends the create again by itself on a clean close; requests and azure-core's
RequestsTransport do not), the submit succeeds, its handle names the job, and exactly one exists.
"""

from __future__ import annotations

import pytest

from omnidist.testing import Fault

FAULTS = {"reset": Fault.drop_after_create(), "closed": Fault.close_after_create()}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_created_then_connection_dropped_leaves_exactly_one_job(cloud, fault):
    cloud.server.fail(*cloud.create, FAULTS[fault])
    handle = cloud.submit()
    assert len(cloud.service.jobs) == 1, "exactly one job, none cancelled either"
    assert cloud.job_count() == 1
    assert handle.status().state.value in ("queued", "pending", "running"), "the handle names that job"
    assert 1 <= cloud.creates() <= 2, "the create, and at most one repeat that made nothing"


def test_a_second_submit_after_an_ambiguous_create_makes_a_second_job(cloud):
    """Exactly once per submit, not per job definition: the marker is per submit."""
    cloud.server.fail(*cloud.create, Fault.close_after_create())
    cloud.submit()
    cloud.submit()
    assert cloud.job_count() == 2
