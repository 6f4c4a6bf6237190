"""``python -m omnidist.cli``: the ``omnidist`` command."""

from omnidist.cli import main

main()
