"""The TPU worker variables (SPEC §13, omnidist/runtime/platforms/tpu.py): worker id 0 is the
primary, id i > 0 is worker i-1 with node_rank i, and num_nodes is the number of hostnames."""

from __future__ import annotations

import pytest

from omnidist.runtime import RuntimeEnvError, context
from omnidist.runtime.platforms import tpu

# GKE's TPU webhook, a 4x4 v5e slice on four hosts (an Indexed Job's pods): this is pod 2.
GKE = {"TPU_WORKER_ID": "2", "TPU_WORKER_HOSTNAMES": "t-0.t,t-1.t,t-2.t,t-3.t", "KUBERNETES_SERVICE_HOST": "10.0.0.1"}


def test_a_host_of_the_slice():
    ctx = context(GKE)
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes, ctx.rank, ctx.world_size,
            ctx.local_rank, ctx.processes_per_node) == ("tpu", "worker", 1, 2, 4, 2, 4, 0, 1)
    assert (ctx.master_addr, ctx.master_port) == ("t-0.t", tpu.COORDINATOR_PORT)
    assert ctx.cluster == {"primary": ["t-0.t:8476"], "worker": ["t-1.t:8476", "t-2.t:8476", "t-3.t:8476"]}
    assert ctx.torch_env() == {"MASTER_ADDR": "t-0.t", "MASTER_PORT": "8476", "RANK": "2", "WORLD_SIZE": "4",
                               "LOCAL_RANK": "0"}


def test_worker_zero_is_the_primary_and_one_host_is_a_slice_of_one():
    ctx = context({"TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "10.1.0.4"})
    assert (ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes, ctx.cluster) == (
        "primary", 0, 0, 1, {"primary": ["10.1.0.4:8476"]})


def test_a_launcher_inside_makes_the_ranks_process_level_and_hints_name_the_job():
    ctx = context({**GKE, "RANK": "9", "WORLD_SIZE": "16", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
                   "OMNIDIST_JOB_NAME": "v5e", "OMNIDIST_FRAMEWORK": "jax"})
    assert (ctx.rank, ctx.world_size, ctx.local_rank, ctx.processes_per_node) == (9, 16, 1, 4)
    assert (ctx.job_name, ctx.framework) == ("v5e", "jax")


def test_a_kubeflow_pod_on_tpus_is_read_as_the_operator_sets_it():
    pod = {**GKE, "PET_NNODES": "4", "PET_NODE_RANK": "2", "MASTER_ADDR": "j-master-0", "MASTER_PORT": "23456",
           "RANK": "2", "WORLD_SIZE": "4"}
    assert context(pod).platform == "kubernetes"


@pytest.mark.parametrize("env, variable", [
    ({"TPU_WORKER_ID": "0"}, "TPU_WORKER_HOSTNAMES"),
    ({"TPU_WORKER_HOSTNAMES": "a,b"}, "TPU_WORKER_ID"),
    ({"TPU_WORKER_ID": "two", "TPU_WORKER_HOSTNAMES": "a,b"}, "TPU_WORKER_ID"),
    ({"TPU_WORKER_ID": "", "TPU_WORKER_HOSTNAMES": "a,b"}, "TPU_WORKER_ID"),
    ({"TPU_WORKER_ID": "2", "TPU_WORKER_HOSTNAMES": "a,b"}, "TPU_WORKER_ID"),
    ({"TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "a,,c"}, "TPU_WORKER_HOSTNAMES"),
    ({"TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": " "}, "TPU_WORKER_HOSTNAMES"),
])
def test_a_malformed_or_lone_variable_is_an_error_naming_it(env, variable):
    with pytest.raises(RuntimeEnvError) as caught:
        context(env)
    assert caught.value.variable == variable


def test_not_emulated():
    """omnidist run refuses TPU jobs: this machine has no TPU."""
    assert not hasattr(tpu, "emulate")
