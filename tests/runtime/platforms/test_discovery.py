"""A platform is one file in omnidist/runtime/platforms/: dropped in, it is found, put in the
detection order by its ORDER, read by the runtime and emulated by the local backend, with no
edit elsewhere."""

from __future__ import annotations

import json
import sys
import textwrap
import types
from pathlib import Path

import pytest

from omnidist.runtime import context, platforms

KUBE = textwrap.dedent('''
    """A Kubernetes PyTorchJob: the operator sets PET_NNODES, PET_NODE_RANK and the master's address."""

    from omnidist.runtime.view import RuntimeContext
    from omnidist.runtime.detect import integer
    from omnidist.runtime.platforms import hosts

    NAME = "kube"
    ORDER = 35
    VARIABLES = frozenset({"PET_NNODES", "PET_NODE_RANK"})
    PREFIXES = ("PET_",)
    HINTS_PER_ROLE = True
    ENV_FIELD = True


    def detect(env):
        return "PET_NNODES" in env


    def parse(env):
        nodes, node = integer(env, "PET_NNODES", minimum=1), integer(env, "PET_NODE_RANK")
        addr, port = env["MASTER_ADDR"], integer(env, "MASTER_PORT", minimum=1)
        return RuntimeContext(platform=NAME, role="primary" if node == 0 else "worker", index=max(node - 1, 0),
                              node_rank=node, num_nodes=nodes, rank=node, world_size=nodes, master_addr=addr,
                              master_port=port, cluster={"primary": [f"{addr}:{port}"]}, source="PET_NNODES")


    def roles(decided):
        return frozenset({"primary", "worker"})


    def emulate(job, slots, decided):
        nodes = hosts(slots, "primary", "worker")
        addr, _, port = nodes[0].rpartition(":")
        return [{"PET_NNODES": str(len(nodes)), "PET_NODE_RANK": str(rank), "MASTER_ADDR": addr, "MASTER_PORT": port}
                for rank, _ in enumerate(s for s in slots if s.runs)]
''')


@pytest.fixture
def drop_in(tmp_path, monkeypatch):
    """Put a module file in the platforms package (a second folder on its ``__path__``)."""
    dropped = []

    def drop(name: str, source: str) -> None:
        (tmp_path / f"{name}.py").write_text(source)
        dropped.append(name)
        monkeypatch.setattr(platforms, "__path__", [*platforms.__path__, str(tmp_path)])
        platforms.modules.cache_clear()

    yield drop
    platforms.modules.cache_clear()
    for name in dropped:
        sys.modules.pop(f"{platforms.__name__}.{name}", None)
        if hasattr(platforms, name):
            delattr(platforms, name)


BUILT_IN = [("vertex", 10), ("ai_platform", 20), ("azure_ml", 30), ("kubernetes", 35), ("tf_config", 40),
            ("mpi", 45), ("torchrun", 50)]
"""Platforms whose place in the order others rely on (a new platform may sit anywhere between them)."""


def _files() -> set[str]:
    folder = Path(platforms.__file__).parent
    return {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}


def test_the_platforms_found_and_their_order():
    found = [(m.NAME, m.ORDER) for m in platforms.modules()]
    built_in = {m.NAME for m in platforms.modules() if m.__name__.startswith(f"{platforms.__name__}.")}
    assert built_in == _files(), "every module of the package is a platform (installed plugins may add others)"
    assert [p for p in found if p in BUILT_IN] == BUILT_IN and found[-1][0] == "none"
    assert [order for _, order in found[:-1]] == sorted(order for _, order in found[:-1])
    emulated = {m.NAME for m in platforms.modules() if hasattr(m, "emulate")}
    assert platforms.emulations() == tuple(sorted(emulated)) and {"vertex", "azure_ml", "none"} <= emulated
    assert platforms.DEFAULT_EMULATION in platforms.emulations()


