"""Import: command job YAML -> portable job, including the seed page's examples, and round trips."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist.kit import (
    Accelerator,
    Framework,
    Interconnect,
    JobInput,
    JobOutput,
    NoteKind,
    OmnidistError,
    Role,
    UnsupportedFeatureError,
    ValidationError,
    dump_yaml,
    job_from_dict,
    needs_shell,
    parse_yaml,
)
from omnidist.testing import strategies
from omnidist_azure_ml import AzureMLBackend, catalog

BACKEND = AzureMLBackend()

# The seed page's PyTorch example (Python SDK `command(...)`), written as the job file
# `az ml job create --file` takes.
SEED_PYTORCH = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
code: ./src
command: >-
  python train.py --data-dir ${{inputs.cifar}} --epochs ${{inputs.epoch}} --batch-size ${{inputs.batchsize}}
  --workers ${{inputs.workers}} --learning-rate ${{inputs.lr}} --momentum ${{inputs.momen}}
  --print-freq ${{inputs.prtfreq}} --model-dir ${{inputs.output}}
inputs:
  cifar:
    type: uri_folder
    path: azureml:azureml_stoic_cartoon_wgb3lgvgky_output_data_cifar:1
  epoch: 10
  batchsize: 64
  workers: 2
  lr: 0.01
  momen: 0.9
  prtfreq: 200
  output: ./outputs
environment: azureml:AzureML-pytorch-1.9-ubuntu18.04-py37-cuda11-gpu:6
compute: azureml:gpu-cluster
resources:
  instance_count: 2
distribution:
  type: PyTorch
  process_count_per_instance: 1
"""

# The seed page's TensorFlow example, including its stray `added_property`.
SEED_TENSORFLOW = """
type: command
code: ./src
command: python main.py --epochs ${{inputs.epochs}} --model-dir ${{inputs.model_dir}}
inputs:
  epochs: 1
  model_dir: outputs/keras-model
environment: azureml:AzureML-tensorflow-2.4-ubuntu18.04-py37-cuda11-gpu@latest
compute: azureml:cpu-cluster
resources:
  instance_count: 2
distribution:
  type: tensorflow
  parameter_server_count: 1
  worker_count: 2
  added_property: 7
display_name: tensorflow-mnist-distributed-example
experiment_name: tensorflow-mnist-distributed-example
description: Train a basic neural network with TensorFlow on the MNIST dataset, distributed via TensorFlow.
"""


def load(text: str):
    return BACKEND.import_with_notes(parse_yaml(text))


def test_seed_pytorch_example():
    job, notes = load(SEED_PYTORCH)
    assert job.framework is Framework.PYTORCH
    assert job.workers.replicas == 1 and job.primary.accelerator is None
    assert job.command[:4] == ("python", "train.py", "--data-dir", "${{inputs.cifar}}")
    block = job.backends["azure_ml"]
    assert block["compute"] == "gpu-cluster"
    assert block["environment"] == "azureml:AzureML-pytorch-1.9-ubuntu18.04-py37-cuda11-gpu:6"
    assert job.code == "./src" and job.inputs["epoch"].value == 10 and "code" not in block
    assert job.image is None and job.name == "azure-ml-job"
    assert {n.field for n in notes} >= {"name", "primary.accelerator"}


def test_seed_tensorflow_example(tmp_path, to_rest):
    job, notes = load(SEED_TENSORFLOW)
    assert job.framework is Framework.TENSORFLOW
    assert job.name == "tensorflow-mnist-distributed-example"
    assert job.workers.replicas == 1 and job.parameter_servers.replicas == 1
    assert (
        job.backends["azure_ml"]["environment"] == "azureml:AzureML-tensorflow-2.4-ubuntu18.04-py37-cuda11-gpu@latest"
    )
    assert [n.field for n in notes if n.kind is NoteKind.DROPPED] == ["distribution.added_property"]
    assert job.description
    (tmp_path / "job" / job.code).mkdir(parents=True)  # the code folder, beside the job file
    job = attrs.evolve(job, source=str(tmp_path / "job" / "job.yml"))
    compiled = BACKEND.compile(job, BACKEND.settings_type(**job.backends["azure_ml"]))
    assert compiled.request["distribution"] == {"type": "tensorflow", "worker_count": 2, "parameter_server_count": 1}
    (tmp_path / "src").mkdir()
    assert to_rest(compiled.request)["distribution"]["distributionType"] == "TensorFlow"


