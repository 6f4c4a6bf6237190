"""``omnidist plan``: one row per profile, SPEC §12's keys, cheapest first and marked, the reason
where a backend cannot express the job; offline, priced from the catalog."""

from __future__ import annotations

import json

import pytest

from omnidist import config
from omnidist.errors import ConfigError, ValidationError
from omnidist.model.job import job_from_dict
from omnidist.placement import plan as planning
from omnidist.testing.cli import run_cli

CONFIG = """
[profiles.gcp]
backend = "vertex"
project = "p"
region = "us-central1"
[profiles.legacy]
backend = "ai_platform"
project = "p"
region = "us-central1"
[profiles.azure]
backend = "azure_ml"
subscription_id = "s"
resource_group = "r"
workspace = "w"
region = "eastus"
[profiles.gke]
backend = "kubernetes"
gke_region = "us-central1"
[profiles.laptop]
backend = "local"
[groups.clouds]
profiles = ["gcp", "azure"]
order = "cheapest"
"""

PRICES = """cloud,service,region,kind,name,on_demand,spot,source,date
azure,azure_vm,eastus,machine,Standard_NC4as_T4_v3,0.526,0.105,test list,2026-01-02
gcp,compute_engine,us-central1,accelerator,T4,0.35,0.14,test list,2026-01-02
gcp,compute_engine,us-central1,machine,n1-standard-1,0.5,0.01,test list,2026-01-02
gcp,vertex_ai,us-central1,accelerator,T4,0.4025,,test list,2026-01-02
gcp,vertex_ai,us-central1,machine,n1-highmem-2,,,no list price in the test list,
gcp,vertex_ai,us-central1,machine,n1-standard-4,0.2185,,test list,2026-01-02
"""

JOB = """name: t4-ddp
framework: pytorch
image: img:1
command: [python, train.py]
primary: {accelerator: T4:1}
workers: {replicas: 1}
timeout: 3h
"""


@pytest.fixture
def project(isolated, monkeypatch):
    (isolated / "omnidist.toml").write_text(CONFIG)
    (isolated / "job.yaml").write_text(JOB)
    (isolated / "prices.csv").write_text(PRICES)
    monkeypatch.setenv("OMNIDIST_PRICES", str(isolated / "prices.csv"))
    return isolated


def cli(project, *args: str):
    return run_cli(*args, cwd=project, env={"HOME": str(project.parent / "home"),
                                            "OMNIDIST_PRICES": str(project / "prices.csv")})