def test_a_dropped_in_platform_is_detected_in_its_order_and_emulated(drop_in):
    drop_in("kube", KUBE)
    names = [m.NAME for m in platforms.modules()]
    assert names.index("azure_ml") < names.index("kube") < names.index("kubernetes") < names.index("tf_config")
    assert "kube" in platforms.emulations()
    env = {"PET_NNODES": "3", "PET_NODE_RANK": "2", "MASTER_ADDR": "m", "MASTER_PORT": "23456",
           "TF_CONFIG": json.dumps({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief"}})}
    ctx = context(env, argv=[])  # before the bare TF_CONFIG (40), after Azure ML (30)
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank) == ("kube", "worker", 1, 2)
    assert context({**env, "AZUREML_RUN_ID": "r"}, argv=[]).platform == "azure_ml"
    assert "PET_NNODES" in platforms.variables()[0]

    import omnidist
    from omnidist.model.job import DistributedJob
    from omnidist.model.roles import Role

    job = DistributedJob(name="demo", framework="pytorch", command="python t.py", workers=Role(replicas=2))
    replicas = omnidist.compile(job, backend="local", settings={"emulate": "kube"}).request["replicas"]
    found = [context(r["env"], argv=[]) for r in replicas]
    assert [(c.platform, c.role, c.index, c.node_rank) for c in found] == [
        ("kube", "primary", 0, 0), ("kube", "worker", 0, 1), ("kube", "worker", 1, 2)]
    assert {r["env"]["OMNIDIST_JOB_NAME"] for r in replicas} == {"demo"}  # HINTS_PER_ROLE is not None
    assert not [r for r in replicas if "OMNIDIST_ROLE" in r["env"]]  # the platform's variables say the role

    from omnidist.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError) as info:  # roles(decided) has no place for evaluators
        omnidist.compile(DistributedJob(name="demo", framework="pytorch", command="python t.py",
                                        evaluators=Role(replicas=1)), backend="local", settings={"emulate": "kube"})
    assert (info.value.subject, info.value.backend, info.value.exit_code) == ("evaluators", "kube", 3)


def test_a_module_without_the_contract_is_named(drop_in):
    drop_in("half", 'NAME = "half"\n\ndef detect(env):\n    return False\n')
    with pytest.raises(platforms.PlatformModuleError, match="half.*ORDER, VARIABLES, PREFIXES, parse"):
        platforms.modules()


def test_a_platform_is_named_after_its_module(drop_in):
    drop_in("kubeflow", KUBE)
    with pytest.raises(platforms.PlatformModuleError, match="NAME = 'kube'.*'kubeflow'"):
        platforms.modules()


TUNED = KUBE + textwrap.dedent('''

    METRICS = "mlflow"


    def trial_id(env):
        return env.get("KUBE_TRIAL")


    def emulate_trial(env, trial, params):
        return {**env, "KUBE_TRIAL": trial, **{f"KUBE_{k}": str(v) for k, v in params.items()}}
''')


def test_a_platforms_tuning_hooks_are_its_modules_own(drop_in, monkeypatch):
    """Where a trial reports, which trial a process is and what a local trial gets all come from
    the platform module: a new platform tunes without an edit to report() or local tuning."""
    from omnidist.local.tuning import trial_env
    from omnidist.runtime.reporting import report

    drop_in("kube", TUNED)
    env = {"PET_NNODES": "1", "PET_NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    given = trial_env(env, "kube", "7", {"lr": 0.1}, ("local.jsonl", "hypertune.txt"))
    assert given["KUBE_TRIAL"] == "7" and given["KUBE_lr"] == "0.1" and given["OMNIDIST_TRIAL"] == "7"
    assert context({**env, "KUBE_TRIAL": "3"}, argv=[]).trial == "3"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("OMNIDIST_METRICS_FILE", "CLOUD_ML_HP_METRIC_FILE", "CLOUD_ML_TRIAL_ID", "CLUSTER_SPEC", "TF_CONFIG"):
        monkeypatch.delenv(key, raising=False)
    logged = []  # a stand-in for the mlflow package: what reaches it is what the tuner would read
    monkeypatch.setitem(sys.modules, "mlflow", types.SimpleNamespace(
        log_metric=lambda name, value, step=None: logged.append((name, value, step))))
    assert report(accuracy=0.5, step=3) == "mlflow"  # its module's METRICS, not a platform name in report()
    assert logged == [("accuracy", 0.5, 3)]