@pytest.mark.parametrize("kind, framework", [("PyTorch", "pytorch"), ("MPI", "horovod"), ("mpi", "horovod"),
                                             ("TensorFlow", "tensorflow"), ("pytorch", "pytorch")])
def test_distribution_and_job_type_are_case_insensitive(kind, framework):
    job, _ = load(f"type: Command\ncommand: python t.py\nenvironment: {{image: x.example/t:1}}\n"
                  f"resources: {{instance_count: 3, instance_type: Standard_ND96isr_H100_v5}}\n"
                  f"distribution: {{type: {kind}, process_count_per_instance: 8}}\n")
    assert job.framework.value == framework
    assert job.image == "x.example/t:1"
    assert job.primary.accelerator == Accelerator(type="H100", count=8)
    assert job.workers.replicas == 2 and job.interconnect is Interconnect.INFINIBAND
    assert job.processes_per_node == "auto"


def test_no_distribution_is_custom_and_unknown_skus_stay_in_the_block():
    job, _ = load("command: bash run.sh\nenvironment: {image: x.example/t:1}\n"
                  "resources: {instance_type: Standard_Z9, shm_size: 8g, docker_args: --ipc=host}\n"
                  "limits: {timeout: 3600}\nqueue_settings: {job_tier: Spot, priority: low}\ntags: {a: b}\n")
    assert job.framework is Framework.CUSTOM and job.workers is None
    assert job.spot and job.timeout == 3600 and job.labels == {"a": "b"}
    assert job.backends["azure_ml"] == {"instance_type": "Standard_Z9", "shm_size": "8g", "docker_args": "--ipc=host",
                                        "priority": "low"}


def test_hints_and_infiniband_defaults_are_stripped_but_user_values_kept():
    job, _ = load(
        "command: python t.py\nenvironment: {image: x.example/t:1}\n"
        "resources: {instance_count: 2, instance_type: Standard_ND96asr_v4}\n"
        "distribution: {type: pytorch, process_count_per_instance: 8}\n"
        "environment_variables: {OMNIDIST_FRAMEWORK: deepspeed, OMNIDIST_JOB_NAME: x, NCCL_IB_PCI_RELAXED_ORDERING: '1',"
        " NCCL_TOPO_FILE: /opt/microsoft/ndv4-topo.xml, NCCL_SOCKET_IFNAME: ib0, MINE: '2'}\n"
    )
    assert job.framework is Framework.DEEPSPEED  # the hint says which pytorch-distribution framework
    assert job.env == {"NCCL_SOCKET_IFNAME": "ib0", "MINE": "2"}


def test_shell_commands_are_kept_whole():
    job, notes = load("command: cd src && python t.py --out $AZUREML_OUTPUT\nenvironment: {image: x.example/t:1}\n")
    assert job.command == ("bash", "-c", "cd src && python t.py --out $AZUREML_OUTPUT")
    assert [n.field for n in notes if n.kind is NoteKind.APPROXIMATED] == ["command"]
    plain, _ = load("command: python t.py --name 'two words' '&'\nenvironment: {image: x.example/t:1}\n")
    assert plain.command == ("python", "t.py", "--name", "two words", "&")


def test_multi_line_commands_keep_every_line():
    """Two commands on two lines stay two commands (not one argv that echoes the second)."""
    job, notes = load('command: |\n  echo "--iris-csv: ${{inputs.iris_csv}}"\n  python hello.py --iris-csv '
                      '${{inputs.iris_csv}}\nenvironment: {image: x.example/t:1}\n')
    assert job.command == ("bash", "-c", 'echo "--iris-csv: ${{inputs.iris_csv}}"\n'
                                         "python hello.py --iris-csv ${{inputs.iris_csv}}")
    assert "2 lines" in next(n.message for n in notes if n.field == "command")


