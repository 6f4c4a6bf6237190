"""Compile: portable job -> command job YAML, checked against golden files and the SDK's own
schemas (``load_job`` + ``_to_rest_object``)."""

from __future__ import annotations

import os

import pytest

from omnidist.kit import Feature, NoteCode, NoteKind, UnsupportedFeatureError, ValidationError
from omnidist_azure_ml import catalog
from omnidist_azure_ml.compiler import SCHEMA

BASE = {"name": "cassava", "framework": "pytorch", "image": "trainer.example/t:1.0",
        "command": ["python", "-m", "trainer.task"], "args": ["--epochs", "10"]}


def job(**fields):
    return {**BASE, "primary": {}, **fields}


GOLDEN_CASES = {
    "pytorch_ib_spot": job(primary={"accelerator": "A100:8"}, workers={"replicas": 3}, interconnect="infiniband",
                           spot=True, timeout="24h", labels={"team": "vision"}, env={"NCCL_DEBUG": "INFO"}),
    "deepspeed_h100": job(framework="deepspeed", primary={"accelerator": "H100:8"}, workers={"replicas": 1}),
    "horovod_cluster": job(framework="horovod", primary={"accelerator": "V100:8"}, workers={"replicas": 2},
                           backends={"azure_ml": {"compute": "gpu-cluster", "instance_type": "Standard_ND40rs_v2",
                                                  "environment": "azureml:acpt-pytorch:3"}}),
    "tensorflow_ps": job(framework="tensorflow", primary={"accelerator": "T4:1"}, workers={"replicas": 1},
                         parameter_servers={"replicas": 1}),
    "custom_cpu": job(framework="custom", primary={"cpus": 8, "memory_gb": 30}),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_requests(case, compile_, to_rest):
    compiled = compile_(GOLDEN_CASES[case])
    path = os.path.join(os.path.dirname(__file__), "golden", f"{case}.yaml")
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(str(compiled))
    with open(path, encoding="utf-8") as fh:
        assert str(compiled) == fh.read()
    assert list(compiled.request)[:2] == ["$schema", "type"] and compiled.request["$schema"] == SCHEMA
    rest = to_rest(compiled.request)
    assert rest["jobType"] == "Command"
    assert rest["command"] == compiled.request["command"]
    assert rest["resources"]["instanceCount"] == compiled.request["resources"]["instance_count"]
    assert rest["environmentVariables"] == compiled.request["environment_variables"]


def test_pytorch_ib_job_survives_the_sdk(compile_, to_rest):
    compiled = compile_(GOLDEN_CASES["pytorch_ib_spot"])
    rest = to_rest(compiled.request)
    assert rest["command"] == "python -m trainer.task --epochs 10"
    assert rest["environmentId"] == {"image": "trainer.example/t:1.0"}
    assert rest["distribution"] == {"distributionType": "PyTorch", "processCountPerInstance": 8}
    assert rest["resources"] == {"instanceCount": 4, "instanceType": "Standard_ND96asr_v4", "shmSize": "16g",
                                 "properties": {}}
    assert rest["limits"]["timeout"] == "P1D"  # 86400 s
    assert rest["queueSettings"] == {"jobTier": "Spot"}
    assert rest["tags"] == {"team": "vision"}
    assert rest["displayName"] == rest["experimentName"] == "cassava"
    assert "computeId" not in rest  # serverless


@pytest.mark.parametrize("framework, kind", [("pytorch", "PyTorch"), ("deepspeed", "PyTorch"), ("horovod", "Mpi")])
def test_process_distributions_use_processes_per_node(framework, kind, compile_, to_rest):
    compiled = compile_(job(framework=framework, primary={"accelerator": "V100:4"}, workers={"replicas": 1},
                            processes_per_node=2))
    dist = compiled.request["distribution"]
    assert dist == {"type": kind.lower(), "process_count_per_instance": 2}
    assert to_rest(compiled.request)["distribution"] == {"distributionType": kind, "processCountPerInstance": 2}
    assert compiled.request["environment_variables"]["OMNIDIST_FRAMEWORK"] == framework


def test_processes_per_node_auto_is_the_gpu_count_or_one(compile_):
    four = compile_(job(primary={"accelerator": "A100-80GB:4"}))
    assert four.request["distribution"]["process_count_per_instance"] == 4
    assert compile_(job()).request["distribution"]["process_count_per_instance"] == 1


def test_tensorflow_counts_workers_and_parameter_servers(compile_, to_rest):
    compiled = compile_(GOLDEN_CASES["tensorflow_ps"])
    assert compiled.request["distribution"] == {"type": "tensorflow", "worker_count": 2, "parameter_server_count": 1}
    assert compiled.request["resources"]["instance_count"] == 2  # PARAMETER_SERVERS_ADD_NODES is False
    assert to_rest(compiled.request)["distribution"] == {"distributionType": "TensorFlow", "workerCount": 2,
                                                         "parameterServerCount": 1}
    assert "OMNIDIST_POOL2_ROLE" not in compiled.request["environment_variables"]  # TF_CONFIG names the ps
    assert any(n.kind is NoteKind.APPROXIMATED and n.field == "parameter_servers" for n in compiled.diagnostics)


def test_custom_runs_one_process_per_node_unless_it_says_more(compile_, to_rest):
    """`auto` is one process per node for a custom program (it decides itself); a count it gives is
    how many Azure starts (SPEC §10)."""
    compiled = compile_(job(framework="custom", primary={"accelerator": "V100:4"}, workers={"replicas": 1}))
    assert compiled.request["distribution"] == {"type": "pytorch", "process_count_per_instance": 1}
    assert compiled.request["environment_variables"]["OMNIDIST_PROCESSES_PER_NODE"] == "1"
    told = compile_(job(framework="custom", primary={"accelerator": "V100:4"}, processes_per_node=4))
    assert told.request["distribution"] == {"type": "pytorch", "process_count_per_instance": 4}
    to_rest(compiled.request)


@pytest.mark.parametrize("command", [["omnidist", "launch", "--", "train.py"],
                                     ["/opt/venv/bin/omnidist", "launch", "--nproc-per-node", "8", "--", "t.py"]])
def test_an_omnidist_launch_command_gets_one_process_per_node(command, compile_):
    """One launcher, never two: Azure starts one process per node and `omnidist launch` the rest."""
    compiled = compile_(job(command=command, args=[], primary={"accelerator": "V100:8"}, workers={"replicas": 1}))
    assert compiled.request["distribution"] == {"type": "pytorch", "process_count_per_instance": 1}
    assert compiled.request["environment_variables"]["OMNIDIST_PROCESSES_PER_NODE"] == "8"
    (note,) = [n for n in compiled.diagnostics if n.field == "distribution.process_count_per_instance"]
    assert note.kind is NoteKind.DEFAULTED and "omnidist launch" in note.message


def test_under_mpi_azure_starts_the_processes_and_launch_runs_directly(compile_):
    compiled = compile_(job(framework="horovod", command=["omnidist", "launch", "--", "train.py"], args=[],
                            primary={"accelerator": "V100:4"}))
    assert compiled.request["distribution"] == {"type": "mpi", "process_count_per_instance": 4}
    assert any(n.kind is NoteKind.HINT and "directly" in n.message for n in compiled.diagnostics)


# --- SKUs and InfiniBand ------------------------------------------------------------------------

@pytest.mark.parametrize("accelerator, nodes, interconnect, sku", [
    ("A100:8", 1, "any", "Standard_ND96asr_v4"),
    ("A100-80GB:1", 1, "any", "Standard_NC24ads_A100_v4"),
    ("A100-80GB:2", 4, "any", "Standard_NC48ads_A100_v4"),      # no IB SKU with 2 GPUs: smallest wins
    ("A100-80GB:2", 4, "infiniband", "Standard_ND96amsr_A100_v4"),
    ("H100:1", 1, "any", "Standard_NC40ads_H100_v5"),
    ("H100:8", 1, "any", "Standard_ND96is_H100_v5"),
    ("H100:8", 2, "any", "Standard_ND96isr_H100_v5"),            # multi-node GPU jobs prefer InfiniBand
    ("H100:8", 1, "infiniband", "Standard_ND96isr_H100_v5"),
    ("H200:8", 2, "any", "Standard_ND96isr_H200_v5"),
    ("T4:1", 1, "any", "Standard_NC4as_T4_v3"),
    ("T4:4", 2, "any", "Standard_NC64as_T4_v3"),
    ("V100:1", 1, "any", "Standard_ND40rs_v2"),                  # NC v3 is retired: the sold SKU wins
    ("V100:8", 2, "infiniband", "Standard_ND40rs_v2"),
])
def test_sku_choice(accelerator, nodes, interconnect, sku, compile_, to_rest):
    compiled = compile_(job(primary={"accelerator": accelerator}, workers={"replicas": nodes - 1},
                            interconnect=interconnect))
    assert compiled.request["resources"]["instance_type"] == sku
    chosen = catalog.lookup(sku)
    env = compiled.request["environment_variables"]
    for key, value in catalog.infiniband_env(chosen).items():
        assert env[key] == value
    if not chosen.infiniband:
        assert "NCCL_IB_PCI_RELAXED_ORDERING" not in env
    assert any(n.kind is NoteKind.DEFAULTED and n.message.startswith(sku) for n in compiled.diagnostics)
    chosen_notes = [n.data for n in compiled.diagnostics if n.code is NoteCode.MACHINE_CHOSEN]
    assert chosen_notes == [{"machine": sku}], "one VM size for every node: no role in the data"
    assert to_rest(compiled.request)["resources"]["instanceType"] == sku


def test_nd_a100_v4_gets_its_topology_file_and_user_values_win(compile_):
    compiled = compile_(job(primary={"accelerator": "A100:8"}, env={"NCCL_SOCKET_IFNAME": "ib0"}))
    env = compiled.request["environment_variables"]
    assert env["NCCL_TOPO_FILE"] == "/opt/microsoft/ndv4-topo.xml"
    assert env["NCCL_SOCKET_IFNAME"] == "ib0"
    note = next(n for n in compiled.diagnostics if n.field == "env")
    assert "NCCL_SOCKET_IFNAME" not in note.message and "UCX_IB_PCI_RELAXED_ORDERING=on" in note.message


@pytest.mark.parametrize("sku, suggestion", [
    ("Standard_NC24s_v3", "Standard_ND40rs_v2"),
    ("Standard_NC24r", "Standard_ND40rs_v2"),
    ("Standard_ND96is_H100_v5", "Standard_ND96isr_H100_v5"),
])
def test_explicit_sku_without_sriov_infiniband_is_refused(sku, suggestion, compile_):
    accelerator = "H100:8" if "H100" in sku else "V100:4"
    with pytest.raises(ValidationError) as info:
        compile_(job(primary={"accelerator": accelerator}, interconnect="infiniband",
                     backends={"azure_ml": {"instance_type": sku}}))
    text = str(info.value)
    assert "backends.azure_ml.instance_type" in text and sku in text and suggestion in text
    assert "SR-IOV" in text


def test_explicit_sku_is_checked_against_the_accelerator(compile_):
    with pytest.raises(ValidationError, match=r"backends\.azure_ml\.instance_type: Standard_NC4as_T4_v3 has 1xT4, "
                                              r"but the primary asks for A100:8; use Standard_ND96asr_v4"):
        compile_(
            job(primary={"accelerator": "A100:8"}, backends={"azure_ml": {"instance_type": "standard_nc4as_t4_v3"}})
        )


def test_explicit_retired_sku_gets_a_hint_and_canonical_spelling(compile_):
    compiled = compile_(
        job(primary={"accelerator": "V100:4"}, backends={"azure_ml": {"instance_type": "STANDARD_NC24RS_V3"}})
    )
    assert compiled.request["resources"]["instance_type"] == "Standard_NC24rs_v3"
    assert any("retired" in n.message for n in compiled.notes(NoteKind.HINT))


def test_unknown_explicit_sku_is_passed_through_with_a_hint(compile_):
    compiled = compile_(
        job(primary={"accelerator": "B200:8"}, backends={"azure_ml": {"instance_type": "Standard_ND128isr_GB200_v6"}})
    )
    assert compiled.request["resources"]["instance_type"] == "Standard_ND128isr_GB200_v6"
    assert any("not in omnidist's SKU catalog" in n.message for n in compiled.diagnostics)


def test_cpu_jobs_get_a_general_purpose_sku(compile_):
    assert compile_(job()).request["resources"]["instance_type"] == catalog.DEFAULT_CPU_SKU
    assert (
        compile_(job(primary={"cpus": 8, "memory_gb": 30})).request["resources"]["instance_type"] == "Standard_D8s_v3"
    )
    assert (
        compile_(job(primary={"cpus": 8}, interconnect="infiniband")).request["resources"]["instance_type"]
        == "Standard_HC44rs"
    )


def test_cluster_fixes_the_vm_size(compile_, to_rest):
    compiled = compile_(job(primary={"accelerator": "A100:8"}, workers={"replicas": 1}, interconnect="infiniband",
                            backends={"azure_ml": {"compute": "gpu-cluster"}}))
    assert compiled.request["compute"] == "azureml:gpu-cluster"
    assert "instance_type" not in compiled.request["resources"]
    env = compiled.request["environment_variables"]
    assert env["NCCL_IB_PCI_RELAXED_ORDERING"] == "1" and "NCCL_TOPO_FILE" not in env
    assert to_rest(compiled.request)["computeId"] == "gpu-cluster"
    assert any(n.field == "backends.azure_ml.instance_type" for n in compiled.notes(NoteKind.HINT))


def test_too_many_gpus_names_the_largest_sku(compile_):
    with pytest.raises(ValidationError, match=r"primary\.accelerator: no Azure SKU has 16 A100 GPUs.*Standard_ND96asr_v4"):
        compile_(job(primary={"accelerator": "A100:16"}))


# --- refusals (exit 3) ---------------------------------------------------------------------------

@pytest.mark.parametrize("fields, feature, words", [
    ({"evaluators": {"replicas": 1}}, "evaluators", "evaluator role"),
    ({"reduction_servers": {"replicas": "auto"}}, "reduction_servers", "Reduction Server"),
    ({"reduction_servers": {"replicas": 4}}, "reduction_servers", "Reduction Server"),
    ({"workers": {"replicas": 2, "accelerator": "V100:4"}}, "workers.accelerator", "one instance_type"),
    ({"workers": {"replicas": 2, "cpus": 4}}, "workers.cpus", "one instance_type"),
    ({"workers": {"replicas": 2, "image": "other.example/x:1"}}, "workers.image", "one command"),
    ({"workers": {"replicas": 1, "env": {"A": "1"}}}, "workers.env", "one command"),
    ({"parameter_servers": {"replicas": 1}}, "parameter_servers", "tensorflow distribution"),
    ({"framework": "tensorflow", "parameter_servers": {"replicas": 1, "cpus": 4}}, "parameter_servers.cpus", "instance_type"),
    ({"framework": "tensorflow", "parameter_servers": {"replicas": 1, "env": {"A": "1"}}}, "parameter_servers.env", "same environment"),
    ({"primary": {"accelerator": "L4:1"}}, "accelerator L4", "no Azure ML SKU"),
    ({"primary": {"accelerator": "T4:1"}, "interconnect": "infiniband"}, "interconnect: infiniband with T4", "SR-IOV"),
])
def test_refusals_name_the_feature_and_what_to_do(fields, feature, words, compile_):
    data = job(primary=fields.pop("primary", {"accelerator": "V100:8"}), **fields)
    with pytest.raises(UnsupportedFeatureError) as info:
        compile_(data)
    error = info.value
    assert error.subject == feature and error.backend == "azure_ml" and error.exit_code == 3
    assert error.feature is not Feature.OTHER, "every refusal names its feature in the vocabulary"
    assert words in str(error) and error.hint
    assert str(error).startswith(f"azure_ml cannot express {feature}:")


def test_zero_replica_roles_are_not_refused(compile_):
    compiled = compile_(job(evaluators={"replicas": 0}, reduction_servers={"replicas": 0}))
    assert compiled.request["resources"]["instance_count"] == 1


def test_workers_restating_the_primary_hardware_are_fine(compile_):
    compiled = compile_(job(primary={"accelerator": "V100:8"}, workers={"replicas": 1, "accelerator": "V100:8"}))
    assert compiled.request["resources"]["instance_count"] == 2


# --- environment, shm, timeout, spot, settings -----------------------------------------------------

def test_env_hints_and_user_env(compile_):
    compiled = compile_(job(env={"A": "1", "OMNIDIST_JOB_NAME": "mine"}, primary={"env": {"B": "2"}}))
    env = compiled.request["environment_variables"]
    assert env["A"] == "1" and env["B"] == "2"
    assert env["OMNIDIST_JOB_NAME"] == "mine"  # the user's value wins
    assert env["OMNIDIST_FRAMEWORK"] == "pytorch" and "OMNIDIST_ROLE" not in env


def test_shm_size_default_and_override(compile_, to_rest):
    two = compile_(job(primary={"accelerator": "H100:2"}))
    assert two.request["resources"]["shm_size"] == "16g"
    assert any(n.field == "backends.azure_ml.shm_size" for n in two.notes(NoteKind.DEFAULTED))
    one = compile_(job(primary={"accelerator": "H100:1"}))
    assert "shm_size" not in one.request["resources"]
    mine = compile_(
        job(primary={"accelerator": "H100:2"}, backends={"azure_ml": {"shm_size": "64g", "docker_args": "--ipc=host"}})
    )
    assert mine.request["resources"]["shm_size"] == "64g"
    rest = to_rest(mine.request)
    assert rest["resources"]["shmSize"] == "64g" and rest["resources"]["dockerArgs"] == "--ipc=host"


def test_timeout_spot_tier_priority(compile_, to_rest):
    compiled = compile_(job(timeout="90m", backends={"azure_ml": {"job_tier": "Premium", "priority": "high"}}))
    assert compiled.request["limits"] == {"timeout": 5400}
    assert compiled.request["queue_settings"] == {"job_tier": "premium", "priority": "high"}
    rest = to_rest(compiled.request)
    assert rest["limits"]["timeout"] == "PT1H30M" and rest["queueSettings"]["jobTier"] == "Premium"
    assert compile_(job(spot=True)).request["queue_settings"] == {"job_tier": "spot"}
    assert "limits" not in compile_(job()).request and "queue_settings" not in compile_(job()).request


def test_spot_conflicting_with_job_tier(compile_):
    with pytest.raises(ValidationError, match=r"backends\.azure_ml\.job_tier: `spot: true` asks for the spot tier"):
        compile_(job(spot=True, backends={"azure_ml": {"job_tier": "standard"}}))


def test_registered_environment_replaces_the_image(compile_, to_rest):
    compiled = compile_(
        job(backends={"azure_ml": {"environment": "azureml:acpt-pytorch-2.2@latest", "experiment_name": "exp"}})
    )
    assert compiled.request["environment"] == "azureml:acpt-pytorch-2.2@latest"
    assert compiled.request["experiment_name"] == "exp"
    curated = compile_(
        job(backends={"azure_ml": {"environment": "AzureML-tensorflow-2.4-ubuntu18.04-py37-cuda11-gpu@latest"}})
    )
    assert curated.request["environment"] == "azureml:AzureML-tensorflow-2.4-ubuntu18.04-py37-cuda11-gpu@latest"
    assert curated.notes(NoteKind.APPROXIMATED)
    assert to_rest(curated.request)["environmentId"] == "AzureML-tensorflow-2.4-ubuntu18.04-py37-cuda11-gpu@latest"


def test_code_and_inputs_pass_through(compile_, to_rest, tmp_path):
    (tmp_path / "src").mkdir()  # load_job checks that a local code folder exists
    compiled = compile_(job(command="python train.py --epochs ${{inputs.epochs}} --data ${{inputs.data}}",
                            args=[], backends={"azure_ml": {"code": "./src", "inputs": {
                                "epochs": 10, "data": {"type": "uri_folder", "path": "azureml:cifar:1"}}}}))
    assert compiled.request["command"] == "python train.py --epochs ${{inputs.epochs}} --data ${{inputs.data}}"
    rest = to_rest(compiled.request)
    assert rest["inputs"]["epochs"] == {"jobInputType": "literal", "value": "10"}
    assert rest["codeId"].endswith("src")


def test_args_are_shell_quoted(compile_, to_rest):
    compiled = compile_(job(args=["--name", "two words", "--glob", "*.txt"]))
    assert compiled.request["command"] == "python -m trainer.task --name 'two words' --glob '*.txt'"
    assert to_rest(compiled.request)["command"] == compiled.request["command"]


def test_missing_image_is_a_validation_error(compile_):
    with pytest.raises(ValidationError, match=r"^image: "):
        compile_(job(image=None))


@pytest.mark.parametrize("fields", [{"command": [], "args": []}, {"command": [], "args": ["--epochs", "3"]}])
def test_a_job_without_a_command_cannot_run_the_images_entrypoint(fields, compile_):
    with pytest.raises(UnsupportedFeatureError) as info:
        compile_(job(**fields))
    assert info.value.subject == "command" and info.value.exit_code == 3


@pytest.mark.parametrize("key, value", [("shm_size", "lots"), ("job_tier", "gold"), ("priority", "urgent"),
                                        ("credential", "magic"), ("retry_attempts", 0)])
def test_bad_settings_name_their_path(key, value, compile_):
    with pytest.raises(ValidationError, match=rf"backends\.azure_ml\.{key}: "):
        compile_(job(backends={"azure_ml": {key: value}}))


def test_disk_is_dropped_with_a_note(compile_):
    compiled = compile_(job(primary={"disk_gb": 500}))
    assert [n.field for n in compiled.notes(NoteKind.DROPPED)] == ["primary.disk_gb"]


def test_catalog_is_sorted_and_consistent():
    names = [s.name for s in catalog.SKUS]
    assert names == sorted(names)
    for sku in catalog.SKUS:
        assert not sku.infiniband or sku.rdma  # SR-IOV InfiniBand SKUs are RDMA SKUs
        assert (sku.gpus == 0) == (sku.accelerator is None)


def test_recovery_is_left_to_the_watcher_and_the_request_stays_valid(compile_, to_rest):
    compiled = compile_(job(spot=True, workers={"replicas": 1}, recovery={"max_restarts": 2, "move": True}))
    to_rest(compiled.request)  # the SDK's own schema takes it
    (note,) = [str(n) for n in compiled.diagnostics if n.field == "recovery"]
    assert "nothing natively" in note and "up to 2 times" in note and "next profile" in note
