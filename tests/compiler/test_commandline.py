"""Commands written as text (omnidist/compiler/commandline.py): shell commands to argv, command lines pasted into a file."""

from __future__ import annotations

import pytest

from omnidist.compiler.commandline import CommandLine, find_command_line, needs_shell, shell_argv
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
    text = "# submit it\n$ tool jobs create \\\n  --region=us-central1 \\\n  --display-name='my job'\n"
    assert find_command_line(text, {"tool"}) == ("tool", "jobs", "create", "--region=us-central1",
                                                 "--display-name=my job")
    assert find_command_line(text, {"other"}) is None  # a program no backend reads: a document
    assert find_command_line("workerPoolSpecs:\n  - {}\n", {"tool"}) is None
    assert find_command_line("# only a comment\n", {"tool"}) is None
    assert CommandLine(argv=("tool", "jobs", "create")).starts("tool", "jobs")


def test_a_command_line_a_shell_cannot_split_is_invalid():
    with pytest.raises(ValidationError, match="cannot split the tool command"):
        find_command_line("tool jobs create --name='open\n", {"tool"})
