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
