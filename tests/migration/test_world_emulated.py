"""The World a backend derives from its request and the local emulation of that backend agree
(SPEC §14): for generated portable jobs compiled for B, the variables B's World says the platform
sets reach every process ``omnidist run --emulate B`` would start, and the emulation starts the
replicas the World counts. One description of each platform, read by the report and the emulator."""

from __future__ import annotations

import io
import json
import re

import attrs
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist.backend import registry
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.local.environments import MACHINE_BOUND
from omnidist.migration.world import MPI_VARIABLES, PROCESS_VARIABLES
from omnidist.model.job import Framework
from omnidist.model.roles import RoleName
from omnidist.testing.harness import required_settings
from omnidist.testing.strategies import accelerators_of, jobs, roles

BACKENDS = ("vertex", "ai_platform", "azure_ml", "kubernetes", "sagemaker")

LAUNCHED = PROCESS_VARIABLES | MPI_VARIABLES
"""Set by the launcher inside the process (torchrun, mpirun), not in the replica's environment."""

ROLES = {"primary": "primary", "workers": "worker", "parameter_servers": "parameter_server",
         "evaluators": "evaluator"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_emulator_gives_what_the_world_says(backend):
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.filter_too_much])
    @given(jobs(frameworks=(Framework.PYTORCH, Framework.TENSORFLOW, Framework.CUSTOM),
                primary=roles(replicas=st.just(1), accelerator=st.none() | accelerators_of(types=("T4",),
                                                                                            counts=(1, 2))),
                workers=st.none() | roles(replicas=st.integers(1, 2))))
    def check(job):
        try:
            native = omnidist.compile(job, backend=backend, settings=required_settings(backend)).request
            local = omnidist.compile(job, backend="local", settings={"emulate": backend}).request
        except (UnsupportedFeatureError, ValidationError):
            assume(False)
        world = registry.get(backend).world(native)
        assert world is not None
        counted = {ROLES.get(n.role, n.role): n.count for n in world.nodes}
        processes = {ROLES.get(n.role, n.role): n.processes for n in world.nodes}
        started: dict[str, int] = {}
        for replica in local["replicas"]:
            started[replica["role"]] = started.get(replica["role"], 0) + 1
            node = next(n for n in world.nodes if ROLES.get(n.role, n.role) == replica["role"])
            missing = node.platform_env - LAUNCHED - set(replica["env"])
            assert not missing, f"{backend}'s World says the platform sets {sorted(missing)}; the emulation does not"
        for role, count in started.items():  # a replica per node, or one per process where it runs them itself
            assert role not in counted or count in (counted[role], counted[role] * processes[role]), (role, count)

    check()


SHOW = """import json, os, sys
os.write(1, ("SEEN " + json.dumps(sorted(os.environ)) + "\\n").encode())
"""
"""The program each process runs: it prints the names of the variables it sees (one write, so that
the processes a launcher starts on one replica cannot interleave their lines)."""

LABEL = re.compile(r"^\[(?P<role>[a-z_]+)-(?P<index>\d+)(?:\.\d+)?\] SEEN (?P<names>\[.*\])$")


def _portable(job, program):
    """``job`` running ``program`` on every role, small enough to run here (no data, no limits)."""
    plain = {name.value: attrs.evolve(role, command=None, args=None, env={})
             for name in RoleName if name is not RoleName.REDUCTION_SERVERS and (role := job.role(name)) is not None}
    return attrs.evolve(job, command=("python", program), args=(), env={"OWN": "1"}, inputs={}, outputs={}, code=None,
                        module=None, timeout=None, recovery=None, tuning=None, **plain)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_processes_see_what_the_world_says(backend, tmp_path):
    """Generated job -> compile for B -> B's World -> ``omnidist run --emulate B`` with real processes:
    every process the World counts starts, and each sees every variable the World says it sees: the
    platform's, the job's own and what the platform's compile adds (less the machine-bound ones and
    omnidist's hints, which the local run gives in its own way)."""
    program = tmp_path / "show.py"
    program.write_text(SHOW)
    local = registry.get("local")

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.explicit, Phase.reuse, Phase.generate))  # real processes: no slow shrinking
    @given(jobs(frameworks=(Framework.PYTORCH, Framework.TENSORFLOW, Framework.CUSTOM),
                primary=roles(replicas=st.just(1), accelerator=st.none() | accelerators_of(types=("T4",),
                                                                                            counts=(1, 2))),
                workers=st.none() | roles(replicas=st.integers(1, 2)),
                parameter_servers=st.none() | roles(replicas=st.integers(1, 2)),
                evaluators=st.none() | roles(replicas=st.just(1)),
                reduction_servers=st.none() | roles(replicas=st.integers(1, 2), hardware=False)))
    def check(job):
        job = _portable(job, str(program))
        job = attrs.evolve(job, processes_per_node=job.processes_per_node if job.processes_per_node == "auto"
                           else min(int(job.processes_per_node), 2))
        try:
            native = omnidist.compile(job, backend=backend, settings=required_settings(backend)).request
            local.compile(job, local.settings_type(emulate=backend))
        except (UnsupportedFeatureError, ValidationError):
            assume(False)
        world = registry.get(backend).world(native)
        assert world is not None
        out, err = io.StringIO(), io.StringIO()
        result = local.run(job, local.settings_type(emulate=backend, runs_dir=str(tmp_path / "runs")), out=out, err=err)
        assert result.exit_code == 0, err.getvalue()
        seen: dict[str, list[set[str]]] = {}
        for line in out.getvalue().splitlines():
            found = LABEL.match(line)
            if found:
                seen.setdefault(ROLES.get(found["role"], found["role"]), []).append(set(json.loads(found["names"])))
        assert seen, out.getvalue()
        for node in world.nodes:
            if node.role == "reduction_servers":
                continue
            # the training nodes are alike: a World may count them as one group (the primary the first)
            training = ("primary", "worker") if node.role in ("primary", "workers") else (ROLES[node.role],)
            for names in (names for role in training for names in seen.get(role, ())):
                missing = node.platform_env - names
                missing |= {k for k in set(node.env) - names if k not in MACHINE_BOUND and not k.startswith("OMNIDIST_")}
                assert not missing, f"{backend}'s World says a {node.role} process sees {sorted(missing)}"
        training = sum(n.count * n.processes for n in world.nodes if n.role in ("primary", "workers"))
        assert len(seen.get("primary", ())) + len(seen.get("worker", ())) == training, (world.nodes, sorted(seen))
        mixed = job.reduction_servers is not None and world.node("reduction_servers") is None
        for node in world.nodes:
            if node.role in ("primary", "workers", "reduction_servers"):
                continue
            started = len(seen.get(ROLES[node.role], ()))
            if node.role == "parameter_servers" and mixed:  # legacy AI Platform lists reducers in that pool
                assert started == (job.parameter_servers.replicas if job.parameter_servers else 0), (node, started)
                continue
            assert started == node.count * node.processes, (node, sorted(seen))

    check()
