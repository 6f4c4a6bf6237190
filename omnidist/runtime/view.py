"""The normalized view of a distributed job from inside one of its processes (SPEC §5).

Standard library only: this module runs inside training containers.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from omnidist.runtime.errors import RuntimeEnvError

ROLES = ("primary", "worker", "parameter_server", "evaluator", "reduction_server")
"""The runtime's role names (the singular of the job's role keys)."""

TRAINING_ROLES = ("primary", "worker")
"""Roles whose replicas are nodes of the training world (they have a ``node_rank``)."""



TASK_TYPES: dict[str, str] = {
    "evaluator": "evaluator",
    "parameter_server": "ps",
    "primary": "chief",
    "worker": "worker",
}
"""Runtime role -> TensorFlow task type (the primary is the ``chief``; reduction servers have none)."""


@dataclasses.dataclass(repr=False, frozen=True)
class RuntimeContext:
    """Where this process sits in the distributed job, the same on every platform.

    The first twelve fields are SPEC §5's keys; ``processes_per_node``, ``job_name``,
    ``framework`` and ``source`` are additions.

    Attributes:
        platform: the name of the platform module that read it (:mod:`omnidist.runtime.platforms`):
            a cloud training service's, ``kubernetes``, ``tpu`` (a TPU slice's hosts), ``mpi``,
            ``torchrun`` or ``none``; ``local`` for a ``TF_CONFIG`` no platform claims.
        role: ``primary``, ``worker``, ``parameter_server``, ``evaluator`` or ``reduction_server``.
        index: index of this replica within its role.
        node_rank: primary 0, worker ``i`` -> ``i + 1``; ``None`` for roles that do not train.
        num_nodes: primary + workers.
        rank: global process rank where a launcher set one, else the node rank.
        world_size: processes in the training world where a launcher said so, else ``num_nodes``.
        local_rank: rank within the node where a launcher set one, else 0 (``None`` off the world).
        master_addr: host where rank 0 listens (the primary's).
        master_port: port where rank 0 listens.
        trial: hyperparameter-tuning trial id, or ``None``.
        cluster: role -> list of ``host:port`` (only what the platform reveals).
        processes_per_node: processes each training node runs (launcher, platform or hint; else 1).
        job_name: the portable job's name when the compiler told the container (hint).
        framework: the job's framework when the compiler told the container (hint).
        source: the environment variable(s) the context was read from (``""`` for none).
        inputs: input name -> where it is inside the container (a path, a URI or a literal),
            from the compiler's ``OMNIDIST_INPUT_*`` hints (SPEC §7).
        outputs: output name -> where it goes, from ``OMNIDIST_OUTPUT_*``.
        model_dir: where to save the model: the platform's own model-folder variable (as a
            mounted path) or ``--job-dir`` argument, ``OMNIDIST_MODEL_DIR``, the output named
            ``model``, or a platform's uploaded ``./outputs``; ``None`` when nothing says.
    """

    platform: str = "none"
    role: str = "primary"
    index: int = 0
    node_rank: Optional[int] = 0
    num_nodes: int = 1
    rank: Optional[int] = 0
    world_size: int = 1
    local_rank: Optional[int] = 0
    master_addr: Optional[str] = "127.0.0.1"
    master_port: Optional[int] = 29500
    trial: Optional[str] = None
    cluster: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    processes_per_node: int = 1
    job_name: Optional[str] = None
    framework: Optional[str] = None
    source: str = ""
    # SPEC §7: the job's data as this container sees it (filled by omnidist.runtime.detect).
    inputs: dict[str, str] = dataclasses.field(default_factory=dict)
    outputs: dict[str, str] = dataclasses.field(default_factory=dict)
    model_dir: Optional[str] = None

    @property
    def trains(self) -> bool:
        """True when this replica is a node of the training world (primary or worker)."""
        return self.node_rank is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``omnidist env`` prints), SPEC keys first."""
        data = dataclasses.asdict(self)
        data["cluster"] = {role: list(hosts) for role, hosts in self.cluster.items()}
        return data

    def __repr__(self) -> str:
        where = f", master {self.master_addr}:{self.master_port}" if self.master_addr else ""
        rank = f"rank {self.rank}/{self.world_size}" if self.rank is not None else "not in the training world"
        return f"RuntimeContext({self.platform} {self.role} {self.index}: {rank}, nodes {self.num_nodes}{where})"

    def _repr_html_(self) -> str:
        """The context as a two-column table, then the cluster by role (notebooks)."""
        import html

        def rows(pairs: list[tuple[str, Any]]) -> str:
            return "".join(f"<tr><td style='text-align:left'>{html.escape(str(k))}</td>"
                           f"<td style='text-align:left'>{html.escape('—' if v is None else str(v))}</td></tr>"
                           for k, v in pairs)

        fields = [(k, v) for k, v in self.to_dict().items() if k != "cluster"]
        cluster = [(role, ", ".join(hosts)) for role, hosts in self.cluster.items()]
        return (f"<table><caption style='text-align:left'><b>runtime context ({html.escape(self.platform)})"
                f"</b></caption><tbody>{rows(fields)}</tbody></table>"
                + (f"<table><thead><tr><th>role</th><th>hosts</th></tr></thead><tbody>{rows(cluster)}</tbody></table>"
                   if cluster else ""))

    def torch_env(self) -> dict[str, str]:
        """The variables torch's ``env://`` initialization reads.

        Raises:
            RuntimeEnvError: this replica is not part of the training world (a parameter
                server, evaluator or reduction server), or the platform did not say where
                rank 0 listens.
        """
        if not self.trains or self.rank is None:
            raise RuntimeEnvError(self.source or "OMNIDIST_ROLE", f"this replica is a {self.role}; only the "
                                  "primary and the workers join the torch.distributed world")
        if not self.master_addr or self.master_port is None:
            raise RuntimeEnvError(self.source or "MASTER_ADDR", "the platform did not say where rank 0 listens")
        return {
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank or 0),
        }

    def tf_config(self) -> dict[str, Any]:
        """A TensorFlow ``TF_CONFIG`` for this replica (``json.dumps`` it into the variable).

        The primary is the ``chief``; empty roles are left out (TensorFlow >= 2.13 rejects an
        empty ``ps`` list); evaluators are not in the cluster, as TensorFlow expects.

        Raises:
            RuntimeEnvError: the platform does not reveal every node's address (e.g. a platform's
                PyTorch distribution without its host list), or this replica is a reduction server.
        """
        hosts = dict(self.cluster)
        if not hosts.get("primary") and self.num_nodes == 1 and self.master_addr and self.master_port:
            hosts["primary"] = [f"{self.master_addr}:{self.master_port}"]
        known = len(hosts.get("primary", [])) + len(hosts.get("worker", []))
        if known < self.num_nodes:
            raise RuntimeEnvError(self.source or "TF_CONFIG", f"the platform names {known} of {self.num_nodes} "
                                  "training nodes' addresses, so no TF_CONFIG can be written; TensorFlow needs "
                                  "every node's host:port")
        if self.role not in TASK_TYPES:
            raise RuntimeEnvError(self.source or "OMNIDIST_ROLE", f"a {self.role} has no TensorFlow task type")
        cluster = {TASK_TYPES[role]: list(hosts[role]) for role in ("primary", "worker", "parameter_server")
                   if hosts.get(role)}
        task: dict[str, Any] = {"type": TASK_TYPES[self.role], "index": self.index}
        if self.trial is not None:
            task["trial"] = self.trial
        return {"cluster": cluster, "task": task}
