"""Migration between clouds: golden migrations of the documentation examples in every
direction, their fidelity reports, ``--strict``, ``-o json``, ``omnidist import``, format
detection, and round-trip properties over generated jobs.

Golden files live in ``tests/migration/golden/``: ``inputs/`` holds native specs (from the
seed documents and PLATFORMS.md), and each case writes ``<input>.to_<target>.<ext>`` (the
request exactly as ``omnidist migrate`` prints it) and ``….report.txt``. Regenerate them
after an intended change with ``UPDATE_GOLDEN=1 pytest tests/migration/test_migration.py``, and read
the diff.
"""

from __future__ import annotations

import json
import os
from itertools import permutations
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist import migration
from omnidist.backend import registry
from omnidist.compiler.commandline import SHELL_BUILTINS
from omnidist.compiler.launchers import omnidist_launch
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.migration.entries import machine_entries
from omnidist.migration.imports import import_job
from omnidist.migration.move import machines_named, move_job
from omnidist.migration.native import detect_backend, read_native
from omnidist.migration.plan import compile_dropping, plan
from omnidist.migration.readback import read_back
from omnidist.migration.report import Fidelity, ReportEntry, StrictMigrationError
from omnidist.model import serde
from omnidist.model.features import Feature
from omnidist.model.job import DistributedJob, Interconnect
from omnidist.model.roles import processes_per_node
from omnidist.testing.cli import run_cli

GOLDEN = Path(__file__).parent / "golden"
INPUTS = GOLDEN / "inputs"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
BACKENDS = ("vertex", "ai_platform", "azure_ml")
EXT = {"vertex": "json", "ai_platform": "json", "azure_ml": "yaml"}

CASES = [
    # (input file under inputs/, target, extra keyword arguments of omnidist.migrate)
    ("vertex_v100_reduction_server.yaml", "ai_platform", {}),
    ("vertex_v100_reduction_server.yaml", "azure_ml", {}),
    ("vertex_a2_megagpu_reduction_server.json", "ai_platform", {}),
    ("vertex_parameter_servers.json", "ai_platform", {}),
    ("vertex_parameter_servers.json", "azure_ml", {}),
    ("vertex_a100x2.json", "azure_ml", {"framework": "pytorch"}),
    ("ai_platform_doc_example.yaml", "vertex", {}),
    ("ai_platform_doc_example_command.yaml", "azure_ml", {}),
    ("ai_platform_reduction_server.json", "vertex", {"framework": "pytorch"}),
    ("ai_platform_reduction_server.json", "azure_ml", {"framework": "pytorch"}),
    ("ai_platform_python_package.json", "vertex", {}),
    ("ai_platform_python_package.json", "azure_ml", {"image": "gcr.io/my-project/census:1"}),
    ("azure_ml_pytorch_infiniband.yaml", "vertex", {}),
    ("azure_ml_pytorch_infiniband.yaml", "ai_platform", {}),
    ("azure_ml_tensorflow_ps.yaml", "vertex", {}),
    ("azure_ml_tensorflow_ps.yaml", "ai_platform", {}),
    ("azure_ml_curated_environment.yaml", "vertex", {"image": "gcr.io/my-project/cifar:1"}),
    ("azure_ml_a100_80gb.yaml", "vertex", {}),
]


def _source(name: str) -> str:
    return next(b for b in BACKENDS if name.startswith(b))


def _case_id(case) -> str:
    return f"{case[0].rsplit('.', 1)[0]}->{case[1]}"


def _golden_paths(name: str, target: str) -> tuple[Path, Path]:
    stem = f"{name.rsplit('.', 1)[0]}.to_{target}"
    return GOLDEN / f"{stem}.{EXT[target]}", GOLDEN / f"{stem}.report.txt"


def check_golden(path: Path, text: str) -> None:
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path.name} is missing; run with UPDATE_GOLDEN=1 to write it"
    assert text == path.read_text(), f"{path.name} differs (UPDATE_GOLDEN=1 rewrites it; check the diff)"


# --- the SDKs' own checks on every migrated request ---------------------------------------------

