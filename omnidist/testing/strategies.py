"""Hypothesis strategies for portable jobs (needs ``hypothesis``, a test dependency).

Backends use :func:`jobs` with their own constraints for round-trip property tests.
"""

from __future__ import annotations

from typing import Optional

from hypothesis import strategies as st

from omnidist.model.accelerators import GPUS, TPUS
from omnidist.model.job import DistributedJob, Framework, Interconnect
from omnidist.model.recovery import RESTARTABLE_ORDER, Recovery
from omnidist.model.roles import Accelerator, Role
from omnidist.model.tuning import Algorithm, Goal, Metric, Parameter, ParameterType, Scale, Tuning

names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
env_names = st.from_regex(r"[A-Z_][A-Z0-9_]{0,10}", fullmatch=True).filter(lambda n: not n.startswith("OMNIDIST_"))
safe_text = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="'\"\\"), min_size=1, max_size=12
)
argv = st.lists(safe_text, min_size=1, max_size=4).map(tuple)
envs = st.dictionaries(env_names, safe_text, max_size=3)
images = st.from_regex(r"[a-z]{2,8}\.example/[a-z]{2,8}:[0-9]\.[0-9]", fullmatch=True)


def accelerators_of(types=tuple(GPUS), counts=(1, 2, 4, 8)) -> st.SearchStrategy[Accelerator]:
    """Accelerators drawn from the given portable types and counts (default: the GPUs; TPU slices
    come only in their own sizes, see :func:`tpu_slices`)."""
    return st.builds(
        lambda t, c: Accelerator(type=t, count=c), st.sampled_from(list(types)), st.sampled_from(list(counts))
    )


def tpu_slices(types=tuple(TPUS)) -> st.SearchStrategy[Accelerator]:
    """TPU slices of the sizes each TPU comes in (SPEC §13), without a topology (the default one)."""
    return st.sampled_from(list(types)).flatmap(
        lambda t: st.sampled_from(TPUS[t].sizes[:6]).map(lambda c: Accelerator(type=t, count=c)))


def roles(replicas: Optional[st.SearchStrategy] = None, accelerator: Optional[st.SearchStrategy] = None,
          hardware: bool = True) -> st.SearchStrategy[Role]:
    """Roles with optional hardware and program overrides (``replicas`` default: 0 to 8)."""
    replicas = replicas if replicas is not None else st.integers(0, 8)
    acc = accelerator if accelerator is not None else st.none() | accelerators_of()
    numbers = st.none() | st.integers(1, 96) if hardware else st.none()
    return st.builds(
        Role,
        replicas=replicas,
        accelerator=acc if hardware else st.none(),
        cpus=numbers,
        memory_gb=numbers,
        disk_gb=st.none() | st.integers(10, 2000) if hardware else st.none(),
        image=st.none() | images,
        command=st.none() | argv,
        args=st.none() | argv,
        env=envs,
    )


recoveries = st.builds(
    Recovery, max_restarts=st.integers(0, 100),
    on=st.lists(st.sampled_from([e.value for e in RESTARTABLE_ORDER]), min_size=1, max_size=4, unique=True),
    move=st.booleans())
"""Valid recovery blocks (SPEC §15)."""


def jobs(
    frameworks=tuple(Framework),
    primary: Optional[st.SearchStrategy[Role]] = None,
    workers: Optional[st.SearchStrategy] = None,
    parameter_servers: Optional[st.SearchStrategy] = None,
    evaluators: Optional[st.SearchStrategy] = None,
    reduction_servers: Optional[st.SearchStrategy] = None,
    backends: st.SearchStrategy = st.just({}),
    tuning: st.SearchStrategy = st.none(),
) -> st.SearchStrategy[DistributedJob]:
    """Valid portable jobs; every part can be constrained by passing a strategy."""
    return st.builds(
        DistributedJob,
        name=names,
        framework=st.sampled_from(list(frameworks)),
        image=st.none() | images,
        command=st.just(()) | argv,
        args=st.just(()) | argv,
        env=envs,
        primary=primary if primary is not None else roles(replicas=st.just(1)),
        workers=workers if workers is not None else st.none() | roles(),
        parameter_servers=parameter_servers if parameter_servers is not None else st.none() | roles(),
        evaluators=evaluators if evaluators is not None else st.none() | roles(),
        reduction_servers=reduction_servers if reduction_servers is not None
        else st.none() | roles(replicas=st.integers(0, 30) | st.just("auto"), hardware=False),
        processes_per_node=st.just("auto") | st.integers(1, 8),
        interconnect=st.sampled_from(list(Interconnect)),
        spot=st.booleans(),
        timeout=st.none() | st.integers(1, 10**7),
        recovery=st.none() | recoveries,
        labels=st.dictionaries(names, names, max_size=3),
        backends=backends,
        tuning=tuning,
    )


