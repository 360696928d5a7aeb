"""Registering test plug-ins (backends, agents, ...) without leaking them into other tests."""

from __future__ import annotations

import pytest

from interactscope.core import registry


def isolate_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``register()`` after this call (the test's, or a setup hook's) is undone when the
    test ends: the registry's tables are replaced by copies for the test's duration."""
    copies = {kind: dict(table) for kind, table in registry._TABLES.items()}
    monkeypatch.setattr(registry, "_TABLES", copies)
