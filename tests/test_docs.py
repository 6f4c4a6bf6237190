"""The documentation builds strictly and matches the code it describes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from omnidist import cli
from omnidist.backend import registry
from omnidist.model.job import DistributedJob
from omnidist.model.roles import Role

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_mkdocs_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    result = subprocess.run([str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def test_every_job_field_is_documented():
    text = (DOCS / "job-format.md").read_text()
    fields = [a.name for a in attrs.fields(DistributedJob) if a.name != "source"] + [a.name for a in attrs.fields(Role)]
    assert [f for f in fields if f"`{f}`" not in text] == []


def test_every_command_is_in_the_cli_reference():
    text = (DOCS / "cli.md").read_text()
    assert [c for c in cli.COMMANDS if f"`omnidist {c}" not in text] == []


@pytest.mark.parametrize("name", [n for n in registry.installed() if n != "echo"])
def test_every_backend_setting_is_documented(name):
    page = DOCS / "backends" / f"{name}.md"
    text = page.read_text()
    settings = [a.name for a in attrs.fields(registry.get(name).settings_type)]
    assert [s for s in settings if f"`{s}`" not in text] == [], f"{page} misses settings"


def test_readme_gives_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert "make run" in text and "make test" in text


def test_every_table_row_is_in_a_table():
    """A row separated from its table (by a paragraph, a blank line) renders as plain text."""
    import re

    orphans = []
    for page in sorted([*DOCS.rglob("*.md"), ROOT / "README.md"]):
        lines, fenced = page.read_text().splitlines(), False
        for i, line in enumerate(lines):
            fenced ^= line.startswith("```")
            if fenced or not line.startswith("|") or (i and lines[i - 1].startswith("|")):
                continue
            if i + 1 >= len(lines) or not re.fullmatch(r"\|[-| :]+\|", lines[i + 1]):
                orphans.append(f"{page.relative_to(ROOT)}:{i + 1}: {line[:60]}")
    assert orphans == []


def test_the_help_names_every_cloud_backend():
    from click.testing import CliRunner

    text = " ".join(CliRunner().invoke(cli.main, ["--help"]).output.split())
    assert [name for name in ("Vertex AI", "Azure ML", "SageMaker", "Kubernetes", "AI Platform") if name not in text] == []


def test_the_docs_cite_no_spec_sections():
    """Users have the docs, not the project's SPEC: pages (and the docstrings they render) link to
    docs pages instead of citing "SPEC §N"."""
    import importlib
    import inspect

    cited = [f"{page.relative_to(ROOT)}" for page in sorted([*DOCS.rglob("*.md"), ROOT / "README.md"])
             if "SPEC §" in page.read_text()]
    rendered = [line.split(":::")[1].strip() for page in DOCS.rglob("*.md") for line in page.read_text().splitlines()
                if line.startswith(":::")]
    for name in rendered:
        module, _, attr = name.rpartition(".")
        try:
            found = importlib.import_module(name)
        except ImportError:
            found = getattr(importlib.import_module(module), attr)
        members = [found, *(value for key, value in vars(found).items() if not key.startswith("_") and (
            inspect.isclass(found) or getattr(value, "__module__", None) == found.__name__))]
        cited += [f"{name}: {getattr(m, '__qualname__', name)}" for m in members
                  if isinstance(getattr(m, "__doc__", None), str) and "SPEC §" in m.__doc__]
    assert cited == []


def test_the_guide_counts_the_required_protocol_as_the_code_defines_it():
    import re

    from omnidist.backend import contract
    from omnidist.submission import clients

    def required(cls: type) -> set[str]:
        """Abstract methods, and class attributes declared without a value."""
        return set(cls.__abstractmethods__) | {n for n in cls.__annotations__ if not hasattr(cls, n)}

    assert required(contract.Backend) == set(contract.REQUIRED)
    assert required(clients.Client) == set(clients.REQUIRED)
    count = len(contract.REQUIRED) + 1 + len(clients.REQUIRED)  # + CloudBackend's client
    text = (DOCS / "writing-a-backend.md").read_text()
    assert re.search(rf"## The required protocol: {count} names", text)
    assert all(f"`{name}`" in text for name in (*contract.REQUIRED, *clients.REQUIRED))