def test_plan_json_has_exactly_the_spec_keys_cheapest_first(project):
    done = cli(project, "plan", "job.yaml", "-o", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert all(list(row) == list(planning.JSON_KEYS) for row in rows)
    assert [row["profile"] for row in rows] == ["azure", "gcp", "gke", "laptop", "legacy"]
    azure, gcp, gke, laptop, legacy = rows
    assert azure == {"profile": "azure", "backend": "azure_ml", "region": "eastus",
                     "machines": {"primary": "Standard_NC4as_T4_v3", "workers": "Standard_NC4as_T4_v3"},
                     "accelerators": "T4:2", "price_per_hour": 1.052, "spot_price_per_hour": 0.21, "hours": 3.0,
                     "estimated_cost": 3.16, "available": True, "blocked": None, "cheapest": True,
                     "partial_price_per_hour": None, "idle": None, "credentials": azure["credentials"]}
    assert gke["price_per_hour"] == pytest.approx(2 * (0.5 + 0.35) + 0.10), "GKE nodes plus the cluster fee"
    assert gke["machines"] == {"primary": "n1-standard-1", "workers": "n1-standard-1"}
    assert gcp["price_per_hour"] == pytest.approx(2 * (0.2185 + 0.4025)) and gcp["spot_price_per_hour"] is None
    assert laptop["available"] is False and laptop["price_per_hour"] == 0.0 and not laptop["cheapest"]
    assert legacy["price_per_hour"] is None and legacy["estimated_cost"] is None and legacy["blocked"] is None
    assert sum(row["cheapest"] for row in rows) == 1
    assert "cheapest: azure of 4 priced; 1 unknown" in done.stderr  # unknown is never cheapest (SPEC 12a)


def test_plan_table_marks_the_cheapest_and_says_why_a_price_is_unknown(project):
    done = cli(project, "plan", "job.yaml")
    assert done.returncode == 0, done.stderr
    header, rule, first, *_ = done.stdout.splitlines()
    assert header.split()[:4] == ["profile", "backend", "region", "machines"]
    assert first.startswith("*") and "azure" in first and "3.16" in first
    assert "note: legacy: no vertex_ai list price in us-central1 for n1-highmem-2" in done.stderr


def test_a_backend_that_cannot_express_the_job_is_a_row_with_the_compile_reason(project):
    (project / "job.yaml").write_text(JOB + "evaluators: {replicas: 1}\n")
    rows = json.loads(cli(project, "plan", "job.yaml", "-o", "json", "-p", "azure,gcp").stdout)
    assert [r["profile"] for r in rows] == ["gcp", "azure"]
    assert rows[1]["blocked"].startswith("azure_ml cannot express evaluators: Azure ML command jobs have no")
    assert rows[1]["price_per_hour"] is None and not rows[1]["cheapest"] and rows[0]["cheapest"]


def test_no_profile_can_express_the_job_exits_3(project):
    (project / "job.yaml").write_text(JOB + "evaluators: {replicas: 1}\n")
    done = cli(project, "plan", "job.yaml", "-p", "azure")
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "azure_ml cannot express evaluators" in done.stdout


def test_spot_hours_and_groups(project):
    rows = json.loads(cli(project, "plan", "job.yaml", "-o", "json", "-p", "clouds", "--spot", "--hours", "10").stdout)
    assert [(r["profile"], r["hours"], r["estimated_cost"]) for r in rows] == [("azure", 10.0, 2.1), ("gcp", 10.0, None)]


def test_an_invalid_job_or_an_unknown_profile_is_exit_2(project):
    done = cli(project, "plan", "job.yaml", "-p", "nope")
    assert done.returncode == 2 and "profile 'nope' is not defined" in done.stderr
    (project / "job.yaml").write_text(JOB.replace("workers: {replicas: 1}", "workers: {replicas: -1}"))
    done = cli(project, "plan", "job.yaml")
    assert done.returncode == 2 and "job.yaml: workers.replicas" in done.stderr


def test_plan_in_python_renders_a_table_in_notebooks(project):
    import omnidist

    found = omnidist.plan(job_from_dict({**__import__("yaml").safe_load(JOB)}), ["gcp", "azure"])
    html = found._repr_html_()
    assert "cheapest: azure" in html and found.cheapest.profile == "azure"
    assert "Standard_NC4as_T4_v3" in html.replace("<wbr>", "")  # <wbr>: where a long cell may wrap


def test_profile_names_expand_lists_and_groups_once_each(project):
    assert planning.profile_names(["gcp,azure", "clouds", "gke"]) == (["gcp", "azure", "gke"], "cheapest")
    assert planning.profile_names([])[0] == list(config.profiles())
    with pytest.raises(ConfigError, match="profile 'nope' is not defined"):
        planning.profile_names(["nope"])


@pytest.mark.parametrize("body, words", [
    ('[groups.g]\nprofiles = "gcp"\n', "groups.g.profiles: a group lists its profiles"),
    ('[groups.g]\nprofiles = ["gcp"]\norder = "random"\n', "groups.g.order: 'random' is not one of listed, cheapest"),
    ('[groups.g]\nprofiles = ["gcp"]\nretries = 2\n', "groups.g: unknown key 'retries'"),
    ('[groups.g]\nprofiles = ["gcp", "ghost"]\n', "profile 'ghost' is not defined"),
])
def test_a_malformed_group_names_the_file_and_key(project, body, words):
    (project / "omnidist.toml").write_text(CONFIG + body)
    with pytest.raises(ConfigError, match=words):
        planning.profile_names(["g"])


def test_the_job_timeout_sets_the_hours_else_one():
    job = job_from_dict({"name": "a", "framework": "pytorch", "image": "i", "command": ["x"], "primary": {}})
    assert planning.hours_for(job, None) == 1.0 and planning.hours_for(job, 2.5) == 2.5
    with pytest.raises(ValidationError):
        job_from_dict({"name": "a", "framework": "pytorch", "primary": {}, "timeout": "soon"})


SHIPPED_ENV = {"OMNIDIST_PRICES": ""}
"""No overlay: the shipped catalog alone."""

EVERY_BACKEND = """
[profiles.vertex]
backend = "vertex"
region = "us-central1"
[profiles.legacy]
backend = "ai_platform"
region = "us-central1"
[profiles.azure]
backend = "azure_ml"
region = "eastus"
[profiles.sagemaker]
backend = "sagemaker"
role_arn = "arn:aws:iam::123456789012:role/train"
[profiles.gke]
backend = "kubernetes"
regions = ["us-central1", "us-east4"]
"""


def one_off(cwd, *args: str, env=None):
    done = run_cli("plan", *args, "-o", "json", "--image", "img:1", "--", "python", "train.py", cwd=cwd,
                   env={"OMNIDIST_PRICES": "", **(env or {})})
    assert done.returncode == 0, done.stderr
    return {row["profile"]: row for row in json.loads(done.stdout)}, done.stderr


@pytest.mark.parametrize("accelerator", ["A100:8", "A100-80GB:8", "H100:8", "V100:1", "T4:1", "L4:1"])
def test_every_backend_that_runs_a_gpu_prices_it_offline(isolated, accelerator):
    """SPEC §12a's coverage: the shipped catalog prices each GPU job on every backend that can run
    it (Google's A100-80GB in a region whose list has its on-demand price)."""
    config = EVERY_BACKEND
    if accelerator.startswith("A100-80GB"):  # us-central1's figure is the DWS flex-start SKU: not shipped
        config = config.replace('"us-central1"', '"asia-southeast1"')
    (isolated / "omnidist.toml").write_text(config)
    rows, _ = one_off(isolated, "--nodes", "2", "--accelerator", accelerator)
    runnable = [row for row in rows.values() if row["blocked"] is None]
    assert len(runnable) >= 3
    assert all(row["price_per_hour"] is not None for row in runnable), [
        (r["profile"], r["partial_price_per_hour"]) for r in runnable if r["price_per_hour"] is None]


def test_an_a100_node_hour_is_within_the_public_list_prices(isolated):
    (isolated / "omnidist.toml").write_text(EVERY_BACKEND)
    rows, _ = one_off(isolated, "--accelerator", "A100:8")
    node_hours = {name: row["price_per_hour"] for name, row in rows.items() if row["price_per_hour"]}
    # EC2 p4d.24xlarge 21.96 (us-east-1) .. SageMaker ml.p4d.24xlarge 37.69: the sources' range
    assert node_hours and all(20 <= price <= 40 for price in node_hours.values()), node_hours


def test_with_no_profile_every_installed_backend_is_planned_on_its_defaults(isolated):
    rows, stderr = one_off(isolated, "--accelerator", "T4:1")
    assert {"vertex", "ai_platform", "azure_ml", "sagemaker", "kubernetes"} <= set(rows)
    assert rows["azure_ml"]["region"] == "eastus" and rows["azure_ml"]["price_per_hour"] == 0.526
    assert "azure_ml: the profile names no region: priced in eastus" in stderr
    assert rows["sagemaker"]["blocked"].startswith("backends.sagemaker.role_arn")
    assert "priced" in stderr.splitlines()[0]


def test_a_profile_listing_regions_shows_the_cheapest_and_prices_the_others(isolated):
    (isolated / "omnidist.toml").write_text('[profiles.gcp]\nbackend = "vertex"\n'
                                            'regions = ["europe-west4", "us-central1", "us-east4"]\n')
    rows, stderr = one_off(isolated, "--accelerator", "T4:1")
    assert rows["gcp"]["region"] == "us-central1"
    assert "gcp: cheapest of the regions listed (us-central1); the others: europe-west4: " in stderr
    (isolated / "omnidist.toml").write_text('[profiles.gcp]\nbackend = "vertex"\nregions = "us-east4"\n')
    done = run_cli("plan", "--accelerator", "T4:1", "--", "python", "t.py", cwd=isolated)
    assert done.returncode == 2 and "omnidist.toml: profiles.gcp.regions: 'us-east4' is not a list" in done.stderr


def test_idle_accelerators_are_said_and_priced_as_billed(isolated):
    (isolated / "omnidist.toml").write_text('[profiles.azure]\nbackend = "azure_ml"\nregion = "eastus"\n')
    rows, stderr = one_off(isolated, "--nodes", "2", "--accelerator", "V100:1")
    azure = rows["azure"]
    assert azure["idle"] == "14 V100 idle of 16 billed" and azure["accelerators"] == "V100:16"
    assert azure["price_per_hour"] == pytest.approx(2 * 22.032)
    assert "14 V100 idle of 16 billed: the machines hold more accelerators than the job uses" in stderr


def test_a_partial_price_is_marked_and_never_cheapest(project):
    (project / "prices.csv").write_text(PRICES + "gcp,compute_engine,us-central1,accelerator,T4,,,no list price,\n")
    rows = {r["profile"]: r for r in json.loads(cli(project, "plan", "job.yaml", "-o", "json").stdout)}
    gke = rows["gke"]
    assert gke["price_per_hour"] is None and gke["partial_price_per_hour"] == pytest.approx(2 * 0.5 + 0.10)
    assert not gke["cheapest"]
    table = cli(project, "plan", "job.yaml", "-p", "gke").stdout
    assert ">= 1.10 (partial)" in table


def test_a_kubernetes_profile_is_priced_as_its_clouds_vms(isolated):
    (isolated / "omnidist.toml").write_text('[profiles.eks]\nbackend = "kubernetes"\ncloud = "aws"\n'
                                            'region = "us-east-1"\n[profiles.old]\nbackend = "kubernetes"\n'
                                            'gke_region = "us-central1"\n')
    rows, stderr = one_off(isolated, "--accelerator", "T4:1")
    assert rows["old"]["region"] == "us-central1" and rows["old"]["price_per_hour"] is not None
    assert rows["eks"]["region"] == "us-east-1" and rows["eks"]["price_per_hour"] is None
    assert "set nodeSelector node.kubernetes.io/instance-type to the aws VM size" in stderr
    (isolated / "omnidist.toml").write_text('[profiles.eks]\nbackend = "kubernetes"\ncloud = "ibm"\n')
    done = run_cli("plan", "--accelerator", "T4:1", "--", "python", "t.py", cwd=isolated)
    assert done.returncode == 2 and "cloud: 'ibm' is not one of aws, azure, gcp" in done.stdout
    assert "Traceback" not in done.stderr


def test_the_credentials_column_says_missing_offline(isolated):
    (isolated / "omnidist.toml").write_text('[profiles.gcp]\nbackend = "vertex"\n')
    rows, _ = one_off(isolated, "--accelerator", "T4:1", env={"GOOGLE_APPLICATION_CREDENTIALS": "",
                                                                "CLOUDSDK_CONFIG": "", "GCE_METADATA_HOST": ""})
    assert rows["gcp"]["credentials"] == "missing"
