"""The ``omnidist`` command: exit codes, messages, no tracebacks (omnidist/cli.py, SPEC §3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from omnidist.testing.cli import OMNIDIST, run_cli

PLUGINS = Path(__file__).parent / "plugins"

JOB = "name: demo\nframework: custom\nimage: img:1\ncommand: [python, t.py]\nprimary: {}\n"


@pytest.fixture
def plugin_env(tmp_path):
    """PYTHONPATH with a real distribution registering the 'echo' backend."""
    site = tmp_path / "site"
    info = site / "omnidist_testplugin-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: omnidist-testplugin\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text("[omnidist.backends]\necho = omnidist_testplugin:EchoBackend\n")
    return {"PYTHONPATH": os.pathsep.join([str(site), str(PLUGINS)]), "HOME": str(tmp_path)}


def _job(tmp_path: Path, text: str = JOB) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def test_compile_prints_the_request(tmp_path, plugin_env):
    result = run_cli("compile", str(_job(tmp_path)), "--backend", "echo", cwd=tmp_path, env=plugin_env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "demo", "greeting": None}
    yaml_out = run_cli("compile", str(_job(tmp_path)), "-b", "echo", "-o", "yaml", cwd=tmp_path, env=plugin_env)
    assert "name: demo" in yaml_out.stdout


def test_profile_from_omnidist_toml_selects_backend_and_settings(tmp_path, plugin_env):
    (tmp_path / "omnidist.toml").write_text('default = "e"\n[profiles.e]\nbackend = "echo"\ngreeting = "hello"\n')
    result = run_cli("compile", str(_job(tmp_path)), cwd=tmp_path, env=plugin_env)
    assert json.loads(result.stdout)["greeting"] == "hello"
    env = {**plugin_env, "OMNIDIST_BACKEND": "nope"}
    result = run_cli("compile", str(_job(tmp_path)), cwd=tmp_path, env=env)
    assert result.returncode == 2 and "Unknown backend 'nope'" in result.stderr


@pytest.mark.parametrize("text, message", [
    (JOB + "workers: {replicas: -1}\n", "job.yaml: workers.replicas: must be >= 0, got -1"),
    (JOB + "workrs: {replicas: 1}\n", "job.yaml: workrs: unknown key; did you mean 'workers'?"),
    (JOB + "spot: 3\n", "job.yaml: spot: expected true or false"),
    (JOB.replace("primary: {}", "primary: {accelerator: Z100:8}"), "job.yaml: primary.accelerator.type: unknown accelerator"),
    (JOB.replace("demo", "Demo"), "job.yaml: name: 'Demo' is not a valid job name"),
    (JOB + "timeout: forever\n", "job.yaml: timeout: 'forever' is not a duration"),
    ("name: [", "job.yaml: line 2, column 1: not valid YAML/JSON"),
])
def test_invalid_input_exits_2_with_file_and_path_and_no_traceback(tmp_path, plugin_env, text, message):
    result = run_cli("compile", str(_job(tmp_path, text)), "--backend", "echo", cwd=tmp_path, env=plugin_env)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_file_and_unknown_backend_exit_2(tmp_path, plugin_env):
    assert run_cli("compile", "nope.yaml", "-b", "echo", cwd=tmp_path, env=plugin_env).returncode == 2
    result = run_cli("compile", str(_job(tmp_path)), "-b", "vertx", cwd=tmp_path, env=plugin_env)
    assert result.returncode == 2 and "Did you mean 'vertex'?" in result.stderr


def test_validate_prints_a_table_per_backend(tmp_path, plugin_env):
    result = run_cli("validate", str(_job(tmp_path)), cwd=tmp_path, env=plugin_env)
    assert result.returncode == 0, result.stderr
    assert any(line.split()[:2] == ["echo", "ok"] for line in result.stdout.splitlines())
    bad = run_cli("validate", str(_job(tmp_path, JOB + "workers: {replicas: x}\n")), cwd=tmp_path, env=plugin_env)
    assert bad.returncode == 2 and "workers.replicas" in bad.stderr


def test_backends_lists_versions_and_capabilities(tmp_path, plugin_env):
    result = run_cli("backends", cwd=tmp_path, env=plugin_env)
    assert result.returncode == 0
    assert any(line.startswith("echo") and "1.2.3" in line for line in result.stdout.splitlines())


def test_debug_shows_the_traceback(tmp_path, plugin_env):
    result = run_cli("--debug", "compile", str(_job(tmp_path, "name: [")), "-b", "echo", cwd=tmp_path, env=plugin_env)
    assert "Traceback" in result.stderr


def test_python_m_omnidist_cli_has_every_command(tmp_path):
    import subprocess
    import sys

    from omnidist import cli

    ran = subprocess.run([sys.executable, "-m", "omnidist.cli", "--help"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert ran.returncode == 0, ran.stderr
    listed = {line.split()[0] for line in ran.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(cli.COMMANDS) and {"import", "migrate"} <= listed
    migrate = subprocess.run([sys.executable, "-m", "omnidist.cli", "migrate", "--help"], capture_output=True,
                             text=True, cwd=tmp_path, timeout=120)
    assert migrate.returncode == 0 and "--strict" in migrate.stdout


def test_a_native_spec_given_as_a_job_says_whose_it_is_and_how_to_import_it(tmp_path):
    native = tmp_path / "legacy.yaml"
    native.write_text("trainingInput:\n  scaleTier: BASIC\n  masterConfig: {imageUri: gcr.io/p/t:1}\n")
    result = run_cli("validate", str(native))
    assert result.returncode == 2
    assert result.stderr.strip() == (f"error: {native}: not a job file: it reads as ai_platform's native spec. "
                                     f"`omnidist import {native}` turns it into a job file; `omnidist migrate "
                                     f"{native} --to BACKEND` compiles it for another backend")


CLOUD_JOB = """name: creds
framework: pytorch
image: img:1
command: [python, train.py]
primary: {accelerator: A100:8}
workers: {replicas: 1}
backends:
  vertex: {project: p, region: us-central1}
  ai_platform: {project: p, region: us-central1}
  azure_ml: {subscription_id: 00000000-0000-0000-0000-000000000000, resource_group: rg, workspace: ws, compute: gpu}
  sagemaker: {role_arn: "arn:aws:iam::111122223333:role/Training", region: us-east-1}
