"""``python -m interactscope.cli``."""

from interactscope.cli import main

main()
