"""``gcloud`` command lines: the flags Google's tools take, and which command creates a job."""

from __future__ import annotations

import pytest

from omnidist.kit import CommandLine, ValidationError
from omnidist.migration.native import read_native
from omnidist_google.gcloud import PROGRAM, creates, key_values, merged, parse_flags


def test_a_pasted_gcloud_command_is_read_as_a_command_line(tmp_path):
    path = tmp_path / "submit.sh"
    path.write_text("# submit it\n$ gcloud beta ai custom-jobs create \\\n  --region=us-central1 \\\n"
                    "  --display-name='my job'\n")
    command, source = read_native(path)
    assert source == str(path) and isinstance(command, CommandLine)
    assert command.argv == ("gcloud", "beta", "ai", "custom-jobs", "create", "--region=us-central1",
                            "--display-name=my job")
    assert command.starts(PROGRAM)
    assert creates(command, "ai", "custom-jobs", "create")  # the release track is skipped
    assert not creates(command, "ai-platform", "jobs", "submit")
    assert not creates(CommandLine(argv=("kubectl", "ai", "custom-jobs", "create")), "ai", "custom-jobs", "create")


def test_parse_flags_reads_every_spelling():
    flags = parse_flags(["JOB", "--region", "r", "--worker-pool-spec=a", "--worker-pool-spec=b", "--async",
                         "--no-enable-web-access", "--", "--epochs", "3"],
                        switches={"async", "enable-web-access"}, known={"region", "worker-pool-spec"}, command="c")
    assert flags.positional == ["JOB"] and flags.rest == ["--epochs", "3"]
    assert flags.values["worker-pool-spec"] == ["a", "b"] and flags.one("region") == "r"
    assert (flags.one("async"), flags.one("enable-web-access")) == ("true", "false")


@pytest.mark.parametrize("argv, path", [
    (["--regoin=r"], "--regoin"),
    (["--region"], "--region"),
])
def test_parse_flags_refuses_what_it_does_not_know(argv, path):
    with pytest.raises(ValidationError) as err:
        parse_flags(argv, switches=(), known={"region"}, command="gcloud x")
    assert err.value.problems[0].path == path and "--region" in str(err.value)


def test_small_helpers():
    assert key_values("count=1,type=nvidia-tesla-t4", "--x") == {"count": "1", "type": "nvidia-tesla-t4"}
    assert merged({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}, "d": 1}
