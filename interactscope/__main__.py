"""``python -m interactscope``: the ``interactscope`` command."""

from interactscope.cli import main

main()