"""


@pytest.mark.parametrize("backend, fix", [
    ("azure_ml", "no Azure credentials: run `az login`, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and "
                 "AZURE_CLIENT_SECRET"),
    ("vertex", "no Google credentials: run `gcloud auth application-default login`"),
    ("ai_platform", "no Google credentials: run `gcloud auth application-default login`"),
    ("kubernetes", "no kubeconfig and not inside a cluster: get one with your cluster's tool"),
    ("sagemaker", "no AWS credentials: run `aws configure` (or `aws sso login`), or set AWS_ACCESS_KEY_ID and "
                  "AWS_SECRET_ACCESS_KEY"),
])
def test_no_credentials_is_one_line_with_the_fix_and_exit_1(backend, fix, tmp_path):
    """A machine without credentials, as a new user's: the real SDKs look in an empty HOME with no
    credential variables and no cloud CLI on PATH. One rule on every cloud: exit 1 and one line
    naming the login command; the SDKs' own warnings (Azure's credential chain, its "experimental
    field" notice for queue_settings) stay out of it.

    Azure's chain is held to its developer credentials (AZURE_TOKEN_CREDENTIALS=dev), and google.auth
    and boto3 skip the metadata server (NO_GCE_CHECK, AWS_EC2_METADATA_DISABLED): on a cloud-hosted
    test machine they would otherwise find that machine's own identity."""
    job = tmp_path / "job.yaml"
    job.write_text(CLOUD_JOB + ("spot: true\n" if backend == "azure_ml" else ""))  # Azure: queue_settings
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path / "bin"), "AZURE_TOKEN_CREDENTIALS": "dev",
           "NO_GCE_CHECK": "True", "AWS_EC2_METADATA_DISABLED": "true", "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([OMNIDIST, "submit", str(job), "--backend", backend], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {backend}: {fix}"), result.stderr


