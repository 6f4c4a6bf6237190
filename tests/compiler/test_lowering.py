"""Inheritance, env merging and process counts (omnidist/lowering.py)."""

from __future__ import annotations

from omnidist.compiler import lowering
from omnidist.model.job import DistributedJob
from omnidist.model.roles import (
    Accelerator,
    Role,
    RoleName,
    effective_role,
    effective_roles,
    num_nodes,
    processes_per_node,
)


def _job(**kw):
    base = dict(name="j", framework="pytorch", image="img:1", command=["python", "t.py"], args=["--a"],
                env={"A": "job", "B": "job"}, primary=Role(accelerator=Accelerator(type="V100", count=4), cpus=16,
                                                            env={"B": "primary"}))
    base.update(kw)
    return DistributedJob(**base)


def test_workers_and_evaluators_inherit_the_primary():
    job = _job(workers=Role(replicas=3), evaluators=Role(replicas=1, image="eval:1"))
    workers = effective_role(job, "workers")
    assert (workers.replicas, workers.accelerator, workers.cpus, workers.image) == (
        3,
        job.primary.accelerator,
        16,
        "img:1",
    )
    assert workers.env == {"A": "job", "B": "primary"}
    evaluators = effective_role(job, RoleName.EVALUATORS)
    assert evaluators.image == "eval:1" and evaluators.gpus == 4


def test_parameter_servers_inherit_only_the_program():
    job = _job(parameter_servers=Role(replicas=2, cpus=8, env={"A": "ps"}))
    ps = effective_role(job, "parameter_servers")
    assert ps.accelerator is None and ps.cpus == 8 and ps.command == ("python", "t.py")
    assert ps.env == {"A": "ps", "B": "job"}


def test_effective_roles_skip_absent_and_empty_roles_but_keep_auto():
    job = _job(workers=Role(replicas=0), reduction_servers=Role(replicas="auto"))
    assert [r.name for r in effective_roles(job)] == [RoleName.PRIMARY, RoleName.REDUCTION_SERVERS]
    assert num_nodes(job) == 1


def test_processes_per_node_auto_is_the_accelerator_count():
    assert processes_per_node(_job()) == 4
    assert processes_per_node(_job(primary=Role())) == 1
    assert processes_per_node(_job(processes_per_node=2)) == 2


def test_runtime_hints_are_only_what_the_runtime_cannot_read_elsewhere():
    job = _job(workers=Role(replicas=1), reduction_servers=Role(replicas=2))
    env = lowering.env_with_hints(effective_role(job, "workers"), job)
    assert env == {"OMNIDIST_JOB_NAME": "j", "OMNIDIST_FRAMEWORK": "pytorch", "OMNIDIST_PROCESSES_PER_NODE": "4", "A": "job",
                   "B": "primary",
                   "OMNIDIST_POOL2_ROLE": "reduction_server"}
    assert lowering.runtime_hints(job, RoleName.PRIMARY) == lowering.runtime_hints(job, RoleName.WORKERS, per_role=False)
    servers = _job(primary=Role(), parameter_servers=Role(replicas=1))  # pool 2 reads as parameter servers anyway
    assert lowering.runtime_hints(servers, RoleName.PRIMARY) == {
        "OMNIDIST_JOB_NAME": "j", "OMNIDIST_FRAMEWORK": "pytorch", "OMNIDIST_PROCESSES_PER_NODE": "1"}
    user = _job(env={"OMNIDIST_JOB_NAME": "mine"})
    assert lowering.env_with_hints(effective_role(user, "primary"), user)["OMNIDIST_JOB_NAME"] == "mine"


# --- Reduction Server sizing ------------------------------------------------------------------------


def _trainers(workers: int) -> dict:
    job = _job(workers=Role(replicas=workers), reduction_servers=Role(replicas="auto"))
    return {role.name: role for role in effective_roles(job)}


def test_reducers_send_as_fast_as_the_training_nodes():
    # PLATFORMS.md's documented examples: 5 nodes at 100 Gbps and 8 at 100 Gbps over 32 Gbps reducers.
    roles = _trainers(4)
    sizing = lowering.size_reducers(roles, {RoleName.PRIMARY: 100, RoleName.WORKERS: 100}, 32)
    assert sizing.count == 16 and sizing.trainers == ((1, 100), (4, 100))
    assert sizing.explain("n1-highcpu-16") == "auto = ceil((1×100 + 4×100 Gbps) / 32 Gbps per n1-highcpu-16) = 16"
    assert lowering.size_reducers(_trainers(7), {RoleName.PRIMARY: 100, RoleName.WORKERS: 100}, 32).count == 25


def test_reducer_sizing_counts_each_role_at_its_own_bandwidth_and_never_below_one():
    roles = _trainers(3)
    assert lowering.size_reducers(roles, {RoleName.PRIMARY: 50, RoleName.WORKERS: 24}, 32).count == 4  # 122/32
    del roles[RoleName.WORKERS]
    assert lowering.size_reducers(roles, {RoleName.PRIMARY: 10}, 32).count == 1