@pytest.mark.parametrize("command", [
    "pip install -r requirements.txt && python main.py",
    "cd src; python t.py",
    "source /usr/venv/bin/activate Rscript train.R",
    "python t.py --files data/*.csv",
    "FOO=1 python t.py",
    "python index.py \\\n --data x",
])
def test_what_only_a_shell_runs_the_same_is_kept_whole(command):
    job, _ = load(f"command: {json.dumps(command)}\nenvironment: {{image: x.example/t:1}}\n")
    assert job.command == ("bash", "-c", command)


def test_references_with_spaces_become_one_word():
    job, _ = load("command: python t.py --data ${{ inputs.data }}\nenvironment: {image: x.example/t:1}\n")
    assert job.command == ("python", "t.py", "--data", "${{inputs.data}}")


@pytest.mark.parametrize("text, field", [
    ("command: x\nservices: {ssh: {type: ssh}}\n", "services"),
    ("command: x\nidentity: {type: managed}\n", "identity"),
    ("command: x\nresources: {locations: [westus]}\n", "resources.locations"),
    ("command: x\nenvironment: {image: a, conda_file: env.yml}\n", "environment.conda_file"),
    ("command: x\nenvironment: {build: {path: ./ctx}}\n", "environment.build"),
    ("command: x\nproperties: {a: b}\n", "properties"),
])
def test_extras_the_job_runs_without_are_dropped_with_a_note(text, field):
    job, notes = load(text)
    assert [n.field for n in notes if n.kind is NoteKind.DROPPED] == [field]


@pytest.mark.parametrize("text, feature", [
    ("type: pipeline\njobs: {}\n", "job type pipeline"),
    ("command: x\ndistribution: {type: ray}\n", "distribution type 'ray'"),
])
def test_unsupported_native_features(text, feature):
    with pytest.raises(UnsupportedFeatureError) as info:
        load(text)
    assert info.value.subject == feature and info.value.hint
    assert str(info.value).startswith(f"the portable job cannot hold {feature}")


def test_a_gpu_cluster_of_unknown_size_is_a_change_not_a_hint():
    def kinds(text):
        return {
            (n.kind, n.field) for n in load(f"command: x\nenvironment: {{image: a}}\n{text}")[1] if n.field != "name"
        }

    assert kinds("compute: azureml:gpu-v100-cluster\n") == {(NoteKind.CHANGED, "primary.accelerator")}
    assert kinds("compute: low-pri-nc24s\n") == {(NoteKind.CHANGED, "primary.accelerator")}
    assert kinds("resources: {instance_type: Standard_NC6}\n") == {(NoteKind.CHANGED, "primary.accelerator"),
                                                                   (NoteKind.APPROXIMATED, "resources.instance_type")}
    assert kinds("compute: azureml:cpu-cluster\n") == {(NoteKind.HINT, "primary.accelerator")}


def test_import_records_the_size_of_a_known_sku():
    job, _ = load("command: x\nenvironment: {image: a}\nresources: {instance_type: Standard_E16s_v3}\n")
    assert (job.primary.cpus, job.primary.memory_gb, job.primary.accelerator) == (16, 128, None)


def test_retired_gpus_are_replaced_with_a_change():
    job, notes = load("command: x\nenvironment: {image: a}\nresources: {instance_type: Standard_NC24r}\n")
    assert job.primary.accelerator == Accelerator(type="T4", count=4)
    assert "instance_type" not in job.backends.get("azure_ml", {})  # the K80 SKU no longer fits the job
    assert [(n.kind, n.field) for n in notes if n.field != "name"] == [(NoteKind.CHANGED, "resources.instance_type")]


