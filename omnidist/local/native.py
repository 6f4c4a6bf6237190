"""What the emulated platform's own compiler decides about a job, for the local emulation.

Emulating a platform means giving replicas what that platform would give them for the request
``omnidist compile`` sends it. So the emulation compiles the job with the emulated platform's
backend (when its plugin is installed) and follows the result: it refuses what compile refuses
(with the same error and exit code), lists the Reduction Server pool compile sized, writes the
compiled job (Vertex's CustomJob spec, AI Platform's ``trainingInput``) as ``CLUSTER_SPEC``'s
``job``, names the AI Platform primary ``chief``
when compile sets ``useChiefInTfConfig``, and starts as many processes per Azure ML node as
compile asks Azure to start. Without the plugin, the core's own rules stand in and a note says so.

The job is compiled as it is, except that a job without ``image`` gets :data:`PLACEHOLDER_IMAGE`
(a local run needs none; every cloud does), and that its data stays on this machine: inputs,
outputs and code are left out and their references read as :data:`LOCAL_DATA` (where the data
is locally is :mod:`omnidist.local.code_data`'s business, not the emulated cloud's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import attrs

from omnidist import config, lowering, registry
from omnidist.backend import CompiledJob, Note, NoteKind
from omnidist.errors import ValidationError
from omnidist.job import DistributedJob, RoleName
from omnidist.jobdata import REFERENCE

PLACEHOLDER_IMAGE = "local/omnidist-run:latest"
"""The image a job without one is compiled with for the emulation (never pulled)."""

LOCAL_DATA = "<local data>"
"""What a ``${{inputs.X}}``/``${{outputs.X}}`` reference reads as in the emulation's compile."""

RUN_NOTE_FIELDS = frozenset({"framework", "processes_per_node", "useChiefInTfConfig",
                             "distribution.process_count_per_instance"})
"""Fields whose compile notes ``omnidist run`` repeats: they change how processes start or what they see."""


@attrs.frozen(kw_only=True)
class Native:
    """What the emulated platform's compiler decided that the emulation follows.

    Attributes:
        request: the compiled request (``None`` without the platform's plugin, or for ``none``).
        reducers: Reduction Server replicas the platform lists in its cluster (never run locally).
        processes_per_node: processes the platform itself starts on each training node (Azure ML).
        use_chief: AI Platform's ``useChiefInTfConfig``.
        job_spec: what the platform writes as ``CLUSTER_SPEC``'s and ``TF_CONFIG``'s ``job``: Vertex's
            CustomJob spec, AI Platform's ``trainingInput``.
        notes: compile notes that matter to a local run, and what the emulation could not check.
    """

    request: Optional[dict[str, Any]] = None
    reducers: int = 0
    processes_per_node: int = 1
    use_chief: bool = False
    job_spec: dict[str, Any] = attrs.field(factory=dict)
    notes: tuple[Note, ...] = ()


def _data_kept_local(job: DistributedJob) -> DistributedJob:
    """The job without its inputs, outputs and code, references replaced by :data:`LOCAL_DATA`:
    a cloud's compiler would refuse local paths that the local run reads directly."""
    if not (job.inputs or job.outputs or job.code or job.module):
        return job

    def plain(argv: Optional[tuple[str, ...]]) -> Optional[tuple[str, ...]]:
        return None if argv is None else tuple(REFERENCE.sub(LOCAL_DATA, a) for a in argv)

    def plain_env(env: dict[str, str]) -> dict[str, str]:
        return {k: REFERENCE.sub(LOCAL_DATA, v) for k, v in env.items()}

    roles = {r.value: attrs.evolve(role, command=plain(role.command), args=plain(role.args), env=plain_env(role.env))
             for r in RoleName if (role := job.role(r)) is not None}
    command = job.command or (("python", "-m", job.module) if job.module else ())
    return attrs.evolve(job, inputs={}, outputs={}, code=None, module=None, command=plain(command),
                        args=plain(job.args), env=plain_env(job.env), **roles)


def _compiled(job: DistributedJob, emulate: str) -> CompiledJob:
    driver = registry.get(emulate)
    settings = config.settings_for(driver.settings_type, emulate, config.Target(backend=emulate), job)
    needs_image = any(not r.image for r in lowering.effective_roles(job) if r.name is not RoleName.REDUCTION_SERVERS)
    target = attrs.evolve(job, image=job.image or PLACEHOLDER_IMAGE) if needs_image else job
    target = _data_kept_local(target)
    try:
        return driver.compile(target, settings)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(job.source)) from None


def _vertex(job: DistributedJob, compiled: CompiledJob) -> dict[str, Any]:
    spec = compiled.request.get("jobSpec", {})
    pools = spec.get("workerPoolSpecs", [])
    reducers = 0
    if job.reduction_servers is not None and len(pools) > 2 and pools[2]:
        reducers = int(pools[2].get("replicaCount", 0))
    return {"reducers": reducers, "job_spec": spec}


def _ai_platform(job: DistributedJob, compiled: CompiledJob) -> dict[str, Any]:
    training = compiled.request.get("trainingInput", {})
    reducers = int(training.get("parameterServerCount", 0)) if job.reduction_servers is not None else 0
    return {"reducers": reducers, "use_chief": bool(training.get("useChiefInTfConfig", False)),
            "job_spec": training}


def _azure_ml(job: DistributedJob, compiled: CompiledJob) -> dict[str, Any]:
    distribution = compiled.request.get("distribution", {})
    return {"processes_per_node": int(distribution.get("process_count_per_instance", 1))}


FOLLOW: dict[str, Callable[[DistributedJob, CompiledJob], dict[str, Any]]] = {
    "ai_platform": _ai_platform,
    "azure_ml": _azure_ml,
    "vertex": _vertex,
}
"""Emulated platform -> what the emulation takes from its compiled request."""


def native(job: DistributedJob, emulate: str, use_chief: bool = False) -> Native:
    """The emulated platform's decisions for ``job`` (see the module docstring).

    Args:
        job: the job to run locally.
        emulate: the emulated platform (``none`` compiles nothing).
        use_chief: the local backend's own ``use_chief_in_tf_config`` setting (it adds to compile's).

    Raises:
        UnsupportedFeatureError: the emulated platform cannot run the job (compile's own error).
        ValidationError: the job is invalid for the emulated platform (compile's own error).
    """
    if emulate not in FOLLOW:
        return Native()
    if emulate not in registry.installed():
        reducers = lowering.replicas(job, RoleName.REDUCTION_SERVERS) if emulate != "azure_ml" else 0
        from_block = bool(job.backends.get("ai_platform", {}).get("use_chief_in_tf_config", False))
        note = Note(kind=NoteKind.HINT, field="emulate",
                    message=f"the {emulate} backend is not installed (pip install "
                            f"{registry.KNOWN_DISTRIBUTIONS[emulate]}), so the emulation uses omnidist's core "
                            f"rules: it does not check the job the way compile for {emulate} would")
        return Native(reducers=reducers, use_chief=use_chief or from_block, notes=(note,))
    compiled = _compiled(job, emulate)
    facts = FOLLOW[emulate](job, compiled)
    facts["use_chief"] = use_chief or facts.get("use_chief", False)
    notes = tuple(n for n in compiled.diagnostics if n.field in RUN_NOTE_FIELDS)
    return Native(request=compiled.request, notes=notes, **facts)