def test_compile_without_a_backend_says_which_and_why(tmp_path):
    path = _job(tmp_path)
    result = run_cli("compile", str(path), cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("note: backend local: no profile and no --backend (--backend ") and "|vertex" in first
    (tmp_path / "omnidist.toml").write_text('default = "gcp"\n[profiles.gcp]\nbackend = "vertex"\nproject = "p"\n')
    result = run_cli("compile", str(path), cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert result.stderr.splitlines()[0].startswith(
        f"note: backend vertex: profile gcp (the default in {tmp_path / 'omnidist.toml'})")
    assert "note: backend" not in run_cli("compile", str(path), "-b", "vertex", cwd=tmp_path,
                                          env={"HOME": str(tmp_path)}).stderr


def test_backend_choices_are_listed_completed_and_checked(tmp_path):
    helped = run_cli("compile", "--help")
    assert "--backend [ai_platform|azure_ml|kubernetes|local|sagemaker|vertex]" in " ".join(helped.stdout.split())
    wrong = run_cli("compile", str(_job(tmp_path)), "--backend", "vertx")
    assert wrong.returncode == 2 and "Did you mean 'vertex'?" in wrong.stderr
    completed = run_cli(env={"_OMNIDIST_COMPLETE": "bash_complete", "COMP_WORDS": "omnidist compile job.yaml -b a",
                             "COMP_CWORD": "4"})
    assert completed.stdout.split() == ["plain,ai_platform", "plain,azure_ml"]


def test_every_command_has_an_example_in_its_help():
    from omnidist import cli

    ctx = click.Context(cli.main)
    missing = [name for name in cli.main.list_commands(ctx)
               if f"omnidist {name}" not in (cli.main.get_command(ctx, name).help or "").partition("Examples:")[2]]
    assert missing == []


def test_the_help_lists_the_installed_backends_loaded_only_for_help(tmp_path, plugin_env):
    """The group's help names no backend of its own: it lists the installed ones, each with the
    first sentence of its class's docstring; a plugin that does not load is listed as such."""
    info = tmp_path / "site" / "omnidist_broken-0.1.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[omnidist.backends]\nbroken = no_such_module:Nope\n")
    helped = run_cli("--help", cwd=tmp_path, env=plugin_env)
    assert helped.returncode == 0, helped.stderr
    section = helped.stdout.split("Backends (installed):\n")[1].split("\n\n")[0]
    rows = dict((line.split(maxsplit=1) + [""])[:2] for line in section.splitlines())
    assert {"echo", "broken", "local"} <= set(rows)
    assert rows["broken"] == "does not load (omnidist backends says why)"
    assert rows["local"].startswith("Runs each replica as a local process")
    assert helped.stdout.index("Backends (installed):") < helped.stdout.index("Commands:")
    probe = ("import sys; from omnidist.cli import main\n"
             "try:\n    main(['compile', '--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('omnidist_testplugin')))")
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
                         env={**os.environ, **plugin_env})
    assert ran.stdout.strip().splitlines()[-1] == "[]"  # a command's help lists names, and loads no backend


def test_commands_load_when_run_and_all_show_in_help():
    import subprocess
    import sys

    from omnidist import cli

    probe = ("import sys; from omnidist.cli import main\n"
             "try:\n    main(['compile', '--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('omnidist.cli.')))")
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded = ran.stdout.strip().splitlines()[-1]
    assert "omnidist.cli.compiling" in loaded
    assert all(f"omnidist.cli.{m}'" not in loaded for m in ("jobs", "placement", "migrate", "explain", "container"))
    ctx = click.Context(cli.main)
    assert cli.main.list_commands(ctx) == sorted(cli.COMMANDS)
    assert all(cli.main.get_command(ctx, name).name == name for name in cli.COMMANDS)


