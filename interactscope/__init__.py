"""interactscope: evaluate omni-modal models as always-on assistants (Omni-InteractScope streaming
protocol, EgoBench interactive tasks, the EgoInteract agent). See docs/architecture.md."""

from interactscope.resources import package_version

__version__ = package_version()
