"""Old import path of :mod:`interactscope.analysis.controls` (evidence controls)."""

from interactscope.analysis.controls import *  # noqa: F403
from interactscope.analysis.controls import __all__  # noqa: F401
