"""``python -m omnidist.cli``: the ``omnidist`` command, as the console script starts it."""

from omnidist.console import main

main()
