"""Old import path of :mod:`interactscope.analysis.stats` (cluster bootstrap, paired
differences, permutation reference); kept so existing code keeps working."""

from interactscope.analysis.stats import *  # noqa: F403
from interactscope.analysis.stats import __all__  # noqa: F401