def check_with_sdk(target: str, request: dict[str, Any], tmp_path: Path) -> None:
    """Vertex: the SDK's CustomJob parses it and prints it back unchanged; legacy: only fields
    of the ml v1 discovery document; Azure ML: ``azure.ai.ml.load_job`` accepts the file."""
    if target == "vertex":
        from google.cloud import aiplatform_v1

        message = aiplatform_v1.CustomJob.from_json(json.dumps(request))
        back = aiplatform_v1.CustomJob.to_json(message, use_integers_for_enums=False,
                                                including_default_value_fields=False,
                                                always_print_fields_with_no_presence=False)
        assert json.loads(back) == request
    elif target == "ai_platform":
        from omnidist_ai_platform.testing import schema_problems

        assert schema_problems(request) == []
    else:
        from azure.ai.ml import load_job

        path = tmp_path / "job.yml"
        path.write_text(serde.dump_yaml(request))
        assert load_job(path)._to_job()._to_rest_object().as_dict()["properties"]["command"]


# --- golden migrations --------------------------------------------------------------------------

def test_the_cases_cover_every_direction():
    assert {(_source(name), target) for name, target, _ in CASES} == set(permutations(BACKENDS, 2))


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_golden_migration(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no omnidist.toml of the checkout's
    name, target, options = case
    compiled, report = omnidist.migrate(INPUTS / name, target=target, **options)
    request_path, report_path = _golden_paths(name, target)
    check_golden(request_path, compiled.render() + "\n")
    check_golden(report_path, str(report) + "\n")
    assert report.source == _source(name) and report.target == target
    check_with_sdk(target, compiled.request, tmp_path)


def _entries(name: str, target: str, **options) -> dict[str, ReportEntry]:
    _, report = omnidist.migrate(INPUTS / name, target=target, **options)
    return {e.field: e for e in report.entries}


def test_cross_provider_reports_the_chosen_machine_and_why():
    entries = _entries("vertex_v100_reduction_server.yaml", "azure_ml")
    machine = entries["primary.machine"]
    assert machine.fidelity is Fidelity.APPROXIMATED
    assert machine.message.startswith("Standard_ND40rs_v2 for V100:8 (vertex ran n1-highmem-96)")
    assert "smallest SKU" in machine.message  # the target's reason, not only its choice
    back = _entries("azure_ml_pytorch_infiniband.yaml", "vertex")["primary.machine"]
    assert back.message.startswith("a2-highgpu-8g for A100:8 (azure_ml ran Standard_ND96asr_v4)")


def test_what_azure_ml_and_other_clouds_drop():
    entries = _entries("vertex_v100_reduction_server.yaml", "azure_ml")
    assert entries["reduction_servers"].fidelity is Fidelity.DROPPED
    entries = _entries("ai_platform_doc_example_command.yaml", "azure_ml")
    assert entries["evaluators"].fidelity is Fidelity.DROPPED
    assert entries["parameter_servers.cpus"].fidelity is Fidelity.CHANGED
    entries = _entries("ai_platform_python_package.json", "azure_ml", image="gcr.io/p/census:1")
    assert entries["code"].fidelity is Fidelity.DROPPED  # Azure ML installs no package: the image has it
    assert entries["code"].message.startswith("gs://my-bucket/trainer-0.1.tar.gz is a built Python package")
    assert "gcr.io/p/census:1, which must have the package installed" in entries["code"].message
    entries = _entries("azure_ml_pytorch_infiniband.yaml", "vertex")
    assert entries["interconnect: infiniband"].fidelity is Fidelity.CHANGED


def test_between_google_backends_machines_carry_over_unchanged():
    compiled, report = omnidist.migrate(INPUTS / "vertex_a2_megagpu_reduction_server.json", target="ai_platform")
    body = compiled.request["trainingInput"]
    assert (body["masterType"], body["workerType"], body["parameterServerType"]) == (
        "a2-megagpu-16g", "a2-megagpu-16g", "n1-highcpu-16")
    assert not [e for e in report.entries if e.field.endswith(".machine")]


def test_azure_ml_inputs_are_written_into_the_command():
    compiled, report = omnidist.migrate(INPUTS / "azure_ml_curated_environment.yaml", target="vertex",
                                        image="gcr.io/p/cifar:1")
    pool = compiled.request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    # two nodes under Azure ML's PyTorch distribution: omnidist launch keeps torch's cluster variables
    assert pool["command"] == ["omnidist", "launch", "--nproc-per-node=1", "--", "python", "train.py", "--epochs", "10",
                               "--batch-size", "64"]
    fields = {e.field: e.fidelity for e in report.entries}
    assert fields["code"] is Fidelity.DROPPED  # ./src is not beside the spec
    assert fields["inputs"] is Fidelity.EXACT  # literals: written into the command on every target


def test_a_spec_that_ran_what_only_its_cloud_has_needs_an_image():
    """A valid file the target cannot run without an image is a gap between clouds (exit 3),
    and the message names the flag that closes it."""
    with pytest.raises(UnsupportedFeatureError) as err:
        omnidist.migrate(INPUTS / "azure_ml_curated_environment.yaml", target="vertex")
    assert err.value.feature is Feature.IMAGE and err.value.backend == "vertex" and "--image" in str(err.value)
    assert err.value.exit_code == 3
    with pytest.raises(UnsupportedFeatureError) as err:  # TensorFlow 2.11: a runtime version, no curated environment
        omnidist.migrate(INPUTS / "ai_platform_python_package.json", target="azure_ml")
    assert err.value.subject == "framework_version" and err.value.backend == "azure_ml"
    assert "no prebuilt tensorflow 2.11; versions: 2.12, 2.16. Pass --image" in str(err.value)
    assert err.value.exit_code == 3


def test_a_runtime_version_job_runs_on_the_prebuilt_container_of_another_google_cloud():
    compiled, report = omnidist.migrate(INPUTS / "ai_platform_python_package.json", target="vertex")
    spec = compiled.request["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    assert spec["executorImageUri"] == "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11.py310:latest"
    assert (spec["packageUris"], spec["pythonModule"]) == (["gs://my-bucket/trainer-0.1.tar.gz"], "trainer.task")
    assert {e.field: e.fidelity for e in report.entries}["framework_version"] is Fidelity.EXACT


def test_what_no_migration_can_give_up_still_stops_it():
    with pytest.raises(UnsupportedFeatureError) as err:  # legacy never had H100s
        omnidist.migrate({"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json",
                          "type": "command", "command": "python t.py", "environment": {"image": "i:1"},
                          "resources": {"instance_count": 1, "instance_type": "Standard_NC40ads_H100_v5"}},
                         target="ai_platform")
    assert err.value.subject == "accelerator H100" and err.value.backend == "ai_platform"


# --- the command line ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", [CASES[1], CASES[8], CASES[12]], ids=_case_id)
def test_cli_prints_the_request_and_the_report_on_stderr(case, tmp_path):
    name, target, options = case
    flags = [f"--{k}={v}" for k, v in options.items()]
    done = run_cli("migrate", str(INPUTS / name), "--to", target, *flags, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    request_path, report_path = _golden_paths(name, target)
    assert done.stdout == request_path.read_text()
    assert done.stderr == report_path.read_text()


def test_strict_exits_3_on_a_drop_with_the_report(tmp_path):
    done = run_cli("migrate", str(INPUTS / "vertex_v100_reduction_server.yaml"), "--from", "vertex",
                   "--to", "azure_ml", "--strict", cwd=tmp_path)
    assert done.returncode == 3 and done.stdout == ""
    assert "dropped      reduction_servers" in done.stderr
    assert "error: azure_ml cannot express reduction_servers (dropped)" in done.stderr
    assert "Traceback" not in done.stderr


def test_strict_exits_3_on_another_gpu_count(tmp_path):
    done = run_cli("migrate", str(INPUTS / "vertex_a100x2.json"), "--to", "azure_ml", "--strict",
                   "--framework", "pytorch", cwd=tmp_path)
    assert done.returncode == 3
    assert "changed      primary.machine: Standard_ND96asr_v4 for A100:2" in done.stderr
    assert "it has A100:8, not A100:2" in done.stderr


def test_strict_accepts_a_machine_chosen_by_exact_accelerator_equivalence(tmp_path):
    done = run_cli("migrate", str(INPUTS / "azure_ml_a100_80gb.yaml"), "--to", "vertex", "--strict",
                   "-o", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr)
    assert report["strict_ok"] is True and report["source"] == "azure_ml"
    machine = next(e for e in report["entries"] if e["field"] == "primary.machine")
    assert machine["fidelity"] == "approximated"
    assert machine["message"].startswith("a2-ultragpu-1g for A100-80GB:1 (azure_ml ran Standard_NC24ads_A100_v4)")
    assert json.loads(done.stdout)["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "a2-ultragpu-1g"


def test_strict_in_python_raises_with_the_report():
    with pytest.raises(StrictMigrationError) as err:
        omnidist.migrate(INPUTS / "ai_platform_python_package.json", target="azure_ml", strict=True,
                         image="gcr.io/p/census:1")
    assert err.value.exit_code == 3
    assert {e.field for e in err.value.report.breaks_strict} >= {"code"}


def test_json_report_as_data(tmp_path):
    done = run_cli("migrate", str(INPUTS / "ai_platform_doc_example_command.yaml"), "--to", "azure_ml",
                   "-o", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr)
    assert report["strict_ok"] is False and report["target"] == "azure_ml"
    assert {"fidelity": "dropped", "field": "evaluators"} == {k: v for k, v in report["entries"][0].items()
                                                              if k != "message"}
    yaml.safe_load(done.stdout)  # the request itself stays on stdout


@pytest.mark.parametrize("args, exit_code, error", [
    (("--to", "azure_ml", "--strict"), 3, "StrictMigrationError"),
    (("--from", "azure_ml", "--to", "vertex"), 2, "ValidationError"),
], ids=["strict", "malformed"])
def test_json_output_prints_errors_as_json_too(tmp_path, args, exit_code, error):
    done = run_cli("migrate", str(INPUTS / "vertex_v100_reduction_server.yaml"), *args, "-o", "json", cwd=tmp_path)
    assert done.returncode == exit_code and done.stdout == ""
    document = json.loads(done.stderr)  # stderr is one JSON document, nothing else
    assert document["error"]["type"] == error and document["error"]["exit_code"] == exit_code
    assert ("entries" in document) == (error == "StrictMigrationError"), "a strict refusal keeps its report"


def test_missing_file_with_json_output_is_json(tmp_path):
    done = run_cli("migrate", "nope.json", "--to", "vertex", "-o", "json", cwd=tmp_path)
    assert done.returncode == 2
    assert "nope.json" in json.loads(done.stderr)["error"]["message"]


def test_import_prints_loadable_yaml_with_comments(tmp_path):
    path = INPUTS / "vertex_v100_reduction_server.yaml"
    done = run_cli("import", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"# imported from {path} vertex spec by omnidist\n")
    assert "framework: custom  # inferred: custom: nothing in the spec says; set it with --framework" in done.stdout
    loaded = DistributedJob.from_yaml(done.stdout)
    assert loaded == omnidist.import_native(path, backend="vertex")
    assert loaded.backends["vertex"]["machine_types"]["workers"] == "n1-highmem-96"


def test_import_framework_override(tmp_path):
    done = run_cli("import", str(INPUTS / "ai_platform_doc_example.yaml"), "--from", "ai_platform",
                   "--framework", "horovod", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert DistributedJob.from_yaml(done.stdout).framework.value == "horovod"
    assert "inferred" not in done.stdout  # nothing left to infer


def test_framework_inference():
    job = omnidist.import_native(INPUTS / "ai_platform_doc_example.yaml")
    assert job.framework.value == "tensorflow"  # parameter servers: a TF_CONFIG cluster
    job = omnidist.import_native(INPUTS / "vertex_a2_megagpu_reduction_server.json")
    assert job.framework.value == "pytorch"  # a prebuilt PyTorch training container
    _, _, entries = import_job(INPUTS / "vertex_v100_reduction_server.yaml")
    assert [(e.fidelity, e.message) for e in entries if e.field == "framework"] == [
        (Fidelity.INFERRED, "custom: nothing in the spec says; set it with --framework (pytorch, tensorflow, …)")]


@pytest.mark.parametrize("name", sorted(p.name for p in INPUTS.iterdir()))
def test_the_format_is_detected_from_the_content(name):
    data, _ = read_native(INPUTS / name)
    assert detect_backend(data) == _source(name)


def test_an_unknown_format_lists_the_formats_and_asks_for_from(tmp_path):
    (tmp_path / "x.yaml").write_text("foo: 1\n")
    done = run_cli("migrate", "x.yaml", "--to", "vertex", cwd=tmp_path)
    assert (
        done.returncode == 2
        and f"Pass --from {'|'.join(n for n in registry.installed() if registry.get(n).native_formats)}" in done.stderr
    )  # the installed ones
    assert "x.yaml" in done.stderr
    for form in ("trainingInput", "gcloud ai-platform jobs submit training", "commandJob", "azure.ai.ml command(",
                 "CustomJobSpec (workerPoolSpecs)", "gcloud ai custom-jobs create"):
        assert form in done.stderr, form


def test_report_renders_as_an_html_table():
    _, report = omnidist.migrate(INPUTS / "vertex_parameter_servers.json", target="azure_ml")
    html = report._repr_html_()
    assert "<table" in html and "vertex → azure_ml" in html
    assert "Standard_NC4as_T4_v3" in html.replace("<wbr>", "")  # <wbr>: where a long cell may wrap


def test_omnidist_migrate_is_the_spec_function():
    assert omnidist.migrate is migration.migrate and callable(omnidist.migrate)


# --- properties ---------------------------------------------------------------------------------

ACCELERATORS = {
    # accelerators both backends of a pair offer with exactly that count per node
    frozenset({"vertex", "ai_platform"}): [None, "T4:1", "T4:4", "P4:2", "P100:1", "V100:1", "V100:8", "A100:1",
                                           "A100:8", "A100:16"],
    # (Azure ML's V100 1/2/4 SKUs are retired, so it puts V100:1 on an 8-GPU node: not exact)
    frozenset({"vertex", "azure_ml"}): [None, "T4:1", "T4:4", "V100:8", "A100:8", "A100-80GB:1",
                                        "A100-80GB:4", "H100:8", "H200:8"],
    frozenset({"ai_platform", "azure_ml"}): [None, "T4:1", "T4:4", "V100:8", "A100:8"],
}
GOOGLE = frozenset({"vertex", "ai_platform"})
"""The backends that share Compute Engine's vocabulary."""
TOKEN = st.text(alphabet="abcxyz019-_./", min_size=1, max_size=8)
ENV = st.dictionaries(
    st.from_regex(r"[A-Z][A-Z0-9_]{0,5}", fullmatch=True).filter(lambda k: not k.startswith("OMNIDIST")),
    st.text(alphabet="abc019", max_size=4),
    max_size=2,
)


@st.composite
def portable_jobs(draw, source: str, target: str) -> DistributedJob:
    """Jobs within what both backends can express exactly: Azure ML gets one kind of node and
    no evaluators or reducers; legacy gets no spot; parameter servers only for TensorFlow.
    From Azure ML, no ``args`` apart from the command (its command is one string, so the split
    does not survive; what runs is the same argv). From Google to Azure ML, no parameter
    servers: Google gives them a machine, whose size they keep on import, and Azure ML cannot
    give them a size of their own (``migrate`` reports that as a change). A CPU-only primary asks
    for vCPUs: each cloud's machine for "any CPU machine" differs, and an import records the
    size of the one the source ran."""
    pair = frozenset({source, target})
    azure, legacy = "azure_ml" in pair, "ai_platform" in pair
    accel = draw(st.sampled_from(ACCELERATORS[pair]))
    framework = draw(st.sampled_from(["pytorch", "tensorflow", "horovod", "deepspeed", "custom"]))
    data: dict[str, Any] = {
        "name": draw(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)),
        "framework": framework,
        "image": draw(st.sampled_from(["gcr.io/p/a:1", "us-docker.pkg.dev/p/r/b:2"])),
        "command": draw(
            st.lists(TOKEN, min_size=1, max_size=3).filter(lambda c: c[0] != "env" and c[0] not in SHELL_BUILTINS)
        ),  # `.` is the shell's `source`
        "args": [] if source == "azure_ml" else draw(st.lists(TOKEN, max_size=2)),
        "env": draw(ENV),
        "primary": {"accelerator": accel} if accel else {"cpus": draw(st.sampled_from([4, 8]))},
        "labels": draw(
            st.dictionaries(
                st.sampled_from(["team", "env"]), st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True), max_size=2
            )
        ),
    }
    if draw(st.booleans()):
        data["workers"] = {"replicas": draw(st.integers(1, 4))}
    if draw(st.booleans()):
        data["timeout"] = draw(st.sampled_from(["90m", "2h", "1d"]))
    if not legacy and draw(st.booleans()):
        data["spot"] = True
    if framework == "tensorflow" and not (source in GOOGLE and target == "azure_ml") and draw(st.booleans()):
        data["parameter_servers"] = {"replicas": draw(st.integers(1, 3))}
    elif not azure and accel and "workers" in data and draw(st.booleans()):
        data["reduction_servers"] = {"replicas": draw(st.sampled_from([2, "auto"]))}
    if not azure and draw(st.booleans()):
        data["evaluators"] = {"replicas": 1}
    return DistributedJob.from_dict(data)


def _compile(job: DistributedJob, backend: str):
    return omnidist.compile(job, backend=backend, settings={})


def _expected(job: DistributedJob, source: str, target: str, first) -> DistributedJob:
    """``job`` as the target should see it. Between the Google backends the source's machines
    carry over, so the target compiles with the machines the source chose, and with the number
    of reducers the source's request holds (``auto`` was sized from the source's machines)."""
    if registry.get(source).migration.shares_with(registry.get(target).migration):
        native = omnidist.import_native(first.request, backend=source)
        chosen = machines_named(native, registry.get(source))
        reducers = native.reduction_servers and attrs.evolve(job.reduction_servers,
                                                             replicas=native.reduction_servers.replicas)
        return attrs.evolve(job, backends={target: {"machine_types": chosen}}, reduction_servers=reducers)
    return job


@pytest.mark.parametrize(("source", "target"), list(permutations(BACKENDS, 2)))
def test_compile_import_compile_is_compile(source, target, tmp_path_factory):
    """For generated jobs both backends express, ``compile_B(import_A(compile_A(job)))`` equals
    ``compile_B(job)`` — through ``omnidist.migrate``, and between the Google backends through
    the importer alone (across providers, ``migrate`` sizes each role for the target: an import
    records the source machine's vCPUs and memory, one cloud's packaging of them).

    The framework is passed through as a user would with ``--framework``: legacy and Azure
    specs do not always carry it. Between the two Google backends, machine types are one
    Compute Engine vocabulary and carry over, so the imported job compiles with the machines
    the source chose; the expectation is ``compile_B(job)`` with ``backends.B.machine_types``
    set to those machines (B's own catalog pick may be another machine for the same GPUs).
    Azure ML puts multi-node 8-GPU jobs on its InfiniBand SKUs, and such a request *is* an
    InfiniBand job (it comes back as ``interconnect: infiniband``, which Google cannot run):
    those are not jobs both clouds express, and are left out.
    """
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                     HealthCheck.too_slow])
    @given(portable_jobs(source, target))
    def check(job: DistributedJob) -> None:
        try:
            first, _ = _compile(job, source), _compile(job, target)
        except (UnsupportedFeatureError, ValidationError):
            assume(False)
        imported = omnidist.import_native(first.request, backend=source, framework=job.framework)
        assume(not (imported.interconnect is Interconnect.INFINIBAND and job.interconnect is Interconnect.ANY))
        expected = _compile(_expected(job, source, target, first), target)
        if {source, target} <= GOOGLE:
            carried = attrs.evolve(imported, backends=_expected(imported, source, target, first).backends)
            assert _compile(carried, target).request == expected.request
        try:
            migrated, report = omnidist.migrate(first.request, source, target, framework=job.framework, settings={})
        except UnsupportedFeatureError as exc:  # an MPI program on a target with no MPI launcher (SPEC §14)
            assert exc.subject == "processes_per_node" and "mpirun" in str(exc)
            assume(False)
        if any(e.field == "command" and "cluster variables" in e.message for e in report.entries):
            # the source set torch's cluster variables and the target sets none: omnidist launch keeps
            # them (SPEC §14), so the target's command is the job's under it
            launched = attrs.evolve(job, command=omnidist_launch(job.command, processes_per_node(job)))
            expected = _compile(_expected(launched, source, target, first), target)
        assert migrated.request == expected.request
        assert not [e for e in report.entries if e.fidelity is Fidelity.CHANGED]

    check()


def test_spot_becomes_on_demand_on_legacy_and_strict_refuses():
    native = {"displayName": "spot-job", "jobSpec": {"scheduling": {"strategy": "SPOT"}, "workerPoolSpecs": [
        {"machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
         "replicaCount": "1", "containerSpec": {"imageUri": "gcr.io/p/t:1", "command": ["python", "t.py"]}}]}}
    compiled, report = omnidist.migrate(native, target="ai_platform", framework="pytorch")
    assert "scheduling" not in compiled.request["trainingInput"]
    assert [(e.field, e.fidelity) for e in report.breaks_strict] == [("spot", Fidelity.CHANGED)]
    with pytest.raises(StrictMigrationError):
        omnidist.migrate(native, target="ai_platform", framework="pytorch", strict=True)


# --- planned from the target's capabilities, compiled once ------------------------------------------

def _moved(name: str, target: str):
    imported, source, entries = import_job(INPUTS / name)
    return move_job(imported, source, registry.get(target), entries=entries)[0]


def test_the_plan_gives_up_what_the_target_declares_it_lacks_in_its_own_words(isolated):
    job = _moved("ai_platform_doc_example_command.yaml", "azure_ml")
    planned, entries = plan(job, registry.get("azure_ml"))
    assert [(e.fidelity.value, e.field) for e in entries] == [
        ("dropped", "evaluators"), ("changed", "parameter_servers.cpus"), ("changed", "parameter_servers.memory_gb")]
    assert entries[0].message == ("the role is left out: Azure ML command jobs have no evaluator role: every node "
                                  "trains.")
    assert planned.evaluators is None and planned.parameter_servers.cpus is None
    omnidist.compile(planned, backend="azure_ml")  # one compile: nothing left for the target to refuse


def test_what_the_target_has_on_some_machines_is_left_to_its_compiler(isolated):
    """Vertex declares InfiniBand-class networking (GPUDirect RDMA on two machines), so the plan
    gives nothing up; its compiler refuses it for this job's A100s, and that refusal is given up."""
    job = _moved("azure_ml_pytorch_infiniband.yaml", "vertex")
    assert plan(job, registry.get("vertex")) == (job, [])
    _, final, entries = compile_dropping(job, registry.get("vertex"))
    assert [e.field for e in entries] == ["interconnect: infiniband"] and final.interconnect is Interconnect.ANY


def test_the_machine_a_target_chose_is_read_from_its_note_data(isolated):
    compiled, report = omnidist.migrate(INPUTS / "azure_ml_a100_80gb.yaml", target="vertex")
    line = next(e for e in report.entries if e.field == "primary.machine")
    assert line.message.endswith("picked a2-ultragpu-1g (12 vCPUs, 170 GB, 1×A100-80GB); name a machine here to choose")
    imported, source, _ = import_job(INPUTS / "azure_ml_a100_80gb.yaml")
    words_only = attrs.evolve(compiled, diagnostics=[attrs.evolve(n, code=None) for n in compiled.diagnostics])
    vertex = registry.get("vertex")
    entries, consumed = machine_entries(imported, compiled.job, words_only, source, vertex,
                                        read_back(compiled, vertex))
    assert consumed == set() and entries[0].message.endswith("the target's machine for it"), \
        "a note that only says the machine's name in words is not the target's choice"


def test_a_spec_two_backends_claim_asks_for_from():
    with pytest.raises(ValidationError, match=r"reads as ai_platform and as vertex; pass --from ai_platform\|vertex"):
        detect_backend({"trainingInput": {}, "jobSpec": {}})


def test_migrate_needs_a_target():
    with pytest.raises(ValidationError, match="name the backend to migrate to"):
        omnidist.migrate(INPUTS / "vertex_a100x2.json")


def test_backend_choices_come_from_the_registry_with_a_suggestion(tmp_path):
    done = run_cli("migrate", "x.json", "--to", "vertx", cwd=tmp_path)
    assert done.returncode == 2 and "Did you mean 'vertex'?" in done.stderr
    for name in registry.installed():
        assert name in done.stderr
