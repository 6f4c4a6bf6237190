"""Platform-bound references in a job that moves (SPEC §10): each platform's declaration
(``BOUND`` in its runtime module) is honoured by every migration, rewritten where a portable form
exists and reported ``changed`` where none does; never ``exact``."""

from __future__ import annotations

import json

import pytest

import omnidist
from omnidist.migration.references import rewrite_bound_references
from omnidist.model.job import job_from_dict
from omnidist.runtime import platforms
from omnidist.runtime.platforms import Bound

VERTEX_SPEC = {"displayName": "gcs-job", "jobSpec": {"workerPoolSpecs": [{
    "machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
    "replicaCount": "1",
    "containerSpec": {"imageUri": "gcr.io/p/t:1", "command": ["python", "train.py"],
                      "args": ["--data=/gcs/bkt/data/train", "--model-dir", "/gcs/bkt/out/model",
                               "--ckpt", "$AIP_CHECKPOINT_DIR", "--save", "$AIP_MODEL_DIR"],
                      "env": [{"name": "EVAL", "value": "/gcs/bkt/data/eval"}]}}]}}
SETTINGS = {"ai_platform": {"staging_bucket": "gs://stage"},
            "azure_ml": {"data_map": {"gs://bkt/": "azureml://datastores/d/paths/"}},
            "kubernetes": {"base_output_dir": "gs://bkt/k8s-out"}}


def entries(report, fidelity):
    found: dict[str, str] = {}
    for e in report.entries:
        if e.fidelity.value == fidelity:
            found[e.field] = f"{found.get(e.field, '')} {e.message}".strip()
    return found


@pytest.mark.parametrize("target", ["ai_platform", "azure_ml", "kubernetes"])
def test_vertex_fuse_paths_and_folders_are_rewritten_for_every_target(isolated, target):
    compiled, report = omnidist.migrate(VERTEX_SPEC, source="vertex", target=target, framework="pytorch",
                                        settings=SETTINGS[target])
    text = json.dumps(compiled.request)
    assert "/gcs/" not in text and "$AIP_MODEL_DIR" not in text  # nothing that exists only on Vertex is left
    approximated = entries(report, "approximated")
    assert "gs://bkt/data/train" in approximated["inputs.data"] and "read there" in approximated["inputs.data"]
    assert "written there" in approximated["outputs.model_dir"]  # --model-dir: the program writes there
    assert "inputs.eval" in approximated  # an env value too
    changed = entries(report, "changed")
    assert "$AIP_CHECKPOINT_DIR" in changed["args"] and "unset" in changed["args"]
    assert not [e for e in report.entries if e.fidelity.value == "exact" and "/gcs/" in e.message]


def test_what_the_target_has_itself_stays(isolated):
    """A /gcs/ path is Vertex's own: a legacy job that names one (it ran elsewhere) moving to Vertex keeps it."""
    job = job_from_dict({"name": "j", "framework": "pytorch", "image": "i", "command": ["python", "t.py"],
                         "args": ["--data", "/gcs/bkt/x"], "primary": {}})
    assert rewrite_bound_references(job, "vertex") == (job, [])
    moved, found = rewrite_bound_references(job, "azure_ml")
    assert moved.args == ("--data", "${{inputs.data}}") and moved.inputs["data"].uri == "gs://bkt/x"


@pytest.mark.parametrize(("text", "platform"), [("$(PET_NNODES)", "kubernetes"), ("${AZUREML_RUN_ID}", "azure_ml"),
                                                 ("$AZ_BATCH_HOST_LIST", "azure_ml"), ("/mnt/azureml/cr/j/1/x", "azure_ml")])
def test_references_with_no_portable_form_are_changed_naming_them(text, platform):
    job = job_from_dict({"name": "j", "framework": "pytorch", "image": "i", "command": ["python", "t.py"],
                         "env": {"WHERE": text}, "primary": {}})
    moved, found = rewrite_bound_references(job, "vertex")
    (entry,) = found
    assert entry.fidelity.value == "changed" and entry.field == "env.WHERE"
    assert text.split("/cr")[0] in entry.message and platform in entry.message
    assert moved.env == job.env


def test_a_new_platform_is_honoured_through_its_declaration_alone(monkeypatch):
    """A platform that declares its own mount and folder (as a new backend's runtime module would)
    is rewritten by every migration with no other change."""
    declared = {**platforms.bound(), "newcloud": Bound(mounts={"/data/s3/": "s3://"},
                                                       paths={"/opt/new/model": "${{outputs.model}}"})}
    monkeypatch.setattr(platforms, "bound", lambda: declared)
    job = job_from_dict({"name": "j", "framework": "pytorch", "image": "i", "command": ["python", "t.py"],
                         "args": ["--train", "/data/s3/bkt/train", "--out", "/opt/new/model"], "primary": {}})
    moved, found = rewrite_bound_references(job, "vertex")
    assert moved.args == ("--train", "${{inputs.train}}", "--out", "${{outputs.model}}")
    assert moved.inputs["train"].uri == "s3://bkt/train" and moved.outputs["model"].uri is None
    assert {e.fidelity.value for e in found} == {"approximated"}
