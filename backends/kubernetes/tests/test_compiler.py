"""Compile: portable job -> PyTorchJob / TFJob / MPIJob manifests, checked against golden files,
the CRDs' schema, the operators' admission rules and the ``kubernetes`` client's models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from omnidist.kit import NoteKind, UnsupportedFeatureError, ValidationError
from omnidist_kubernetes.testing import check_manifest, compile_job

GOLDEN = Path(__file__).parent / "golden"

BASE = {"name": "cassava", "framework": "pytorch", "image": "trainer.example/t:1.0",
        "command": ["python", "-m", "trainer.task"], "args": ["--epochs", "10"]}


def job(**fields):
    return {**BASE, "primary": {}, **fields}


GOLDEN_CASES = {
    "pytorchjob": job(primary={"accelerator": "A100:8", "cpus": 48, "memory_gb": 340}, workers={"replicas": 3},
                      spot=True, timeout="24h", labels={"team": "vision"}, env={"NCCL_DEBUG": "INFO"},
                      description="Fine-tune on cassava",
                      backends={"kubernetes": {"namespace": "ml", "queue": "team-a", "service_account": "trainer",
                                               "image_pull_secrets": ["registry"]}}),
    "tfjob": job(framework="tensorflow", primary={"accelerator": "T4:1"}, workers={"replicas": 2},
                 parameter_servers={"replicas": 2, "cpus": 8, "memory_gb": 52}, evaluators={"replicas": 1},
                 backends={"kubernetes": {"node_selectors": {"T4": {"nvidia.com/gpu.product": "Tesla-T4"}},
                                          "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                           "effect": "NoSchedule"}]}}),
    "mpijob": job(framework="horovod", primary={"accelerator": "V100:4", "disk_gb": 200}, workers={"replicas": 1},
                  env={"HOROVOD_FUSION_THRESHOLD": "134217728"}),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_manifests(case, compile_):
    compiled = compile_(GOLDEN_CASES[case])
    path = GOLDEN / f"{case}.yaml"
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        path.write_text(str(compiled), encoding="utf-8")
    assert str(compiled) == path.read_text(encoding="utf-8")
    assert compiled.format == "yaml" and yaml.safe_load(str(compiled)) == compiled.request


def test_pytorchjob_carries_the_job(compile_):
    request = compile_(GOLDEN_CASES["pytorchjob"]).request
    assert (request["apiVersion"], request["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    assert request["metadata"] == {"name": "cassava", "namespace": "ml",
                                   "labels": {"team": "vision", "kueue.x-k8s.io/queue-name": "team-a"},
                                   "annotations": {"kubernetes.io/description": "Fine-tune on cassava"}}
    spec = request["spec"]
    assert spec["nprocPerNode"] == "8" and spec["runPolicy"] == {"activeDeadlineSeconds": 86400}
    master, worker = spec["pytorchReplicaSpecs"]["Master"], spec["pytorchReplicaSpecs"]["Worker"]
    assert (master["replicas"], worker["replicas"]) == (1, 3)
    pod = master["template"]["spec"]
    container = pod["containers"][0]
    assert container["name"] == "pytorch" and container["command"] == ["torchrun", "-m", "trainer.task"]
    assert container["resources"] == {"requests": {"cpu": "48", "memory": "340Gi"},
                                      "limits": {"memory": "340Gi", "nvidia.com/gpu": "8"}}
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
                                   "cloud.google.com/gke-spot": "true"}
    assert pod["tolerations"] == [{"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true",
                                   "effect": "NoSchedule"}]
    assert pod["serviceAccountName"] == "trainer" and pod["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert "OMNIDIST_ROLE" not in env and env["NCCL_DEBUG"] == "INFO"  # the replica type says the role
    assert "OMNIDIST_ROLE" not in {e["name"] for e in worker["template"]["spec"]["containers"][0]["env"]}


def test_pod_templates_become_the_clients_models(compile_):
    models = check_manifest(compile_(GOLDEN_CASES["pytorchjob"]).request)
    master = models["Master"]
    assert master.spec.containers[0].resources.limits["nvidia.com/gpu"] == "8"
    assert master.spec.node_selector["cloud.google.com/gke-accelerator"] == "nvidia-tesla-a100"
    assert master.spec.volumes[0].empty_dir.medium == "Memory"


def test_tfjob_has_every_replica_type(compile_):
    compiled = compile_(GOLDEN_CASES["tfjob"])
    specs = compiled.request["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "Worker": 2, "PS": 2, "Evaluator": 1}
    assert all(s["template"]["spec"]["containers"][0]["name"] == "tensorflow" for s in specs.values())
    assert specs["Chief"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "Tesla-T4"}
    assert "nodeSelector" not in specs["PS"]["template"]["spec"]  # a CPU role selects no GPU nodes
    assert specs["PS"]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "8", "memory": "52Gi"}, "limits": {"memory": "52Gi"}}
    assert "nprocPerNode" not in compiled.request["spec"]


def test_mpijob_launcher_runs_mpirun_over_every_slot(compile_):
    request = compile_(GOLDEN_CASES["mpijob"]).request
    spec = request["spec"]
    assert request["apiVersion"] == "kubeflow.org/v2beta1" and spec["slotsPerWorker"] == 4
    assert spec["runPolicy"] == {"cleanPodPolicy": "Running"}
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    argv = launcher["command"]
    assert argv[:argv.index("-np") + 2] == ["mpirun", "--allow-run-as-root", "-bind-to", "none", "-map-by", "slot",
                                            "-np", "8"]
    assert argv[-3:] == ["python", "-m", "trainer.task"] and launcher["args"] == ["--epochs", "10"]
    forwarded = [argv[i + 1] for i, a in enumerate(argv) if a == "-x"]
    assert {"PATH", "HOROVOD_FUSION_THRESHOLD", "OMNIDIST_FRAMEWORK"} <= set(forwarded)
    assert "OMNIDIST_ROLE" not in forwarded  # every rank shares the launcher's environment
    assert "resources" not in launcher  # the launcher only runs mpirun
    worker = spec["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2 and worker["restartPolicy"] == "Never"
    container = worker["template"]["spec"]["containers"][0]
    assert "command" not in container and "args" not in container  # mpi-operator runs sshd there
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert container["resources"]["requests"]["ephemeral-storage"] == "200Gi"


@pytest.mark.parametrize("framework", ["pytorch", "deepspeed", "custom"])
def test_torch_frameworks_are_pytorchjobs(framework, compile_):
    compiled = compile_(job(framework=framework, workers={"replicas": 1}))
    assert compiled.request["kind"] == "PyTorchJob"


def test_nproc_per_node_only_with_several_processes(compile_):
    assert "nprocPerNode" not in compile_(job(primary={"accelerator": "L4:1"})).request["spec"]
    plain = compile_(job(processes_per_node=4))
    assert plain.request["spec"]["nprocPerNode"] == "4"
    assert [n.kind for n in plain.diagnostics if n.field == "processes_per_node"] == [NoteKind.APPROXIMATED]
    master = plain.request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert master["command"][0] == "torchrun"  # the operator's PET_* variables wire it
    for command in (["torchrun", "train.py"], ["python", "-m", "torch.distributed.run", "t.py"],
                    ["omnidist", "launch", "--", "t.py"]):
        launched = compile_(job(processes_per_node=4, command=command))
        assert [n for n in launched.diagnostics if n.field == "processes_per_node"] == []



@pytest.mark.parametrize("command, launcher", [(["python", "-m", "trainer.task"], "torchrun …"),
                                               (["./train.sh"], "torchrun --no-python …")])
def test_the_launcher_note_names_the_launcher(command, launcher, compile_):
    compiled = compile_(job(processes_per_node=4, command=command))
    [note] = [n for n in compiled.diagnostics if n.field == "processes_per_node"]
    assert f"so it runs under `{launcher}` (the platform sets torchrun's defaults)" in note.message

def test_command_less_job_runs_the_image_entrypoint(compile_):
    request = compile_({**job(args=["--data", "gs://b/d"]), "command": []}).request
    container = request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert "command" not in container and container["args"] == ["--data", "gs://b/d"]


def test_dollar_signs_reach_the_program_unexpanded(compile_):
    request = compile_(job(command=["bash", "-c", "echo $(date) $$ $HOME"], args=[],
                           env={"GREETING": "$(USER) pays $$"})).request
    container = request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["command"][2] == "echo $$(date) $$$ $HOME"
    assert {e["name"]: e["value"] for e in container["env"]}["GREETING"] == "$$(USER) pays $$$"


def test_resources_are_quantity_strings(compile_):
    request = compile_(job(primary={"cpus": 0.5, "memory_gb": 1.5, "disk_gb": 20})).request
    resources = request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "500m", "memory": "1536Mi", "ephemeral-storage": "20Gi"},
                         "limits": {"memory": "1536Mi"}}


def test_node_selectors_setting_replaces_gkes(compile_):
    selected = compile_(job(primary={"accelerator": "H100:8"}),
                        node_selectors={"h100": {"node.kubernetes.io/instance-type": "p5.48xlarge"}})
    pod = selected.request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5.48xlarge"}
    bare = compile_(job(primary={"accelerator": "H100:8"}), node_selectors={})
    assert "nodeSelector" not in bare.request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert any(n.kind is NoteKind.HINT and "H100" in n.message for n in bare.diagnostics)
    gke = compile_(job(primary={"accelerator": "H100:8"}))
    assert any(n.kind is NoteKind.DEFAULTED and "nvidia-h100-80gb" in n.message for n in gke.diagnostics)


def test_job_wide_node_selector_and_spot_settings(compile_):
    request = compile_(job(spot=True), node_selector={"pool": "training"},
                       spot_node_selector={"karpenter.sh/capacity-type": "spot"}, spot_tolerations=[]).request
    pod = request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "training", "karpenter.sh/capacity-type": "spot"}
    assert "tolerations" not in pod


def test_run_policy_settings(compile_):
    spec = compile_(job(timeout="90m"), backoff_limit=3, clean_pod_policy="All", ttl_seconds_after_finished=600,
                    restart_policy="Never").request["spec"]
    assert spec["runPolicy"] == {"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 600,
                                 "activeDeadlineSeconds": 5400, "backoffLimit": 3}
    assert spec["pytorchReplicaSpecs"]["Master"]["restartPolicy"] == "Never"


def test_mpijob_refuses_restart_policies_mpi_operator_does_not_take():
    with pytest.raises(ValidationError, match=r"backends\.kubernetes\.restart_policy: mpi-operator accepts"):
        compile_job(job(framework="horovod"), restart_policy="ExitCode")


def test_long_names_are_cut_to_fit_every_pod_name(compile_):
    long = "a" * 60 + "-b"
    compiled = compile_(job(name=long, workers={"replicas": 12}))
    name = compiled.request["metadata"]["name"]
    assert len(name + "-worker-11") <= 63 and not name.endswith("-")
    assert any(n.field == "name" and n.kind is NoteKind.APPROXIMATED for n in compiled.diagnostics)


def test_data_inputs_are_uris_the_program_reads(compile_):
    compiled = compile_(job(inputs={"train": "gs://bkt/train", "epochs": 3},
                            outputs={"model": "default"},
                            args=["--data", "${{inputs.train}}", "--epochs", "${{inputs.epochs}}",
                                  "--out", "${{outputs.model}}"]),
                        base_output_dir="gs://bkt/out")
    container = compiled.request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["--data", "gs://bkt/train", "--epochs", "3", "--out", "gs://bkt/out/model"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["OMNIDIST_INPUT_train"] == "gs://bkt/train" and env["OMNIDIST_OUTPUT_model"] == "gs://bkt/out/model"


def test_module_runs_with_python_m(compile_):
    request = compile_({**job(module="trainer.task"), "command": []}).request
    container = request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-m", "trainer.task"]


# --- refusals ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("fields", "feature"), [
    ({"reduction_servers": {"replicas": "auto"}, "primary": {"accelerator": "V100:8"}, "workers": {"replicas": 1}},
     "reduction_servers"),
    ({"parameter_servers": {"replicas": 1}}, "parameter_servers"),
    ({"evaluators": {"replicas": 1}}, "evaluators"),
    ({"framework": "horovod", "evaluators": {"replicas": 1}}, "evaluators"),
    ({"interconnect": "infiniband", "primary": {"accelerator": "A100:8"}}, "interconnect: infiniband"),
    ({"code": "gs://bkt/code"}, "code"),
    ({"image": None, "framework_version": "2.4"}, "framework_version"),
    ({"framework": "horovod", "command": [], "args": []}, "command"),
    ({"framework": "horovod", "workers": {"replicas": 1, "accelerator": "T4:1"},
      "primary": {"accelerator": "V100:1"}}, "workers.accelerator"),
    ({"tuning": {"metric": {"name": "acc", "goal": "maximize"}, "parameters": {"lr": {"type": "double", "min": 0.1,
                                                                                   "max": 1}}, "max_trials": 2}},
     "tuning"),
])
def test_what_kubernetes_cannot_express_is_exit_3(fields, feature):
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_job(job(**fields))
    assert caught.value.subject == feature and caught.value.backend == "kubernetes"
    assert caught.value.exit_code == 3


def test_local_data_is_exit_3_naming_the_input():
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_job(job(inputs={"train": "./data"}, args=["${{inputs.train}}"]))
    assert caught.value.subject == "inputs.train" and "data_map" in str(caught.value)


def test_default_output_needs_a_base_output_dir():
    with pytest.raises(ValidationError, match=r"backends\.kubernetes\.base_output_dir"):
        compile_job(job(outputs={"model": "default"}))


@pytest.mark.parametrize(("labels", "key"), [
    ({"Team Name": "a"}, "Team Name"),
    ({"team": "has space"}, "team"),
    ({"team": "x" * 64}, "team"),
    ({"-team": "a"}, "-team"),
    ({"Bad_Prefix/team": "a"}, "Bad_Prefix/team"),
    ({"kueue.x-k8s.io/queue-name": "q"}, "kueue.x-k8s.io/queue-name"),
    ({"omnidist-request-id": "x"}, "omnidist-request-id"),
])
def test_invalid_labels_are_exit_2_naming_the_key(labels, key):
    with pytest.raises(ValidationError) as caught:
        compile_job(job(labels=labels))
    assert caught.value.exit_code == 2
    assert [p.path for p in caught.value.problems] == [f"labels.{key}"]


def test_valid_label_forms_pass(compile_):
    labels = {"app.kubernetes.io/name": "cassava", "team": "", "Version_2.1": "v2.1-rc_1"}
    assert compile_(job(labels=labels)).request["metadata"]["labels"] == labels


def test_no_image_is_exit_2():
    with pytest.raises(ValidationError, match="image: Kubernetes runs container images"):
        compile_job({**job(), "image": None})


@pytest.mark.parametrize(("settings", "path"), [
    ({"namespace": "ML_Team"}, "namespace"),
    ({"service_account": "Trainer!"}, "service_account"),
    ({"image_pull_secrets": ["ok", "Not OK"]}, "image_pull_secrets[1]"),
    ({"node_selectors": {"Z100": {}}}, "node_selectors.Z100"),
    ({"node_selectors": {"T4": {"bad key": "x"}}}, "node_selectors.T4.bad key"),
    ({"node_selector": {"pool": "has space"}}, "node_selector.pool"),
    ({"tolerations": [{"key": "a", "operator": "Maybe"}]}, "tolerations[0].operator"),
    ({"tolerations": [{"key": "a", "effect": "Sometimes"}]}, "tolerations[0].effect"),
    ({"tolerations": [{"key": "a", "colour": "red"}]}, "tolerations[0].colour"),
    ({"shm_size": "lots"}, "shm_size"),
    ({"restart_policy": "Sometimes"}, "restart_policy"),
    ({"clean_pod_policy": "Some"}, "clean_pod_policy"),
    ({"backoff_limit": -1}, "backoff_limit"),
    ({"queue": "not a label value"}, "queue"),
])
def test_bad_settings_are_exit_2_with_their_path(settings, path):
    with pytest.raises(ValidationError) as caught:
        compile_job(job(backends={"kubernetes": settings}))
    assert any(p.path == f"backends.kubernetes.{path}" for p in caught.value.problems), caught.value


def test_compile_and_import_load_no_kubernetes_client(tmp_path):
    import json
    import subprocess
    import sys

    path = tmp_path / "job.json"
    path.write_text(json.dumps(job(primary={"accelerator": "T4:1"}, workers={"replicas": 1})))
    probe = ("import json, sys; import omnidist; "
             f"request = omnidist.compile({str(path)!r}, backend='kubernetes').request; "
             "omnidist.import_native(request, backend='kubernetes'); print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert [m for m in json.loads(out.stdout) if m.split(".")[0] in ("kubernetes", "urllib3")] == []


def test_recovery_restarts_signalled_replicas_with_exit_code_and_caps_backoff(compile_):
    compiled = compile_(job(workers={"replicas": 2}, spot=True, recovery={"max_restarts": 5}))
    check_manifest(compiled.request)
    spec = compiled.request["spec"]
    assert spec["runPolicy"]["backoffLimit"] == 5
    assert {s["restartPolicy"] for s in spec["pytorchReplicaSpecs"].values()} == {"ExitCode"}
    (note,) = [str(n) for n in compiled.diagnostics if n.field == "recovery"]
    assert "restartPolicy ExitCode" in note and "at most 5 times" in note
    assert "after capacity, up to 5 times" in note  # preemption and node loss are the operator's


def test_recovery_of_the_programs_failure_is_on_failure_and_the_users_settings_win(compile_):
    spec = compile_(job(recovery={"on": ["failure", "preemption"]})).request["spec"]
    assert spec["pytorchReplicaSpecs"]["Master"]["restartPolicy"] == "OnFailure"
    spec = compile_(job(recovery={"max_restarts": 1}), restart_policy="Never", backoff_limit=9).request["spec"]
    assert (spec["pytorchReplicaSpecs"]["Master"]["restartPolicy"], spec["runPolicy"]["backoffLimit"]) == ("Never", 9)


def test_an_mpijob_with_recovery_leaves_it_to_the_watcher(compile_):
    compiled = compile_(job(framework="horovod", recovery={}))
    check_manifest(compiled.request)
    assert "backoffLimit" not in compiled.request["spec"].get("runPolicy", {})
    assert any("nothing natively" in str(n) for n in compiled.diagnostics if n.field == "recovery")