@pytest.mark.parametrize("text, path", [
    ("type: sweep_job\ncommand: x\n", "type"),
    ("command: x\ninputs: {n: {type: string, default: a}}\n", "inputs.n.default"),
    ("command: x\ninputs: {d: {type: uri_folder, path: p, mode: rw_mount}}\n", "inputs.d.mode"),
    ("command: x\ninputs: {d: {folder: p}}\n", "inputs.d.folder"),
    ("command: x\nenvironment: {image: a, gpu: 1}\n", "environment.gpu"),
])
def test_what_load_job_refuses_is_invalid_input(text, path):
    with pytest.raises(ValidationError) as info:
        load(text)
    assert info.value.problems[0].path == path


# --- what the SDK writes ----------------------------------------------------------------------------

def block_of(job):
    return job.backends["azure_ml"]


def test_an_sdk_command_object_is_read_through_its_own_serialization(tmp_path):
    """``azure.ai.ml.command(...)`` (a pipeline node) and its ``CommandJob``, given to
    ``import_native``, import the same as the YAML ``job.dump()`` writes for them."""
    from azure.ai.ml import Input, Output, command

    import omnidist

    node = command(command="python train.py --lr ${{inputs.lr}} --data ${{inputs.data}}", code="./src",
                   inputs={"lr": 0.1, "data": Input(type="uri_folder", path="azureml://datastores/d/paths/p")},
                   outputs={"model": Output(type="uri_folder")}, environment="azureml:acpt-pytorch:3",
                   compute="gpu-cluster", instance_count=2, display_name="sdk-job", experiment_name="exp",
                   distribution={"type": "pytorch", "process_count_per_instance": 4},
                   environment_variables={"A": "1"}, tags={"team": "vision"}, shm_size="8g", timeout=3600)
    from_node = omnidist.import_native(node)
    from_job = omnidist.import_native(node._to_job(), backend="azure_ml")
    dumped = tmp_path / "job.yml"
    node._to_job().dump(dumped)
    from_file = omnidist.import_native(dumped)
    node_file = tmp_path / "node.yml"
    node.dump(node_file)  # the node's own dump keeps command and code in its `component`
    assert from_node == from_job == from_file
    from_node_file = omnidist.import_native(node_file)  # (the SDK leaves experiment_name out of a node's dump)
    assert from_node_file.backends["azure_ml"] == {
        k: v for k, v in block_of(from_node).items() if k != "experiment_name"
    }
    assert attrs.evolve(from_node_file, backends={}) == attrs.evolve(from_node, backends={})
    assert from_node.command == ("python", "train.py", "--lr", "${{inputs.lr}}", "--data", "${{inputs.data}}")
    assert (from_node.name, from_node.workers.replicas, from_node.processes_per_node) == ("sdk-job", 1, 4)
    assert (from_node.env, from_node.labels, from_node.timeout) == ({"A": "1"}, {"team": "vision"}, 3600)
    block = from_node.backends["azure_ml"]
    assert (from_node.code, block["compute"], block["shm_size"]) == ("./src", "gpu-cluster", "8g")
    assert from_node.inputs == {"lr": JobInput(value=0.1), "data": JobInput(uri="azureml://datastores/d/paths/p")}
    assert from_node.outputs == {"model": JobOutput()}


@pytest.mark.parametrize("text, path", [
    ("environment: {image: a}\n", "command"),
    ("command: x\nresources: {instance_count: two}\n", "resources.instance_count"),
    ("command: x\nresources: {instance_count: 0}\n", "resources.instance_count"),
    ("command: x\nresources: {gpus: 4}\n", "resources.gpus"),
    ("command: x\nlimits: {timeout: soon}\n", "limits.timeout"),
    ("command: x\ndistribution: {type: pytorch, process_count_per_instance: -1}\n", "distribution.process_count_per_instance"),
    ("command: x\nenvironment: {name: only}\n", "environment.image"),
    ("command: x\nenvironment: [a]\n", "environment"),
    ("command: \"python 'unclosed\"\n", "command"),
    ("command: x\nenvironment_variables: {A: [1]}\n", "environment_variables.A"),
    ("command: x\nresources: []\n", "resources"),
])
def test_malformed_native_input_names_the_path(text, path):
    with pytest.raises(ValidationError) as info:
        load(text)
    assert any(p.path == path for p in info.value.problems), str(info.value)


