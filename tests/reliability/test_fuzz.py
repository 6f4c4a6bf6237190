"""Fuzzing: bad input of every kind ends in an OmnidistError, never in anything else.

Inputs start valid (hypothesis jobs, real compiled requests, real emulated environments) and
are then mutated — keys deleted, renamed or added, values swapped for values of other types —
so most examples get past the first check and reach the deep code.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist import errors
from omnidist.backend import registry
from omnidist.model import serde
from omnidist.model.job import job_from_dict, job_to_dict
from omnidist.runtime import platforms
from omnidist.runtime.launch import plan_launch
from omnidist.runtime.tf_setup import tf_config_fix
from omnidist.testing import strategies
from omnidist.testing.cli import run_cli
from omnidist.testing.harness import Harness, required_settings, suite_backends, suite_harness

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = tuple(registry.installed())
FUZZED = suite_backends("fuzz")
HARNESSES = {name: found for name, found in FUZZED.items() if isinstance(found, Harness)}
CLOUD_BACKENDS = tuple(sorted(FUZZED))
EMULATIONS = platforms.emulations()
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])

TRICKY = ("", " ", "auto", "-1", "0", "1e309", "NaN", "V100:8", "H100:0", "T4:x", ":", "24h", "-5m", "pytorch",
          "NVIDIA_TESLA_V100", "n1-standard-4", "Standard_ND40rs_v2", "workerpool0", "master", "K=V", "a" * 300,
          "\x00", "null", "[]", "{}", "${{inputs.x}}", "host:notaport", "127.0.0.1:99999", "é")
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(TRICKY),
    st.lists(st.one_of(st.none(), st.integers(-5, 5), st.sampled_from(TRICKY)), max_size=3),
    st.dictionaries(st.sampled_from(TRICKY) | st.text(max_size=6), st.none() | st.integers(-5, 5) | st.text(max_size=6),
                    max_size=3),
)
"""Values of every JSON type (and some that are not JSON at all, like NaN), mostly wrong ones."""


def locations(value: Any, at: tuple = ()) -> Iterator[tuple]:
    """The path of every value inside nested dicts and lists (the root is ``()``)."""
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from locations(item, at + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from locations(item, at + (i,))


def _at(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy) -> Any:
    """A value from ``base`` with one to three mutations (mostly one) applied at drawn places."""
    doc = copy.deepcopy(draw(base))
    for _ in range(draw(st.sampled_from((1, 1, 1, 2, 3)))):  # mostly one: most examples then parse
        path = draw(st.sampled_from(list(locations(doc))))
        op = draw(st.sampled_from(("replace", "replace", "delete", "add", "rename", "wrap")))
        if not path:
            doc = draw(JUNK) if op == "replace" else doc
            continue
        parent, key = _at(doc, path[:-1]), path[-1]
        if op == "replace":
            parent[key] = draw(JUNK)
        elif op == "wrap":
            parent[key] = draw(st.sampled_from(([parent[key]], {"value": parent[key]}, str(parent[key]))))
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=8) | st.sampled_from(TRICKY))] = draw(JUNK)
        elif op == "rename" and isinstance(parent, dict) and isinstance(key, str):
            parent[key[:-1] + draw(st.sampled_from("sx_"))] = parent.pop(key)
    return doc


# --- job documents --------------------------------------------------------------------------------

SETTINGS_BLOCKS = st.fixed_dictionaries({}, optional={
    **{name: st.just(dict(harness.sample_settings)) for name, harness in HARNESSES.items()},
    "local": st.sampled_from(EMULATIONS).map(lambda emulate: {"emulate": emulate, "grace_period": 1.0}),
})
JOB_DOCUMENTS = strategies.jobs(backends=SETTINGS_BLOCKS).map(job_to_dict)


@FUZZ
@given(doc=mutated(JOB_DOCUMENTS))
def test_mutated_job_documents_fail_only_with_omnidist_errors(isolated, doc):
    try:
        job = job_from_dict(doc, source="fuzz.yaml")
    except errors.OmnidistError:
        return
    for backend in BACKENDS:
        try:
            compiled = omnidist.compile(job, backend=backend)
        except errors.OmnidistError:
            continue
        compiled.render("yaml")  # what was compiled also prints


def test_valid_documents_round_trip_before_mutation(isolated):
    """The mutations start from documents the parser accepts (else the fuzz tests nothing deep)."""
    @settings(max_examples=30, deadline=None)
    @given(job=strategies.jobs(backends=SETTINGS_BLOCKS))
    def check(job):
        assert job_from_dict(job_to_dict(job)) == job

    check()


# --- native specs ---------------------------------------------------------------------------------

SEED_JOBS: tuple[dict[str, Any], ...] = (
    serde.parse_yaml((ROOT / "examples/job.yaml").read_text()),
    serde.parse_yaml((ROOT / "examples/ddp/job.yaml").read_text()),
    {"name": "tf-ps", "framework": "tensorflow", "image": "gcr.io/p/tf:2", "command": ["python", "t.py"],
     "primary": {"cpus": 8}, "workers": {"replicas": 3, "accelerator": "T4:1"},
     "parameter_servers": {"replicas": 2}, "evaluators": {"replicas": 1}, "env": {"A": "1"}},
    {"name": "hvd", "framework": "horovod", "image": "gcr.io/p/hvd:1", "command": ["python", "h.py"],
     "primary": {"accelerator": "V100:4"}, "workers": {"replicas": 1}, "timeout": "2h", "spot": True},
    {"name": "reduce", "framework": "pytorch", "image": "gcr.io/p/pt:1", "command": ["python", "r.py"],
     "primary": {"accelerator": "A100:8"}, "workers": {"replicas": 3}, "reduction_servers": {"replicas": "auto"}},
    {"name": "cpu-procs", "framework": "pytorch", "image": "registry.example/t:1", "command": ["python", "c.py"],
     "args": ["--steps", "5"], "primary": {"cpus": 4, "memory_gb": 16}, "workers": {"replicas": 1},
     "processes_per_node": 2, "labels": {"team": "x"}, "env": {"B": "2"}},  # each backend's way to start 2
)
"""Jobs whose compiled requests seed the importer fuzzing (a backend skips the ones it cannot express)."""


@functools.cache
def native_seeds(backend: str) -> tuple[dict[str, Any], ...]:
    """Real requests compiled for ``backend`` from :data:`SEED_JOBS`."""
    seeds = []
    for data in SEED_JOBS:
        try:
            compiled = omnidist.compile(job_from_dict(data), backend=backend, settings=required_settings(backend))
        except errors.UnsupportedFeatureError:
            continue
        seeds.append(json.loads(serde.dump_json(compiled.request)))
    assert len(seeds) >= 3, f"too few seed requests for {backend}"
    return tuple(seeds)


@pytest.mark.parametrize("backend", CLOUD_BACKENDS)
def test_mutated_native_specs_fail_only_with_omnidist_errors(isolated, backend):
    suite_harness("fuzz", backend)
    for seed in native_seeds(backend):  # unmutated, every seed imports
        omnidist.import_native(seed, backend=backend)

    driver = registry.get(backend)
    spec_file = isolated / "native.json"

    @FUZZ
    @given(doc=mutated(st.sampled_from(native_seeds(backend))), detect=st.booleans())
    def check(doc, detect):
        try:  # the importer's own contract: any value in, an OmnidistError out
            driver.import_native(doc)
        except errors.OmnidistError:
            pass
        if not isinstance(doc, dict):  # through the API, a spec that is not a mapping comes from a file
            spec_file.write_text(json.dumps(doc))
        try:
            omnidist.import_native(doc if isinstance(doc, dict) else spec_file, backend=None if detect else backend)
        except errors.OmnidistError:
            pass

    check()


# --- runtime environments -------------------------------------------------------------------------

RUNTIME_VARIABLES = (
    "AZUREML_RUN_ID", "AZ_BATCHAI_MPI_MASTER_NODE", "AZ_BATCH_HOST_LIST", "AZ_BATCH_MASTER_NODE", "CLUSTER_SPEC",
    "GROUP_RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK",
    "OMNIDIST_FRAMEWORK", "OMNIDIST_JOB_NAME", "OMNIDIST_POOL2_ROLE", "OMNIDIST_PROCESSES_PER_NODE", "OMNIDIST_ROLE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "RANK", "TF_CONFIG", "TORCHELASTIC_RUN_ID", "WORLD_SIZE",
)
"""Variables the runtime reads, which the mutations may also add."""

TORCHRUN_ENV = {"TORCHELASTIC_RUN_ID": "r1", "GROUP_RANK": "1", "RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8",
                "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "10.0.0.2", "MASTER_PORT": "29500"}


@functools.cache
def runtime_seeds() -> tuple[dict[str, str], ...]:
    """Each replica's environment as the local backend emulates every platform, plus torchrun's."""
    envs = [TORCHRUN_ENV]
    for data in SEED_JOBS[1:4]:
        for platform in EMULATIONS:
            try:
                compiled = omnidist.compile(job_from_dict(data), backend="local",
                                            settings={"emulate": platform})
            except errors.UnsupportedFeatureError:
                continue
            envs += [dict(r["env"]) for r in compiled.request["replicas"]]  # all of it: what a platform reads varies
    return tuple(envs)


@st.composite
def environments(draw: st.DrawFn) -> dict[str, str]:
    """A real replica environment with one to three variables broken, dropped or added."""
    env = dict(draw(st.sampled_from(runtime_seeds())))
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(sorted(env) + list(RUNTIME_VARIABLES)))
        value = env.get(name)
        try:
            parsed = json.loads(value) if value and value[:1] in "{[" else None
        except ValueError:  # an earlier mutation already broke it
            parsed = None
        op = draw(st.sampled_from(("junk", "json", "delete")))
        if op == "delete":
            env.pop(name, None)
        elif op == "json" and parsed is not None:
            env[name] = json.dumps(draw(mutated(st.just(parsed))))
        else:
            env[name] = draw(st.sampled_from(TRICKY) | st.text(max_size=10) | st.integers(-2**40, 2**40).map(str))
    return env


def _spec(name: str, cluster: dict, task: dict, **extra: Any) -> dict[str, str]:
    return {name: json.dumps({"cluster": cluster, "task": task, **extra})}


FOUND_ENVIRONMENTS = (
    # task.type of a JSON type that cannot be a dict key (a list, an object): TypeError once
    _spec("CLUSTER_SPEC", {"workerpool0": ["127.0.0.1:1"]}, {"type": ["workerpool0"], "index": 0}),
    _spec("CLUSTER_SPEC", {"master": ["127.0.0.1:1"]}, {"type": {"value": "master"}, "index": 0}),
    _spec("TF_CONFIG", {"worker": ["127.0.0.1:1"]}, {"type": ["worker"], "index": 0}),
    {"AZUREML_RUN_ID": "r", **_spec("TF_CONFIG", {"worker": ["127.0.0.1:1"], "ps": []}, {"type": {}, "index": 0})},
    # other fields of the wrong JSON type
    _spec("TF_CONFIG", {"worker": ["127.0.0.1:1"]}, {"type": "worker", "index": 0, "trial": [1]}),
    _spec("TF_CONFIG", {"chief": ["127.0.0.1:1"]}, {"type": "chief", "index": 0}, environment=["cloud"]),
    _spec("CLUSTER_SPEC", {"workerpool0": ["127.0.0.1:1"]}, {"type": "workerpool0", "index": "0"}),
    {"TF_CONFIG": "[" * 100_000},  # deeper than json's recursion limit
)
"""Environments the fuzzing below once found crashing; pinned so every run tries them."""


def _found(test):
    for env in FOUND_ENVIRONMENTS:
        test = example(env=env)(test)
    return test


@settings(FUZZ, derandomize=True)  # the same examples on every run: no test that passes or fails at random
@given(env=environments())
@_found
def test_mutated_runtime_environments_fail_only_with_runtime_errors(env):
    from omnidist import runtime

    assert issubclass(runtime.RuntimeEnvError, errors.OmnidistError)
    try:
        ctx = runtime.context(env)
    except runtime.RuntimeEnvError:
        return
    json.dumps(ctx.to_dict())
    for method in (ctx.torch_env, ctx.tf_config, lambda: tf_config_fix(ctx, env),
                   lambda: plan_launch(ctx, ["train.py"], environ=env)):
        try:
            method()
        except runtime.RuntimeEnvError:
            pass


def test_found_environments_are_named_runtime_errors():
    """Each pinned case is a RuntimeEnvError naming the variable, not a TypeError (as it once was)."""
    from omnidist import runtime

    for env in FOUND_ENVIRONMENTS:
        with pytest.raises(runtime.RuntimeEnvError) as info:
            runtime.context(env)
        assert info.value.variable in env


def test_runtime_seeds_are_valid():
    """The environments the mutations start from are read without error."""
    from omnidist import runtime

    platforms = {runtime.context(env).platform for env in runtime_seeds()}
    assert {*EMULATIONS, "torchrun"} - {"none"} <= platforms


# --- the CLI ---------------------------------------------------------------------------------------

BROKEN_FILES = {
    "negative-replicas.yaml": "name: x\nprimary: {}\nworkers: {replicas: -2}\n",
    "primary-is-a-list.yaml": "name: x\nprimary: [1, 2]\n",
    "truncated.yaml": "name: x\nprimary: {accelerator: V100:\n",
    "unclosed.yaml": "name: [unclosed\n\tprimary: {}\n",
    "binary.yaml": "\udcff\udcfe\x00\x01garbage",
    "empty.yaml": "",
    "top-level-list.yaml": "- name: x\n- primary: {}\n",
    "bad-timeout.yaml": "name: x\nprimary: {}\ntimeout: forever\n",
    "setting-is-a-list.yaml": "name: x\nprimary: {}\nbackends: {local: {grace_period: [1, 2]}}\n",
    "replicas-words.yaml": "name: x\nprimary: {accelerator: 'V100:8'}\nworkers: {replicas: lots}\n",
    "deep-nesting.yaml": "name: x\nprimary: " + "{a: " * 200 + "1" + "}" * 200 + "\n",
}
"""Job files that are wrong in the ways people get them wrong (and some they should not)."""


@pytest.mark.parametrize("name", sorted(BROKEN_FILES))
def test_cli_never_prints_a_traceback_for_broken_job_files(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(BROKEN_FILES[name].encode("utf-8", "surrogateescape"))
    result = run_cli("compile", str(path), "--backend", "local", cwd=tmp_path, timeout=60)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode in (2, 3), output
    assert result.stderr.strip(), "the user is told what is wrong"


@pytest.mark.parametrize("backend", CLOUD_BACKENDS)
def test_cli_never_prints_a_traceback_for_broken_native_files(tmp_path, backend):
    suite_harness("fuzz", backend)
    seed = copy.deepcopy(native_seeds(backend)[0])
    first = next(iter(seed))
    seed[first] = {"unexpected": [1, None]}
    path = tmp_path / "native.json"
    path.write_text(json.dumps(seed))
    other = next((b for b in CLOUD_BACKENDS if b != backend), backend)
    for args in (("import", str(path), "--from", backend), ("migrate", str(path), "--to", other)):
        result = run_cli(*args, cwd=tmp_path, timeout=60)
        output = result.stdout + result.stderr
        assert "Traceback" not in output, output
        assert result.returncode != 0 or not result.stderr.strip().startswith("error")


@pytest.mark.parametrize("spelling", ["V100:8", "v100:8", {"type": "V100", "count": 8}, "NVIDIA_TESLA_V100:8"],
                         ids=["shorthand", "lowercase", "mapping", "vertex-alias"])
def test_python_api_accelerator_shorthand_is_accepted_everywhere(isolated, spelling):
    from omnidist.model.job import DistributedJob
    from omnidist.model.roles import Accelerator, Role

    job = DistributedJob(name="x", framework="pytorch", image="gcr.io/p/t:1", command=("python", "t.py"),
                         primary=Role(accelerator=spelling))
    assert job.primary.accelerator == Accelerator(type="V100", count=8)
    assert job_from_dict({**job_to_dict(job), "primary": {"accelerator": spelling}}) == job
    local = omnidist.compile(job, backend="local").request
    assert local["replicas"][0]["env"]["OMNIDIST_PROCESSES_PER_NODE"] == "8"
    for backend in CLOUD_BACKENDS:  # each cloud writes it its own way, and reads it back as written
        request = omnidist.compile(job, backend=backend, settings=required_settings(backend)).request
        back = registry.get(backend).import_native(json.loads(serde.dump_json(request)))
        assert back.primary.accelerator == Accelerator(type="V100", count=8), backend
