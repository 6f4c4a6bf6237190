"""Environment variables omnidist's compilers add to each replica so the runtime is exact
where a platform is vague (standard library only: this runs inside training containers).

=============================  =============================================================
``OMNIDIST_JOB_NAME``           the portable job's name
``OMNIDIST_FRAMEWORK``          pytorch | tensorflow | horovod | deepspeed | custom | jax
``OMNIDIST_PROCESSES_PER_NODE`` processes each training node runs (resolved ``auto``)
``OMNIDIST_ROLE``               this replica's role (primary, worker, parameter_server,
                                evaluator, reduction_server): compilers no longer add it
                                (every platform's own variables say the role); one that is set
                                must agree with the platform
``OMNIDIST_POOL2_ROLE``         what the third positional pool holds when it is reduction_server
                                (the platform does not say; without it, parameter_server)
``OMNIDIST_INPUT_<NAME>``       where input NAME is inside the container (a path, a URI or a
                                literal), for ``context().inputs``
``OMNIDIST_OUTPUT_<NAME>``      where output NAME goes, for ``context().outputs``
``OMNIDIST_MODEL_DIR``          where to save the model, on platforms that set no variable
                                of their own for it (the local backend)
``OMNIDIST_GPUS_SHARED``        ``1`` when the local backend gave its training replicas this
                                machine's GPUs to share (more processes than GPUs):
                                ``init_torch`` then uses gloo on CUDA, never nccl
=============================  =============================================================

Where the platform substitutes ``${{inputs.NAME}}`` into the command, the input and output
values exist only once it has, so the compiler exports ``OMNIDIST_INPUT_*`` /
``OMNIDIST_OUTPUT_*`` at the start of the command instead of in ``environment_variables``.

Compilers add only what the runtime or an importer cannot read elsewhere
(:func:`omnidist.compiler.lowering.runtime_hints`), the same in every role's environment; a user
value of the same name wins. Importers read them back and drop them, since they are derived from
the job. A request with no environment field carries
none (its ``master``/``worker``/``ps`` names are already exact).
"""

JOB_NAME = "OMNIDIST_JOB_NAME"
FRAMEWORK = "OMNIDIST_FRAMEWORK"
PROCESSES_PER_NODE = "OMNIDIST_PROCESSES_PER_NODE"
ROLE = "OMNIDIST_ROLE"
POOL2_ROLE = "OMNIDIST_POOL2_ROLE"

INPUT_PREFIX = "OMNIDIST_INPUT_"
OUTPUT_PREFIX = "OMNIDIST_OUTPUT_"
MODEL_DIR = "OMNIDIST_MODEL_DIR"
GPUS_SHARED = "OMNIDIST_GPUS_SHARED"

ALL = (JOB_NAME, FRAMEWORK, PROCESSES_PER_NODE, ROLE, POOL2_ROLE, MODEL_DIR, GPUS_SHARED)
PREFIX = "OMNIDIST_"
DATA_PREFIXES = (INPUT_PREFIX, OUTPUT_PREFIX)
"""Prefixes of the per-name data hints (one variable per input or output)."""


def is_hint(name: str) -> bool:
    """True for a variable omnidist's compilers add (dropped again by importers)."""
    return name in ALL or name.startswith(DATA_PREFIXES)


def strip(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the hint variables (for importers)."""
    return {k: v for k, v in env.items() if not is_hint(k)}
