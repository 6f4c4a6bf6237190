"""Rules every backend shares for code and data (omnidist/data.py) and the ``data_map`` setting."""

from __future__ import annotations

import pytest

from omnidist import config
from omnidist.backend.values import NoteKind
from omnidist.compiler import code_data as data
from omnidist.errors import ValidationError
from omnidist.model.job import DistributedJob


def job(**fields) -> DistributedJob:
    return DistributedJob(**{"name": "a", "framework": "pytorch", **fields})


def test_the_longest_prefix_wins():
    mapping = {"gs://b/": "azureml://datastores/ds/paths/", "gs://b/mnli/": "azureml://datastores/mnli/paths/"}
    assert data.rewrite("gs://b/mnli/train", mapping) == "azureml://datastores/mnli/paths/train"
    assert data.rewrite("gs://b/other", mapping) == "azureml://datastores/ds/paths/other"
    assert data.rewrite("gs://c/x", mapping) is None


def test_apply_data_map_rewrites_inputs_outputs_and_code_with_a_note_each():
    before = job(code="gs://b/src", inputs={"train": {"uri": "gs://b/t", "mode": "download"}, "n": 3, "u": "https://x/y"},
                 outputs={"m": "default", "c": {"uri": "gs://b/c"}})
    after, notes = data.apply_data_map(before, {"gs://b/": "/data/b/"})
    assert after.code == "/data/b/src" and after.inputs["train"].uri == "/data/b/t"
    assert after.inputs["train"].mode.value == "download" and after.inputs["n"].value == 3
    assert (
        after.inputs["u"].uri == "https://x/y" and after.outputs["m"].default and after.outputs["c"].uri == "/data/b/c"
    )
    assert [(n.kind, n.field) for n in notes] == [
        (NoteKind.APPROXIMATED, f) for f in ("inputs.train", "outputs.c", "code")
    ]
    assert data.apply_data_map(before, {}) == (before, [])


@pytest.mark.parametrize("mapping, message", [
    ({"gs://b/": ""}, "cannot be empty"),
    ({"gs://b/": "/data/b"}, "must both end in '/'"),
])
def test_bad_data_maps_are_reported_against_the_profile(tmp_path, mapping, message):
    from omnidist.local.backend import LocalSettings

    entries = ", ".join(f'"{k}" = "{v}"' for k, v in mapping.items())
    (tmp_path / "omnidist.toml").write_text(f'[profiles.p]\nbackend = "local"\ndata_map = {{{entries}}}\n')
    target = config.resolve(profile="p", cwd=tmp_path, environ={})
    with pytest.raises(ValidationError, match=rf"omnidist.toml: profiles.p.data_map.gs://b/: .*{message}"):
        config.settings_for(LocalSettings, "local", target)


def test_data_map_follows_an_overridden_backend(tmp_path):
    from omnidist_vertex import VertexSettings

    (tmp_path / "omnidist.toml").write_text('[profiles.az]\nbackend = "azure_ml"\nworkspace = "ws"\n'
                                            'data_map = {"azureml://datastores/ds/paths/" = "gs://bkt/"}\n')
    target = config.resolve(profile="az", backend="vertex", cwd=tmp_path, environ={})
    settings = config.settings_for(VertexSettings, "vertex", target)
    assert settings.data_map == {"azureml://datastores/ds/paths/": "gs://bkt/"}


def test_a_backend_without_data_skips_the_portable_setting(tmp_path):
    import attrs

    @attrs.frozen(kw_only=True)
    class PluginSettings:
        region: str = "r"

    (tmp_path / "omnidist.toml").write_text('[profiles.p]\nbackend = "plugin"\nregion = "x"\n'
                                            'data_map = {"gs://b/" = "/d/"}\nregoin = "typo"\n')
    target = config.resolve(profile="p", cwd=tmp_path, environ={})
    with pytest.raises(ValidationError, match="regoin"):  # other unknown keys are still errors
        config.settings_for(PluginSettings, "plugin", target)
    (tmp_path / "omnidist.toml").write_text('[profiles.p]\nbackend = "plugin"\ndata_map = {"gs://b/" = "/d/"}\n')
    assert (
        config.settings_for(PluginSettings, "plugin", config.resolve(profile="p", cwd=tmp_path, environ={})).region
        == "r"
    )


def test_a_missing_code_folder_is_named_relative_to_the_job_file(tmp_path):
    (tmp_path / "jobs").mkdir()
    with pytest.raises(ValidationError) as info:
        data.code_folder(job(code="./src", source=str(tmp_path / "jobs" / "job.yaml")))
    assert info.value.problems[0].path == "code" and str(tmp_path / "jobs" / "src") in str(info.value)
    (tmp_path / "jobs" / "src").write_text("a file")
    with pytest.raises(ValidationError, match="is a file, not a folder"):
        data.code_folder(job(code="./src", source=str(tmp_path / "jobs" / "job.yaml")))
    assert data.code_folder(job(code="gs://b/src")) is None and data.code_folder(job()) is None


def test_references_are_substituted_and_hinted():
    values = {("inputs", "train"): "/gcs/b/t", ("outputs", "model"): "/gcs/b/m"}
    assert data.substitute("--data=${{ inputs.train }} ${{outputs.model}}/x", values) == "--data=/gcs/b/t /gcs/b/m/x"
    assert data.data_hints(values) == {"OMNIDIST_INPUT_train": "/gcs/b/t", "OMNIDIST_OUTPUT_model": "/gcs/b/m"}


def test_the_code_hash_is_filled_in_everywhere():
    request = {"a": ["gs://s/omnidist/code/{content-sha256}.tar.gz", {"b": "x {content-sha256}"}], "n": 1}
    assert data.fill_code_hash(request, "abc") == {"a": ["gs://s/omnidist/code/abc.tar.gz", {"b": "x abc"}], "n": 1}


@pytest.mark.parametrize("backend, reads, example", [
    ("sagemaker", "Amazon S3 (s3://BUCKET/PATH, as a channel at /opt/ml/input/data/NAME)",
     'data_map = {"gs://b/x/" = "s3://bkt/data/"}'),
    ("azure_ml", "azureml://datastores/… paths, Azure Storage", 'data_map = {"gs://b/x/" = "azureml://datastores/ds/paths/"}'),
    ("local", "code from a local folder", 'data_map = {"gs://b/x/" = "./data/"}'),
])
def test_the_data_map_example_maps_to_what_the_backend_reads(backend, reads, example):
    from omnidist.compiler.code_data import foreign_uri

    assert example in str(foreign_uri("inputs.train", backend, "gs://b/x/train", reads))
