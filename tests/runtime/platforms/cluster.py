"""Emulated clusters for the platform tests, and the round trip: what a platform's ``emulate``
gives each process, ``omnidist.runtime.view`` reads back as that process."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Optional, Union

from hypothesis import strategies as st

from omnidist.runtime import context
from omnidist.runtime.platforms import Decided, JobFacts, Slot

ORDER = ("primary", "worker", "parameter_server", "evaluator", "reduction_server")
"""Roles in pool order, as the local backend places them."""

FIRST_PORT = 40000


def slots(shape: Mapping[str, int], processes: int = 1) -> list[Slot]:
    """One slot per replica of ``shape`` (role -> replicas), on 127.0.0.1 with consecutive ports;
    reduction servers listed but not run, ``processes`` per training node."""
    placed: list[Slot] = []
    for role in ORDER:
        for index in range(shape.get(role, 0)):
            placed.append(Slot(role=role, index=index, address=f"127.0.0.1:{FIRST_PORT + len(placed)}",
                               runs=role != "reduction_server",
                               processes=processes if role in ("primary", "worker") else 1))
    return placed


def job(shape: Mapping[str, int], framework: str = "pytorch", **settings: object) -> JobFacts:
    return JobFacts(name="demo", framework=framework, replicas=dict(shape),
                    settings=settings)


@st.composite
def shapes(draw: st.DrawFn, roles: tuple[str, ...] = ORDER) -> dict[str, int]:
    """A cluster: one primary, some workers, and (where ``roles`` allow) parameter servers *or*
    reduction servers, and evaluators."""
    shape = {"primary": 1, "worker": draw(st.integers(0, 3))}
    if "evaluator" in roles:
        shape["evaluator"] = draw(st.integers(0, 2))
    shared = [r for r in ("parameter_server", "reduction_server") if r in roles]
    if shared:
        shape[draw(st.sampled_from(shared))] = draw(st.integers(0, 2))
    return {r: n for r, n in shape.items() if n}


def round_trip(module: ModuleType, shape: Mapping[str, int], decided: Decided, facts: Optional[JobFacts] = None,
               hints: Union[Mapping[str, str], Callable[[Slot], Mapping[str, str]], None] = None) -> list:
    """Emulate ``shape`` with ``module`` and check what the runtime reads back, process by process:
    the platform, role and index of the slot, and its node rank, rank and world. ``hints``: the
    ``OMNIDIST_*`` variables every process gets, or a function giving a slot's.

    Returns:
        The contexts read, in process order.
    """
    placed = slots(shape, decided.processes_per_node)
    envs = module.emulate(facts or job(shape), placed, decided)
    processes = [(slot, local) for slot in placed if slot.runs for local in range(slot.processes)]
    assert len(envs) == len(processes)
    nodes = 1 + shape.get("worker", 0)
    per_node = decided.processes_per_node
    found = []
    for (slot, local), env in zip(processes, envs):
        assert module.detect(env), env
        extra = hints(slot) if callable(hints) else (hints or {})
        ctx = context({**extra, **env}, argv=[])
        assert (ctx.platform, ctx.role, ctx.index) == (module.NAME, slot.role, slot.index), env
        if slot.role in ("primary", "worker"):
            node = 0 if slot.role == "primary" else slot.index + 1
            assert (ctx.node_rank, ctx.num_nodes) == (node, nodes)
            assert (ctx.rank, ctx.world_size, ctx.local_rank) == (node * per_node + local, nodes * per_node, local)
            assert (ctx.master_addr, ctx.master_port) == ("127.0.0.1", FIRST_PORT)
        else:
            assert ctx.node_rank is None and ctx.rank is None
        found.append(ctx)
    return found