def test_a_one_off_job_needs_no_file(tmp_path):
    result = run_cli("compile", "-b", "vertex", "--nodes", "3", "--accelerator", "A100:8", "--image", "img:1",
                     "--", "python", "train.py", "--lr", "0.1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    pools = json.loads(result.stdout)["jobSpec"]["workerPoolSpecs"]
    assert [p["replicaCount"] for p in pools] == ["1", "2"]
    assert pools[0]["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_A100"
    # a PyTorch job of 8 GPUs a node: the launcher starts the node's 8 processes (SPEC §10)
    assert pools[0]["containerSpec"]["command"] == ["omnidist", "launch", "--nproc-per-node=8", "--",
                                                    "python", "train.py", "--lr", "0.1"]
    assert json.loads(result.stdout)["displayName"] == "train"
    ran = run_cli("run", "--nodes", "2", "--", "python", "-c", "import os; print(os.environ['CLUSTER_SPEC'][:11])",
                  cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert ran.returncode == 0 and sorted(ran.stdout.splitlines()) == ['[primary-0] {"cluster":', '[worker-0] {"cluster":']


@pytest.mark.parametrize("args, message", [
    (["--accelerator", "v100x8", "--", "python", "t.py"],
     "error: the command line: --accelerator: unknown accelerator 'v100x8'; did you mean 'V100:8'?"),
    (["--name", "Bad_Name", "--", "python", "t.py"], "error: the command line: --name: 'Bad_Name' is not a valid"),
    (["job.yaml", "--nodes", "2"], "error: --nodes: --nodes make a one-off job from a command"),
])
def test_one_off_flags_name_the_flag(args, message, tmp_path):
    (tmp_path / "job.yaml").write_text(JOB)
    result = run_cli("compile", *args, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.splitlines()[-1].startswith(message), result.stderr


def test_validate_wraps_long_reasons_to_the_terminal_width(tmp_path):
    path = _job(tmp_path, JOB.replace("primary: {}", "primary: {accelerator: A100:8}\ninterconnect: infiniband"))
    wide = run_cli("validate", path.name, env={"COLUMNS": ""}, cwd=tmp_path)
    narrow = run_cli("validate", path.name, env={"COLUMNS": "80"}, cwd=tmp_path)
    assert max(map(len, wide.stdout.splitlines())) > 200  # a pipe gets whole rows, one per line
    assert max(map(len, narrow.stdout.splitlines())) <= 80
    assert [w for w in narrow.stdout.split() if not w.startswith("-")] == \
           [w for w in wide.stdout.split() if not w.startswith("-")]


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path):
    path = _job(tmp_path, JOB.replace("framework: custom", "framework: pytorx"))
    plain = run_cli("validate", str(path))
    forced = run_cli("validate", str(path), env={"FORCE_COLOR": "1"})
    refused = run_cli("validate", str(path), env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" not in plain.stderr and "\x1b[" not in refused.stderr
    assert forced.stderr.startswith("\x1b[31m\x1b[1merror:\x1b[0m ")
    assert forced.stderr.replace("\x1b[31m\x1b[1m", "").replace("\x1b[0m", "") == plain.stderr


def test_the_migration_report_colours_each_fidelity_and_reads_the_same_without(tmp_path):
    native = Path(__file__).parent / "migration" / "golden" / "inputs" / "ai_platform_doc_example.yaml"
    plain = run_cli("migrate", str(native), "--to", "vertex")
    forced = run_cli("migrate", str(native), "--to", "vertex", env={"FORCE_COLOR": "1"})
    assert plain.returncode == forced.returncode == 0
    assert "\x1b[32mexact\x1b[0m" in forced.stderr and "\x1b[33mapproximated\x1b[0m" in forced.stderr
    import re

    assert re.sub(r"\x1b\[[0-9;]*m", "", forced.stderr) == plain.stderr
    assert forced.stdout == plain.stdout  # the request itself never gets colour


def test_the_sdks_own_messages_show_with_debug(tmp_path):
    """What --debug adds to a credential error: the SDK's own account of every source it tried."""
    job = tmp_path / "job.yaml"
    job.write_text(CLOUD_JOB + "spot: true\n")
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path / "bin"), "AZURE_TOKEN_CREDENTIALS": "dev",
           "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([OMNIDIST, "--debug", "submit", str(job), "--backend", "azure_ml"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 1
    assert "DefaultAzureCredential failed to retrieve a token" in result.stderr  # the chain, from the SDK's logger
    assert "Field 'queue_settings': This is an experimental field" in result.stderr
    assert "AuthenticationError: azure_ml: no Azure credentials" in result.stderr  # the traceback's last line


def test_only_omnidists_own_log_records_reach_stderr(capsys):
    import logging

    from omnidist.cli.common import setup_logging
    from omnidist.cli.records import _Messages

    root = logging.getLogger()
    level = root.level
    try:
        setup_logging(False)
        logging.getLogger("azure.identity._credentials.chained").warning("DefaultAzureCredential failed …")
        logging.getLogger("omnidist.azure_ml").warning("src is 2.1 GB: check .amlignore")
        logging.getLogger("omnidist.azure_ml").info("not shown either: below warning")
        assert capsys.readouterr().err == "warning: src is 2.1 GB: check .amlignore\n"
        setup_logging(True)  # replaces the first handler: nothing printed twice
        logging.getLogger("azure.identity._credentials.chained").warning("DefaultAzureCredential failed …")
        assert capsys.readouterr().err == "warning: azure.identity._credentials.chained: DefaultAzureCredential failed …\n"
    finally:
        for handler in [h for h in root.handlers if isinstance(h, _Messages)]:
            root.removeHandler(handler)
        root.setLevel(level)
        logging.captureWarnings(False)


LATE_LOGGING = """
import sys, warnings
from omnidist.cli.common import setup_logging
setup_logging(False)
assert "logging" not in sys.modules
warnings.warn("an SDK's warning, before anything logs")
assert "logging" in sys.modules
import logging
logging.getLogger("omnidist.sagemaker").warning("the bucket is in another region")
logging.getLogger("botocore.credentials").warning("found credentials in the environment")
setup_logging(False)
logging.getLogger("omnidist.sagemaker").warning("shown once")
"""


def test_the_log_handler_waits_for_the_first_import_of_logging(tmp_path):
    """A command that never logs does not import logging; what logs later (or warns first) is
    shown exactly as with the handler installed at start."""
    import sys

    ran = subprocess.run([sys.executable, "-c", LATE_LOGGING], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == "warning: the bucket is in another region\nwarning: shown once\n"
    probe = ("import sys; from omnidist.cli import main\n"
             "try:\n    main(['compile', 'job.yaml', '-b', 'vertex'])\nexcept SystemExit:\n    pass\n"
             "print('logging' in sys.modules)")
    (tmp_path / "job.yaml").write_text(JOB)
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert ran.stdout.strip().splitlines()[-1] == "False", ran.stderr


def test_validate_takes_the_profile_as_compile_does(tmp_path):
    """SageMaker needs role_arn; a profile that sets it makes the job valid there."""
    job = _job(tmp_path, JOB.replace("framework: custom", "framework: pytorch"))
    bare = run_cli("validate", str(job), "-b", "sagemaker", cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert bare.returncode != 0 and "role_arn" in bare.stdout
    (tmp_path / "omnidist.toml").write_text('[profiles.aws]\nbackend = "sagemaker"\n'
                                            'role_arn = "arn:aws:iam::111122223333:role/Training"\n'
                                            'region = "us-east-1"\n')
    with_profile = run_cli("validate", str(job), "-b", "sagemaker", "--profile", "aws", cwd=tmp_path,
                           env={"HOME": str(tmp_path)})
    assert with_profile.returncode == 0, with_profile.stdout + with_profile.stderr
    assert with_profile.stdout.split()[-2:] == ["sagemaker", "ok"]
    unknown = run_cli("validate", str(job), "-p", "awz", cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert unknown.returncode == 2 and "Did you mean 'aws'?" in unknown.stderr


def test_migrate_takes_accelerator_for_a_job_on_a_named_cluster(tmp_path):
    native = tmp_path / "az.yml"
    native.write_text("$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\ntype: command\n"
                      "command: python train.py\nenvironment: {image: pytorch/pytorch:2.2}\n"
                      "compute: azureml:gpu-cluster\nresources: {instance_count: 2}\n")
    result = run_cli("migrate", str(native), "--to", "vertex", "--accelerator", "V100:2", "--accelerator",
                     "workers=T4:1", "--strict", cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    pools = json.loads(result.stdout)["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"]["acceleratorType"] for p in pools] == ["NVIDIA_TESLA_V100", "NVIDIA_TESLA_T4"]


def test_a_long_error_wraps_on_a_terminal_and_stays_whole_elsewhere(monkeypatch, capsys):
    from omnidist.cli import style

    message = "job.yaml: primary.accelerator: " + "the reason goes on " * 20 + "gs://a-bucket/a/long/path/that/stays/whole"
    monkeypatch.setattr(style, "_stderr_width", lambda: 60)
    style.echo_error(message)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("error: job.yaml: primary.accelerator: the reason")
    assert all(len(line) <= 60 for line in lines) and all(line.startswith("  ") for line in lines[1:])
    assert any("gs://a-bucket/a/long/path/that/stays/whole" in line for line in lines)
    assert " ".join(line.strip() for line in lines) == f"error: {message}".rstrip()
    monkeypatch.setattr(style, "_stderr_width", lambda: None)
    style.echo_error(message)
    assert capsys.readouterr().err == f"error: {message}\n"