def test_not_a_mapping():
    with pytest.raises(ValidationError):
        BACKEND.import_native(["command"])


# --- round trips --------------------------------------------------------------------------------

offered = [a for a in catalog.offered_accelerators()]


def _plain(argv):
    """Azure runs the command in a shell: a first word that is a builtin (``.``) or an assignment
    (``A=1``) means something else there, and imports as ``bash -c`` — not a round trip."""
    return argv if argv and not needs_shell(argv[0]) else None

primaries = st.builds(
    Role, replicas=st.just(1),
    accelerator=st.none() | strategies.accelerators_of(offered, (1, 2, 4, 8)),
    cpus=st.none() | st.sampled_from([2, 8, 16]), memory_gb=st.none() | st.sampled_from([8, 64]),
    image=st.none() | strategies.images, command=st.none() | strategies.argv, args=st.none() | strategies.argv,
    env=strategies.envs,
)
blocks = st.fixed_dictionaries({}, optional={
    "compute": strategies.names,
    "environment": st.sampled_from(["azureml:acpt-pytorch:3", "azureml:AzureML-tf-2.4@latest"]),
    # (a retired GPU is replaced on import, a reported change: not a round trip)
    "instance_type": st.sampled_from([s.name for s in catalog.SKUS if s.accelerator != "K80"]),
    "shm_size": st.sampled_from(["8g", "64g"]),
    "docker_args": st.just("--ipc=host"),
    "experiment_name": strategies.names,
    "job_tier": st.sampled_from(["basic", "standard", "premium"]),
    "priority": st.sampled_from(["low", "medium", "high"]),
}).map(lambda block: {"azure_ml": block} if block else {})
expressible = strategies.jobs(
    primary=primaries,
    workers=st.none() | st.builds(Role, replicas=st.integers(0, 4)),
    parameter_servers=st.none() | st.builds(Role, replicas=st.integers(1, 2)),
    evaluators=st.none(), reduction_servers=st.none(), backends=blocks,
).map(lambda job: attrs.evolve(
    job,
    parameter_servers=job.parameter_servers if job.framework is Framework.TENSORFLOW else None,
    command=_plain(job.command or job.primary.command) or ("python", "train.py"),
    image=job.image or job.primary.image or ("x.example/t:1" if "environment" not in job.backends.get("azure_ml", {})
                                             else None),
    backends={"azure_ml": {k: v for k, v in job.backends.get("azure_ml", {}).items()
                           if not (job.spot and k == "job_tier")}},
))


def _compile(job):
    return BACKEND.compile(job, BACKEND.settings_type(**job.backends.get("azure_ml", {})))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(job=expressible)
def test_compile_import_compile_is_stable(job, sdk_check):
    try:
        first = _compile(job)
    except OmnidistError:
        assume(False)
    sdk_check(first.request)
    native = parse_yaml(str(first))  # through the YAML text a user would keep
    again = BACKEND.import_native(native)
    assert _compile(again).request == first.request


def test_round_trip_of_each_framework(sdk_check):
    for framework in Framework:
        data = {"name": "rt", "framework": framework.value, "image": "x.example/t:1", "command": ["python", "t.py"],
                "primary": {"accelerator": "A100:8"}, "workers": {"replicas": 1}, "processes_per_node": 4}
        if framework is Framework.TENSORFLOW:
            data["parameter_servers"] = {"replicas": 2}
        job = job_from_dict(data)
        first = _compile(job)
        sdk_check(first.request)
        again = BACKEND.import_native(first.request)
        assert again.framework is framework and again.processes_per_node == 4
        assert _compile(again).request == first.request


def test_round_trip_of_an_omnidist_launch_job(sdk_check):
    """Compile asks Azure for one process per node; the hint keeps the job's processes_per_node."""
    data = {"name": "rt", "framework": "pytorch", "image": "x.example/t:1", "command": ["omnidist", "launch", "--",
            "t.py"], "primary": {"accelerator": "A100:8"}, "workers": {"replicas": 1}, "processes_per_node": 4}
    first = _compile(job_from_dict(data))
    sdk_check(first.request)
    assert first.request["distribution"]["process_count_per_instance"] == 1
    again = BACKEND.import_native(first.request)
    assert again.processes_per_node == 4 and again.command == ("omnidist", "launch", "--", "t.py")
    assert _compile(again).request == first.request


