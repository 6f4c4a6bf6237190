"""The World a backend derives from its request and the local emulation of that backend agree
(SPEC §14): for generated portable jobs compiled for B, the variables B's World says the platform
sets reach every process ``omnidist run --emulate B`` would start, and the emulation starts the
replicas the World counts. One description of each platform, read by the report and the emulator."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist.backend import registry
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.migration.world import MPI_VARIABLES, PROCESS_VARIABLES
from omnidist.model.job import Framework
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
