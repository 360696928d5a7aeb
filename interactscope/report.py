"""Old import path of :mod:`interactscope.analysis.report` (the paper's tables and figures)."""

from interactscope.analysis.report import *  # noqa: F403
from interactscope.analysis.report import __all__  # noqa: F401
