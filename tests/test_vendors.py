"""What the vendor kits declare reaches the core, and the core holds without them: image registries
by host, object-store URIs in an argv, registered-data references, credential files never packed
(:mod:`omnidist.vendors`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from omnidist import vendors
from omnidist.compiler.code_data import foreign_uri
from omnidist.errors import ConfigError
from omnidist.kit import AssetReference, Vendor
from omnidist.migration.world import registry_of, uris_in
from omnidist.model.data import JobInput, is_data, scheme
from omnidist.placement import vendors as placement_vendors
from omnidist.submission import code_files

ROWS = Path("prices.csv")


@pytest.fixture
def no_kits(monkeypatch):
    """As if no vendor kit were installed."""
    monkeypatch.setattr(vendors, "installed", lambda: {})


@pytest.fixture
def one_kit(monkeypatch):
    """Only a made-up vendor's kit installed."""
    kit = Vendor(name="acme", rows=ROWS, registries=((r"\.cr\.acme\.test$", "acme-registry"),),
                 uri_schemes=("acme://",), secret_files=(".acme",),
                 assets=(AssetReference(prefix="acme:", scheme="acme", title="an Acme dataset",
                                        fetch="acme pull {name}"),))
    monkeypatch.setattr(vendors, "installed", lambda: {"acme": kit})
    return kit


# --- what the installed kits declare ------------------------------------------------------------------

@pytest.mark.parametrize("image, kind", [
    ("123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1", "ecr"),
    ("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/train:1", "ecr"),
    ("public.ecr.aws/org/train:1", "ecr-public"),
    ("us-central1-docker.pkg.dev/p/r/train:1", "artifact-registry"),
    ("gcr.io/p/train:1", "gcr"), ("eu.gcr.io/p/train:1", "gcr"),
    ("reg.azurecr.io/train:1", "acr"), ("mcr.microsoft.com/azureml/base:latest", "mcr"),
    ("pytorch/pytorch:2.3", "docker-hub"), ("docker.io/library/python:3.11", "docker-hub"),
    ("ghcr.io/org/train:1", "other"), ("localhost:5000/train", "other"),
])
def test_each_registry_kind_comes_from_the_kit_of_its_vendor(image, kind):
    assert registry_of(image) == kind


def test_the_installed_kits_declare_the_object_stores_an_argv_names():
    words = ["python", "t.py", "--data=gs://b/x", "s3://b/y", "--out=azureml://datastores/d/paths/p",
             "abfss://c@a.dfs.core.windows.net/p", "https://h/f", "--dist-url=tcp://10.0.0.1:23456", "./local"]
    assert uris_in(words) == ["gs://b/x", "s3://b/y", "azureml://datastores/d/paths/p",
                              "abfss://c@a.dfs.core.windows.net/p", "https://h/f"]
    assert uris_in(words, ("s3://",)) == ["s3://b/y"]


@pytest.mark.parametrize("name", [".aws", ".azure", ".boto", "gcloud/credentials.db", ".config/gcloud/configurations",
                                  "msal_token_cache.json", "deep/.aws"])
def test_every_kits_credential_files_stay_out_of_the_archive(tmp_path, name):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("secret")
    found = code_files.scan(tmp_path)
    assert name in found.secrets and name not in [f.path for f in found.files]


def test_a_registered_data_asset_is_refused_in_its_kits_words():
    err = foreign_uri("inputs.coco", "vertex", "azureml:coco128:1", "Cloud Storage (gs://BUCKET/PATH)")
    assert "azureml:coco128:1 is a registered Azure ML data asset, and vertex jobs read" in str(err)
    assert "az ml data download --name coco128" in str(err) and 'data_map = {"azureml:coco128:1" = "gs://bkt/data"}' \
        in str(err)


