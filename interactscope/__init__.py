"""interactscope: the Omni-InteractScope protocol for omni-modal always-on assistants."""

__version__ = "0.1.0"
