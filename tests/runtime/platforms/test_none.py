"""No platform (omnidist/runtime/platforms/none.py): one process, and nothing to emulate."""

from __future__ import annotations

from omnidist.runtime import context
from omnidist.runtime.platforms import Decided, modules, none

from .cluster import job, slots


def test_always_present_and_last():
    assert none.detect({}) and modules()[-1] is none


def test_a_single_process_honouring_master_addr_and_port():
    ctx = none.parse({"MASTER_ADDR": "10.1.1.1", "MASTER_PORT": "1234"})
    assert (ctx.platform, ctx.role, ctx.rank, ctx.world_size, ctx.master_addr, ctx.master_port) == (
        "none", "primary", 0, 1, "10.1.1.1", 1234)
    assert none.parse({}).master_port == 29500


def test_emulate_gives_no_variables_and_the_runtime_sees_one_process():
    shape = {"primary": 1, "worker": 2, "evaluator": 1, "reduction_server": 1}
    envs = none.emulate(job(shape), slots(shape), Decided())
    assert envs == [{}] * 4  # the reduction server does not run
    assert {(c.platform, c.world_size) for c in map(context, envs)} == {("none", 1)}
    assert none.HINTS_PER_ROLE is None and not hasattr(none, "follow")
