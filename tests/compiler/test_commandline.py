"""Commands written as text (omnidist/commandline.py): shell commands to argv, gcloud command lines."""

from __future__ import annotations

import pytest

from omnidist.clouds.gcloud import CommandLine, find_command_line, key_values, merged, parse_flags
from omnidist.compiler.commandline import needs_shell, shell_argv
from omnidist.errors import ValidationError


@pytest.mark.parametrize("command, argv", [
    ("python train.py --lr 0.1", ("python", "train.py", "--lr", "0.1")),
    ("python t.py --name 'two words' '&&'", ("python", "t.py", "--name", "two words", "&&")),
    ("python t.py --data ${{inputs.data}}", ("python", "t.py", "--data", "${{inputs.data}}")),
    ("python t.py --url=https://x.example/a#b", ("python", "t.py", "--url=https://x.example/a#b")),
    ("bash -lc 'echo $HOME\n  ls *.csv'", ("bash", "-lc", "echo $HOME\n  ls *.csv")),  # quoted: the argv keeps it
])
def test_plain_commands_become_argv(command, argv):
    assert shell_argv(command) == (argv, False)


@pytest.mark.parametrize("command", [
    "echo one\npython two.py",                      # two lines: two commands
    "pip install -r r.txt && python t.py",
    "cd src; python t.py",
    "python t.py | tee log.txt",
    "python t.py > out.txt",
    "echo $HOME",
    'echo "$HOME"',                                  # double quotes still expand
    "python t.py --files data/*.csv",               # a glob
    "python t.py ~/data",                           # a home directory
    "python t.py  # a comment",
    "python t.py \\\n  --lr 0.1",                   # a continuation
    "source venv/bin/activate",                     # a builtin
    ". venv/bin/activate",
    "OMP_NUM_THREADS=4 python t.py",                # an assignment
    "echo `date`",
])
def test_what_only_a_shell_runs_the_same_stays_whole(command):
    assert needs_shell(command)
    assert shell_argv(command) == (("bash", "-c", command), True)


def test_an_open_quote_is_invalid_and_named():
    with pytest.raises(ValidationError) as err:
        shell_argv("python 'unclosed", "--command")
    assert err.value.problems[0].path == "--command"


def test_find_command_line_reads_a_pasted_command():
    text = "# submit it\n$ gcloud ai custom-jobs create \\\n  --region=us-central1 \\\n  --display-name='my job'\n"
    assert find_command_line(text) == ("gcloud", "ai", "custom-jobs", "create", "--region=us-central1",
                                       "--display-name=my job")
    assert find_command_line("workerPoolSpecs:\n  - {}\n") is None
    assert find_command_line("# only a comment\n") is None


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
    assert CommandLine(argv=("gcloud", "ai", "custom-jobs", "create")).starts("gcloud", "ai")
