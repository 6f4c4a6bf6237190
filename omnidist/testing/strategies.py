"""Hypothesis strategies for portable jobs (needs ``hypothesis``, a test dependency).

Backends use :func:`jobs` with their own constraints for round-trip property tests.
"""

from __future__ import annotations

from typing import Optional

from hypothesis import strategies as st

from omnidist.accelerators import BY_NAME
from omnidist.job import Accelerator, DistributedJob, Framework, Interconnect, Role

names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
env_names = st.from_regex(r"[A-Z_][A-Z0-9_]{0,10}", fullmatch=True).filter(lambda n: not n.startswith("OMNIDIST_"))
safe_text = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="'\"\\"), min_size=1, max_size=12)
argv = st.lists(safe_text, min_size=1, max_size=4).map(tuple)
envs = st.dictionaries(env_names, safe_text, max_size=3)
images = st.from_regex(r"[a-z]{2,8}\.example/[a-z]{2,8}:[0-9]\.[0-9]", fullmatch=True)


def accelerators_of(types=tuple(BY_NAME), counts=(1, 2, 4, 8)) -> st.SearchStrategy[Accelerator]:
    """Accelerators drawn from the given portable types and counts."""
    return st.builds(lambda t, c: Accelerator(type=t, count=c), st.sampled_from(list(types)), st.sampled_from(list(counts)))


def roles(replicas=st.integers(0, 8), accelerator: Optional[st.SearchStrategy] = None, hardware: bool = True) -> st.SearchStrategy[Role]:
    """Roles with optional hardware and program overrides."""
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


def jobs(
    frameworks=tuple(Framework),
    primary: Optional[st.SearchStrategy[Role]] = None,
    workers: Optional[st.SearchStrategy] = None,
    parameter_servers: Optional[st.SearchStrategy] = None,
    evaluators: Optional[st.SearchStrategy] = None,
    reduction_servers: Optional[st.SearchStrategy] = None,
    backends: st.SearchStrategy = st.just({}),
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
        labels=st.dictionaries(names, names, max_size=3),
        backends=backends,
    )