def test_every_kit_declaration_loads_without_placement_and_every_price_list_loads():
    probe = ("import json, sys; from omnidist import vendors; vendors.installed(); "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('omnidist.placement'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
    lists = placement_vendors.sources()
    assert {vendor.name for vendor, _ in lists} == {v.name for v in vendors.installed().values()}


# --- without the kits: the vendor-neutral rules -------------------------------------------------------

def test_without_kits_a_registry_is_docker_hubs_or_other(no_kits):
    assert registry_of("gcr.io/p/t:1") == "other" and registry_of("python:3.11") == "docker-hub"
    assert registry_of("index.docker.io/library/python:3.11") == "docker-hub"


def test_without_kits_an_argv_names_https_downloads_only(no_kits):
    assert uris_in(["gs://b/x", "https://h/f", "s3://b/y"]) == ["https://h/f"]


def test_without_kits_the_neutral_secret_patterns_still_hold(no_kits, tmp_path):
    for name in (".ssh", ".env", "id_rsa", "credentials", "kubeconfig", ".kube", "adc.json", "key.pem", ".aws"):
        (tmp_path / name).write_text("secret")
    (tmp_path / "id_rsa.pub").write_text("public")
    found = code_files.scan(tmp_path)
    assert sorted(found.secrets) == [".env", ".kube", ".ssh", "adc.json", "credentials", "id_rsa", "key.pem",
                                     "kubeconfig"]
    assert ".aws" not in code_files.secret_patterns()


def test_without_kits_a_registered_data_reference_is_refused_in_general_words(no_kits):
    err = str(foreign_uri("inputs.coco", "vertex", "azureml:coco128:1", "Cloud Storage (gs://BUCKET/PATH)"))
    assert "azureml:coco128:1 is a reference to data registered with a service (azureml:)" in err
    assert "with the tools of the service that resolves azureml: references" in err and "data_map" in err


def test_a_kit_of_another_vendor_speaks_for_its_own_things(one_kit, tmp_path):
    assert registry_of("x.cr.acme.test/t:1") == "acme-registry" and registry_of("gcr.io/p/t:1") == "other"
    assert uris_in(["acme://b/k", "gs://b/x"]) == ["acme://b/k"]
    err = str(foreign_uri("inputs.d", "vertex", "acme:cats@latest", "Cloud Storage (gs://BUCKET/PATH)"))
    assert "acme:cats@latest is an Acme dataset" in err and "acme pull cats" in err
    (tmp_path / ".acme").write_text("token")
    assert code_files.scan(tmp_path).secrets == (".acme",)


# --- the data rules: a location by its form ------------------------------------------------------------

@pytest.mark.parametrize("text, kind", [
    ("gs://b/x", "gs"), ("HDFS://n/p", "hdfs"), ("ftp://h/f", "ftp"), ("file:///d", "file"),
    ("azureml:coco128:1", "azureml"), ("azureml:coco128@latest", "azureml"),
    ("azureml:/subscriptions/s/resourceGroups/g/providers/p/workspaces/w/data/d/versions/1", "azureml"),
    ("store:name:12", "store"), ("./d", "local"), ("/abs", "local"),
])
def test_any_uri_and_any_registered_reference_is_data_with_its_scheme(text, kind):
    assert is_data(text) and scheme(text) == kind and not JobInput.parse(text).literal


@pytest.mark.parametrize("text", ["cuda:0", "host:8080", "adam", "lr:0.1:decay", "C:/x", "a:b:1", "azureml:name"])
def test_words_with_a_colon_stay_literals(text):
    assert not is_data(text) and JobInput.parse(text).literal


# --- a kit's declaration is checked -------------------------------------------------------------------

def test_a_kits_declaration_with_a_bad_pattern_or_scheme_is_a_config_error():
    with pytest.raises(ConfigError, match=r"vendor kit 'x': registries: '\(' is not a regular expression"):
        Vendor(name="x", rows=ROWS, registries=(("(", "k"),))
    with pytest.raises(ConfigError, match=r"vendor kit 'x': uri_schemes: 'S3:' is not a lower-case 'scheme://'"):
        Vendor(name="x", rows=ROWS, uri_schemes=("S3:",))


@pytest.mark.parametrize("reference, words", [
    ("omnidist_nowhere.prices:LISTS", "cannot be loaded"), ("omnidist.vendors:GROUP", "is not a tuple of"),
])
def test_a_kits_price_lists_that_do_not_load_are_a_config_error(reference, words):
    with pytest.raises(ConfigError, match=f"vendor kit 'x': price_lists {reference!r} {words}"):
        placement_vendors.price_lists(Vendor(name="x", rows=ROWS, price_lists=reference))
