"""Azure ML's contract (omnidist/runtime/platforms/azure_ml.py): distributions, reading each
distribution's documented variables, and emulate <-> parse for every distribution."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnidist.runtime import RuntimeEnvError
from omnidist.runtime.platforms import Decided, azure_ml

from .cluster import job, round_trip, shapes, slots

# PLATFORMS.md: the PyTorch distribution, per node and per process (2 nodes x 2 processes).
PYTORCH = {"AZUREML_RUN_ID": "r1", "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105", "WORLD_SIZE": "4",
           "NODE_RANK": "1", "RANK": "3", "LOCAL_RANK": "1", "AZ_BATCH_HOST_LIST": "10.0.0.4,10.0.0.5"}
# The MPI distribution: mpirun's variables and rank 0's address.
MPI = {"AZUREML_RUN_ID": "r1", "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8",
       "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "AZ_BATCH_MASTER_NODE": "10.0.0.4:6105",
       "AZ_BATCHAI_MPI_MASTER_NODE": "10.0.0.4"}
# The TensorFlow distribution: worker 0 is the chief, an empty ps list as Azure writes it.
TENSORFLOW = {"AZUREML_RUN_ID": "r1", "TF_CONFIG": json.dumps(
    {"cluster": {"worker": ["host0:2222", "host1:2222"], "ps": []}, "task": {"type": "worker", "index": 1},
     "environment": "cloud"})}


def test_distribution_by_framework_and_the_roles_each_can_describe():
    assert azure_ml.DISTRIBUTIONS == {"custom": "pytorch", "deepspeed": "pytorch", "horovod": "mpi", "jax": "pytorch",
                                      "pytorch": "pytorch", "tensorflow": "tensorflow"}
    assert set(azure_ml.DISTRIBUTION_ROLES) == set(azure_ml.DISTRIBUTIONS.values())
    assert azure_ml.roles(Decided(details={"distribution": "tensorflow"})) == {"primary", "worker", "parameter_server"}
    assert azure_ml.roles(Decided(details={"distribution": "mpi"})) == {"primary", "worker"}


@pytest.mark.parametrize(("env", "expected"), [
    (PYTORCH, ("worker", 0, 1, 3, 4, 1, 2, "10.0.0.4", 6105, "MASTER_ADDR")),
    (MPI, ("worker", 0, 1, 5, 8, 1, 2, "10.0.0.4", 6105, "OMPI_COMM_WORLD_RANK")),
    (TENSORFLOW, ("worker", 0, 1, 1, 2, 0, 2, "host0", 2222, "TF_CONFIG")),
    ({"AZUREML_RUN_ID": "r1"}, ("primary", 0, 0, 0, 1, 0, 1, "127.0.0.1", 29500, "AZUREML_RUN_ID")),
])
def test_parse_each_documented_distribution(env, expected):
    assert azure_ml.detect(env)
    ctx = azure_ml.parse(env)
    assert (ctx.role, ctx.index, ctx.node_rank, ctx.rank, ctx.world_size, ctx.local_rank, ctx.num_nodes,
            ctx.master_addr, ctx.master_port, ctx.source) == expected
    assert ctx.platform == "azure_ml"


def test_mpi_master_without_a_port_uses_the_documented_one():
    env = {k: v for k, v in MPI.items() if k != "AZ_BATCH_MASTER_NODE"}
    assert azure_ml.parse(env).master_port == azure_ml.MPI_DEFAULT_PORT == 6105
    with pytest.raises(RuntimeEnvError, match="AZ_BATCH_MASTER_NODE"):
        azure_ml.parse({k: v for k, v in env.items() if k != "AZ_BATCHAI_MPI_MASTER_NODE"})


def test_the_client_side_variable_is_not_a_job():
    assert not azure_ml.detect({"AZUREML_CURRENT_CLOUD": "AzureChinaCloud", "MASTER_ADDR": "h"})
    assert azure_ml.detect({"AZUREML_CR_NODE_RANK": "0"})


def test_model_dir_defaults_to_outputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert azure_ml.default_model_dir() == str(tmp_path / "outputs")


def test_launched_by_azure_when_it_started_several_processes_per_node():
    assert "Azure ML's PyTorch distribution" in azure_ml.launched_by(azure_ml.parse(PYTORCH), PYTORCH)
    one = {**PYTORCH, "WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "0"}
    assert azure_ml.launched_by(azure_ml.parse(one), one) is None


@pytest.mark.parametrize(("distribution", "variables"), [
    ("pytorch", {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NODE_RANK", "RANK", "LOCAL_RANK"}),
    ("mpi", {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
             "OMPI_COMM_WORLD_NODE_RANK", "AZ_BATCH_MASTER_NODE", "AZ_BATCHAI_MPI_MASTER_NODE"}),
    ("tensorflow", {"TF_CONFIG"}),
])
def test_emulate_writes_the_distributions_variables(distribution, variables):
    shape = {"primary": 1, "worker": 1}
    envs = azure_ml.emulate(job(shape), slots(shape, 2), Decided(processes_per_node=2,
                                                                 details={"distribution": distribution}))
    common = {"AZUREML_RUN_ID", "AZUREML_NODE_COUNT", "AZ_BATCH_HOST_LIST", "AZUREML_CR_NODE_RANK"}
    assert [set(env) for env in envs] == [common | variables] * 4
    assert {env["AZ_BATCH_HOST_LIST"] for env in envs} == {"127.0.0.1:40000,127.0.0.1:40001"}
    assert [env["AZUREML_RUN_ID"] for env in envs] == ["demo_local"] * 4


def test_tensorflow_writes_the_empty_ps_list_and_says_so():
    shape = {"primary": 1, "worker": 1}
    decided = Decided(details={"distribution": "tensorflow"})
    envs = azure_ml.emulate(job(shape, framework="tensorflow"), slots(shape), decided)
    assert json.loads(envs[0]["TF_CONFIG"])["cluster"]["ps"] == []
    assert [field for field, _ in azure_ml.notes(job(shape, framework="tensorflow"), decided)] == ["TF_CONFIG"]
    assert azure_ml.notes(job({**shape, "parameter_server": 1}, framework="tensorflow"), decided) == []
    assert azure_ml.notes(job(shape), Decided(details={"distribution": "pytorch"})) == []


def test_follow_reads_the_distribution_compile_wrote():
    request = {"distribution": {"type": "pytorch", "process_count_per_instance": 4}}
    decided = azure_ml.follow(request, job({"primary": 1}))
    assert (decided.processes_per_node, decided.details) == (4, {"distribution": "pytorch"})
    assert azure_ml.follow({"distribution": {"type": "tensorflow", "worker_count": 2}},
                           job({"primary": 1})).processes_per_node == 1
    assert azure_ml.assume(job({"primary": 1}, framework="horovod")).details == {"distribution": "mpi"}


@settings(max_examples=80, deadline=None, derandomize=True)
@given(shape=shapes(("primary", "worker", "parameter_server")), processes=st.integers(1, 3),
       distribution=st.sampled_from(sorted(azure_ml.DISTRIBUTION_ROLES)))
def test_emulate_parse_round_trip(shape, processes, distribution):
    decided = Decided(details={"distribution": distribution},
                      processes_per_node=1 if distribution == "tensorflow" else processes)
    if not set(shape) <= azure_ml.roles(decided):
        return  # compile refuses it: parameter servers outside TensorFlow
    hints = {"OMNIDIST_PROCESSES_PER_NODE": str(decided.processes_per_node)}
    found = round_trip(azure_ml, shape, decided, hints=hints)
    expected = {"pytorch": "MASTER_ADDR", "mpi": "OMPI_COMM_WORLD_RANK", "tensorflow": "TF_CONFIG"}[distribution]
    assert {c.source for c in found} == {expected}


def test_compile_then_emulate_reads_back_each_process():
    pytest.importorskip("omnidist_azure_ml")
    import omnidist
    from omnidist.model.job import DistributedJob
    from omnidist.model.roles import Role

    portable = DistributedJob(name="demo", framework="horovod", image="x.azurecr.io/t:1", command="python t.py",
                              workers=Role(replicas=1), processes_per_node=2)
    request = omnidist.compile(portable, backend="azure_ml").request
    shape = {"primary": 1, "worker": 1}
    decided = azure_ml.follow(request, job(shape, framework="horovod"))
    assert (decided.processes_per_node, decided.details["distribution"]) == (2, "mpi")
    found = round_trip(azure_ml, shape, decided, hints=request["environment_variables"])  # the compiled hints
    assert [(c.rank, c.local_rank, c.node_rank) for c in found] == [(0, 0, 0), (1, 1, 0), (2, 0, 1), (3, 1, 1)]
