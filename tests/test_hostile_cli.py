"""Smaller things a hostile or careless input found: ``validate`` says so in its exit code when
no backend takes the job; a huge value is never echoed whole in an error."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from omnidist.cli import main
from omnidist.errors import BackendError, UnsupportedFeatureError, ValidationError
from omnidist.model.job import job_from_dict

REJECTED_EVERYWHERE = """\
name: a
framework: pytorch
image: i:1
command: [python, t.py]
interconnect: infiniband
primary: {accelerator: "T4:16"}
workers: {replicas: 600}
"""
"""InfiniBand with 16 T4s a machine, 601 nodes: no cloud has the machine, the local backend
does not start that many processes."""


def test_validate_fails_when_every_backend_rejects_the_job(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(REJECTED_EVERYWHERE)
    result = CliRunner().invoke(main, ["validate", str(job)])
    rows = [line.split(None, 1) for line in result.output.splitlines()[2:] if not line.startswith(" ")]
    assert rows and all(verdict != "ok" for _, verdict in rows), result.output
    assert result.exit_code in (2, 3), result.output


def test_validate_passes_when_one_backend_takes_the_job(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(REJECTED_EVERYWHERE.replace("workers: {replicas: 600}", "workers: {replicas: 1}")
                   .replace("interconnect: infiniband", "interconnect: any").replace("T4:16", "T4:1"))
    result = CliRunner().invoke(main, ["validate", str(job)])
    assert " ok" in result.output and result.exit_code == 0, result.output


HUGE = "x" * 10_000_000


@pytest.mark.parametrize("field, value", [("name", HUGE), ("framework", HUGE), ("interconnect", HUGE),
                                          ("spot", HUGE), (HUGE, 1)])
def test_a_10_mb_value_is_not_echoed_whole(field, value):
    data = {"name": "a", "framework": "pytorch", "primary": {}, field: value}
    with pytest.raises(ValidationError) as caught:
        job_from_dict(data)
    message = str(caught.value)
    assert len(message) < 5000 and "characters left out" in message, message[:300]


def test_other_errors_are_clipped_too():
    assert len(str(BackendError(HUGE, backend="vertex", status=400))) < 5000
    assert len(str(UnsupportedFeatureError(HUGE, "vertex", HUGE, HUGE))) < 5000


def test_control_characters_from_a_job_never_reach_the_terminal(tmp_path):
    """A value with escape sequences (clear the screen, a fake line) is shown escaped in omnidist's
    own lines: errors, notes, tables."""
    from omnidist.cli.common import shown

    assert shown("a\x1b[2Jb\rc\x07\u2028d\ne\tf") == "a\\x1b[2Jb\\rc\\x07\\u2028d\ne\tf"
    job = tmp_path / "job.yaml"
    job.write_text('name: a\nframework: pytorch\nimage: i:1\ncommand: [python, t.py]\nprimary: {}\n'
                   'labels: {team: "ml\\e[2J\\rok"}\n')
    result = CliRunner().invoke(main, ["validate", str(job)])
    assert "\x1b" not in result.output and "\r" not in result.output, result.output
    assert "\\x1b[2J" in result.output
