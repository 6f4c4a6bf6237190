"""Environment variables omnidist's compilers add to each replica so the runtime is exact
where a platform is vague (standard library only: this runs inside training containers).

=============================  =============================================================
``OMNIDIST_JOB_NAME``           the portable job's name
``OMNIDIST_FRAMEWORK``          pytorch | tensorflow | horovod | deepspeed | custom
``OMNIDIST_PROCESSES_PER_NODE`` processes each training node runs (resolved ``auto``)
``OMNIDIST_ROLE``               this replica's role (primary, worker, parameter_server,
                                evaluator, reduction_server) where the platform gives each
                                role its own environment (Vertex pools, the local backend)
``OMNIDIST_POOL2_ROLE``         what Vertex's workerpool2 holds: parameter_server or
                                reduction_server (the platform does not say)
=============================  =============================================================

Backends add them per role; a user value of the same name wins. Importers drop them, since
they are derived from the job. Legacy AI Platform has no environment field, so it carries
none (its ``master``/``worker``/``ps`` names are already exact).
"""

JOB_NAME = "OMNIDIST_JOB_NAME"
FRAMEWORK = "OMNIDIST_FRAMEWORK"
PROCESSES_PER_NODE = "OMNIDIST_PROCESSES_PER_NODE"
ROLE = "OMNIDIST_ROLE"
POOL2_ROLE = "OMNIDIST_POOL2_ROLE"

ALL = (JOB_NAME, FRAMEWORK, PROCESSES_PER_NODE, ROLE, POOL2_ROLE)
PREFIX = "OMNIDIST_"


def strip(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the hint variables (for importers)."""
    return {k: v for k, v in env.items() if k not in ALL}
