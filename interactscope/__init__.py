"""interactscope: evaluate omni-modal models as always-on assistants (Omni-InteractScope streaming
protocol, EgoBench interactive tasks, the EgoInteract agent). See docs/architecture.md."""

from interactscope import _aliases
from interactscope.core.resources import package_version

__version__ = package_version()

_aliases.install()
