"""``omnidist gpus`` (every accelerator, per backend its machines and price per accelerator-hour,
no configuration, no network) and ``omnidist check`` (credentials per profile, the fix when
missing; creating nothing) (SPEC §12a)."""

from __future__ import annotations

import json

import pytest

from omnidist.placement import credentials, gpus
from omnidist.testing.cli import run_cli

NO_CREDENTIALS = {name: "" for name in (
    "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "GCE_METADATA_HOST", "AWS_ACCESS_KEY_ID", "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AZURE_CLIENT_ID", "IDENTITY_ENDPOINT", "MSI_ENDPOINT",
    "AZURE_CONFIG_DIR", "KUBECONFIG", "KUBERNETES_SERVICE_HOST")}


def test_gpus_lists_each_backends_machines_priced_per_accelerator_hour(isolated):
    done = run_cli("gpus", "A100", "-o", "json", cwd=isolated)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert rows and all(list(r) == list(gpus.JSON_KEYS) and r["accelerator"] == "A100" for r in rows)
    by = {(r["backend"], r["machine"]): r for r in rows}
    node = by["vertex", "a2-highgpu-8g"]
    assert node["per_node"] == 8 and node["cloud"] == "gcp" and "us-central1" in node["regions"]
    # (host 5.91582 + 8 x 2.93391) x 1.15 / 8 on Vertex, from Compute Engine's rows
    assert node["on_demand_per_accelerator_hour"] == pytest.approx((5.91582 + 8 * 2.93391) * 1.15 / 8, abs=1e-4)
    assert by["azure_ml", "Standard_ND96asr_v4"]["on_demand_per_accelerator_hour"] == pytest.approx(27.197 / 8,
                                                                                                     abs=1e-4)
    assert {r["backend"] for r in rows} >= {"vertex", "azure_ml", "sagemaker", "kubernetes", "ai_platform"}


def test_gpus_filters_by_cloud_and_region_and_refuses_an_unknown_name(isolated):
    rows = json.loads(run_cli("gpus", "T4", "--cloud", "azure", "-o", "json", cwd=isolated).stdout)
    assert rows and {r["cloud"] for r in rows} == {"azure"} and {r["backend"] for r in rows} == {"azure_ml"}
    rows = json.loads(run_cli("gpus", "H100", "--region", "us-east4", "-o", "json", cwd=isolated).stdout)
    vertex = [r for r in rows if r["backend"] == "vertex" and r["machine"] == "a3-highgpu-8g"]
    assert vertex and vertex[0]["region"] == "us-east4" and vertex[0]["on_demand_per_accelerator_hour"] > 10
    done = run_cli("gpus", "A1000", cwd=isolated)
    assert done.returncode == 2 and "did you mean 'A100'" in done.stderr and "Traceback" not in done.stderr


def test_gpus_table_lists_every_accelerator_even_one_no_backend_offers(isolated):
    done = run_cli("gpus", cwd=isolated)
    assert done.returncode == 0, done.stderr
    names = {line.split()[0] for line in done.stdout.splitlines()[2:] if line.strip()}
    assert {"A100", "A100-80GB", "H100", "V100", "T4", "L4", "TPU-V5E"} <= names


def test_gpus_prices_l40s_and_the_aws_gpu_machines_in_the_large_regions(isolated):
    rows = json.loads(run_cli("gpus", "L40S", "--cloud", "aws", "-o", "json", cwd=isolated).stdout)
    by = {r["machine"]: r for r in rows}
    # ml.g6e.12xlarge = 1.40 x EC2 g6e.12xlarge 10.49264 (us-east-1), 4 L40S
    assert by["ml.g6e.12xlarge"]["on_demand_per_accelerator_hour"] == pytest.approx(10.49264 * 1.4 / 4, abs=1e-3)
    large = {"us-east-1", "us-east-2", "us-west-2", "eu-west-1", "ap-northeast-1"}
    for accelerator, machine in (("T4", "ml.g4dn.xlarge"), ("A10G", "ml.g5.xlarge"), ("L4", "ml.g6.xlarge")):
        rows = json.loads(run_cli("gpus", accelerator, "--cloud", "aws", "-o", "json", cwd=isolated).stdout)
        regions = {r["machine"]: set(r["regions"]) for r in rows}
        assert len(regions[machine] & large) >= 4, (machine, regions[machine])
    tokyo = json.loads(run_cli("gpus", "T4", "--region", "ap-northeast-1", "-o", "json", cwd=isolated).stdout)
    ml = [r for r in tokyo if r["machine"] == "ml.g4dn.xlarge"]
    assert ml and ml[0]["on_demand_per_accelerator_hour"] == pytest.approx(0.71 * 1.4, abs=1e-3)


CONFIG = """
[profiles.gcp]
backend = "vertex"
[profiles.cluster]
backend = "kubernetes"
api_server = "http://127.0.0.1:9"
[profiles.aws]
backend = "sagemaker"
role_arn = "arn:aws:iam::123456789012:role/train"
"""


def test_check_says_missing_with_the_fix_per_profile_and_exits_1(isolated):
    (isolated / "omnidist.toml").write_text(CONFIG)
    done = run_cli("check", "--offline", cwd=isolated, env=NO_CREDENTIALS)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    gcp, cluster, aws = done.stdout.splitlines()
    assert gcp.startswith("gcp (vertex): missing — run `gcloud auth application-default login`")
    assert cluster.startswith("cluster (kubernetes): unchecked — api_server http://127.0.0.1:9")
    assert aws.startswith("aws (sagemaker): missing — run `aws configure`")


def test_check_finds_credentials_where_the_clients_look(isolated, monkeypatch):
    (isolated / "omnidist.toml").write_text(CONFIG)
    for name, value in NO_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    key = isolated / "key.json"
    key.write_text("{}")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    (isolated.parent / "home" / ".aws").mkdir(parents=True)
    (isolated.parent / "home" / ".aws" / "credentials").write_text("[default]\n")
    lines = {line.profile: line for line in credentials.check(online=False)}
    assert lines["gcp"].status == "unchecked" and str(key) in lines["gcp"].detail
    assert lines["aws"].status == "unchecked" and lines["aws"].detail.endswith(".aws/credentials")


def test_the_cloud_refusing_credentials_is_refused_with_what_it_said(isolated, monkeypatch):
    """A kubeconfig naming a server that answers nothing: the check fails and says so (no cluster is
    touched: the address is closed on this machine)."""
    (isolated / "omnidist.toml").write_text('[profiles.cluster]\nbackend = "kubernetes"\n'
                                            'kubeconfig = "kubeconfig.yaml"\n')
    (isolated / "kubeconfig.yaml").write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n")
    [line] = credentials.check(online=True)
    assert line.status == "refused" and line.fix.startswith("point KUBECONFIG")
