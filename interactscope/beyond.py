"""Old import path of :mod:`interactscope.analysis.beyond_paper` (variants beyond the paper)."""

from interactscope.analysis.beyond_paper import *  # noqa: F403
from interactscope.analysis.beyond_paper import __all__  # noqa: F401