# --- tuning ---------------------------------------------------------------------------------------

parameter_names = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)
# Bounds with few significant digits, as people write them: they survive every native format
# (JSON doubles, Azure's natural-log bounds) exactly.
_positive = st.integers(1, 10**6).map(lambda i: i / 1000)
_bounds = st.integers(-10**6, 10**6).map(lambda i: i / 1000)


CARRIED_SCALES = (Scale.LINEAR, Scale.LOG)
"""The scales every tuning backend carries exactly (``reverse_log`` is Google's and SageMaker's)."""


@st.composite
def _double(draw, scales=CARRIED_SCALES) -> Parameter:
    scale = draw(st.sampled_from(list(scales)))
    logs = scale is not Scale.LINEAR
    low = draw(_positive if logs else _bounds)
    high = draw(_positive.filter(lambda h: h > low) if logs else _bounds.filter(lambda h: h > low))
    return Parameter(type="double", min=low, max=high, scale=scale)


@st.composite
def _integer(draw, scales=CARRIED_SCALES, lowest: int = -100, widest: int = 200) -> Parameter:
    scale = draw(st.sampled_from(list(scales)))
    low = draw(st.integers(max(lowest, 1) if scale is not Scale.LINEAR else lowest, 100))
    return Parameter(type="integer", min=low, max=draw(st.integers(low, low + widest)), scale=scale)


def parameters(types=tuple(ParameterType), scales=CARRIED_SCALES, max_integer_span: int = 200,
               lowest_integer: int = -100) -> st.SearchStrategy[Parameter]:
    """Valid tuned parameters of the given types and range scales."""
    made = {
        ParameterType.DOUBLE: _double(scales),
        ParameterType.INTEGER: _integer(scales, lowest_integer, max_integer_span),
        ParameterType.DISCRETE: st.lists(_bounds, min_size=1, max_size=5, unique=True).map(
            lambda v: Parameter(type="discrete", values=v)
        ),
        ParameterType.CATEGORICAL: st.lists(
            st.from_regex(r"[a-z][a-z0-9_.-]{0,8}", fullmatch=True), min_size=1, max_size=4, unique=True
        ).map(lambda v: Parameter(type="categorical", values=v)),
    }
    return st.one_of([made[ParameterType(t)] for t in types])


def tunings(
    parameter: st.SearchStrategy[Parameter] | None = None,
    algorithms=tuple(Algorithm),
    early_stopping: st.SearchStrategy[bool] = st.booleans(),
    max_parameters: int = 4,
    max_failed_trials: st.SearchStrategy[int] = st.integers(0, 5),
) -> st.SearchStrategy[Tuning]:
    """Valid tuning blocks; constrain parameters and algorithms to what a backend can express."""

    @st.composite
    def build(draw) -> Tuning:
        max_trials = draw(st.integers(1, 50))
        return Tuning(
            metric=Metric(name=draw(st.from_regex(r"[a-z][a-z0-9_/]{0,12}", fullmatch=True)),
                          goal=draw(st.sampled_from(list(Goal)))),
            parameters=draw(st.dictionaries(parameter_names, parameter if parameter is not None else parameters(),
                                            min_size=1, max_size=max_parameters)),
            algorithm=draw(st.sampled_from(list(algorithms))),
            max_trials=max_trials,
            parallel_trials=draw(st.integers(1, max_trials)),
            max_failed_trials=draw(max_failed_trials),
            early_stopping=draw(early_stopping),
        )

    return build()
