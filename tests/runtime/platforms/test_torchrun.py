"""torchrun's contract (omnidist/runtime/platforms/torchrun.py): its documented variables."""

from __future__ import annotations

import pytest

from omnidist.runtime import RuntimeEnvError
from omnidist.runtime.platforms import torchrun

# PLATFORMS.md: torchrun sets these for every process it starts (here: node 1 of 2, 2 per node).
DOCUMENTED = {"TORCHELASTIC_RUN_ID": "r1", "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
              "GROUP_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29400"}


def test_parse_the_documented_variables():
    assert torchrun.detect(DOCUMENTED) and not torchrun.detect({"RANK": "0"})
    ctx = torchrun.parse(DOCUMENTED)
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes, ctx.rank, ctx.world_size,
            ctx.local_rank, ctx.processes_per_node) == ("torchrun", "worker", 0, 1, 2, 3, 4, 1, 2)
    assert (ctx.master_addr, ctx.master_port, ctx.cluster) == ("node0", 29400, {"primary": ["node0:29400"]})


def test_node_rank_from_the_rank_without_group_rank():
    env = {k: v for k, v in DOCUMENTED.items() if k != "GROUP_RANK"}
    assert torchrun.parse(env).node_rank == 1


@pytest.mark.parametrize("missing", ["MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"])
def test_what_torchrun_always_sets_must_be_there(missing):
    with pytest.raises(RuntimeEnvError) as info:
        torchrun.parse({k: v for k, v in DOCUMENTED.items() if k != missing})
    assert info.value.variable == missing


def test_not_emulated():
    """omnidist run does not emulate a bare torchrun: `omnidist launch` starts one."""
    assert not hasattr(torchrun, "emulate") and torchrun.DEFAULT_PORT == 29500