def test_inputs_outputs_description_and_code_become_the_jobs_own():
    job, notes = load("""
command: python train.py --data ${{inputs.data}} --vocab ${{inputs.vocab}} --epochs ${{inputs.epochs}} --out ${{outputs.model}}
description: Fine-tune on MNLI
code: ./src
inputs:
  data: {type: uri_folder, path: "azureml://datastores/ws/paths/mnli", mode: ro_mount}
  vocab: {type: uri_file, path: "azureml://datastores/ws/paths/vocab.txt", mode: download}
  epochs: 10
outputs:
  model: {type: uri_folder}
  ckpt: {type: uri_folder, path: "azureml://datastores/ws/paths/ckpt", mode: rw_mount}
""")
    assert job.description == "Fine-tune on MNLI" and job.code == "./src"
    assert job.inputs == {"data": JobInput(uri="azureml://datastores/ws/paths/mnli"),
                          "vocab": JobInput(uri="azureml://datastores/ws/paths/vocab.txt", mode="download"),
                          "epochs": JobInput(value=10)}
    assert job.outputs == {"model": JobOutput(), "ckpt": JobOutput(uri="azureml://datastores/ws/paths/ckpt")}
    assert "azure_ml" not in job.backends
    assert not [n for n in notes if n.kind is NoteKind.DROPPED]


@pytest.mark.parametrize("value, field, said", [
    ({"type": "mltable", "path": "azureml:churn:1"}, "inputs.x.type", "mltable"),
    ({"type": "uri_folder", "path": "azureml:churn:1", "mode": "direct"}, "inputs.x.mode", "direct became ro_mount"),
    ("https://acct.blob.core.windows.net/c/iris.csv", "inputs.x", "literal text on Azure ML"),
])
def test_what_the_portable_input_has_no_word_for_is_noted(value, field, said):
    job, notes = load(dump_yaml({"command": "python t.py ${{inputs.x}}", "inputs": {"x": value}}))
    assert job.inputs["x"].uri
    assert any(n.field == field and said in n.message for n in notes), notes


def test_compile_exports_are_not_read_back_into_the_command():
    job, _ = load('command: export OMNIDIST_INPUT_d="${{inputs.d}}"; python t.py ${{inputs.d}}\n'
                  'inputs: {d: {path: "azureml://datastores/ws/paths/d"}}\n')
    assert job.command == ("python", "t.py", "${{inputs.d}}")


@pytest.mark.parametrize("name, framework, version", [
    ("acpt-pytorch-2.2-cuda12.1", Framework.PYTORCH, "2.2"),
    ("tensorflow-2.16-cuda12", Framework.TENSORFLOW, "2.16"),
])
def test_a_curated_environment_omnidist_names_is_a_framework_version(name, framework, version):
    distribution = "pytorch" if framework is Framework.PYTORCH else "tensorflow"
    native = {"type": "command", "command": "python train.py", "resources": {"instance_count": 2},
              "environment": f"azureml://registries/azureml/environments/{name}/labels/latest",
              "distribution": {"type": distribution}}
    job, _ = BACKEND.import_with_notes(native)
    assert (job.framework, job.framework_version, job.image) == (framework, version, None)
    assert "environment" not in job.backends.get("azure_ml", {})
    compiled = omnidist.compile(job, backend="azure_ml", settings={})
    assert compiled.request["environment"] == native["environment"]


def test_other_curated_environments_stay_registered_environments():
    native = {"type": "command", "command": "python train.py", "distribution": {"type": "pytorch"},
              "environment": "azureml:AzureML-pytorch-1.9-ubuntu18.04-py37-cuda11-gpu@latest"}
    job, _ = BACKEND.import_with_notes(native)
    assert job.framework_version is None
    assert job.backends["azure_ml"]["environment"] == native["environment"]
