"""Fixtures shared across test modules. Module-specific fixtures stay beside their tests; the
helpers that build synthetic media, runs and tiny models live in tests/helpers/ (test modules
import from there, never from each other)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"  # ../shared beside the clone in CI and on developers' machines


@pytest.fixture(scope="session")
def demo_bench() -> Path:
    """The bundled demo benchmark folder (package data, found as a user's install finds it)."""
    from interactscope.core.resources import demo_benchmark_dir

    return demo_benchmark_dir()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (real media, EgoBench and peer samples); skips the test when absent."""
    data = SHARED / "data"
    if not data.is_dir():
        pytest.skip(f"{data} is absent (the shared folder is not beside this checkout)")
    return data


@pytest.fixture(scope="session")
def egobench_data() -> Path:
    """The EgoBench data copy shipped inside the package."""
    from interactscope.egobench.data import package_data_dir

    return package_data_dir()


@pytest.fixture(scope="session")
def retail6(egobench_data):
    """The real retail6 variant (tasks, tools, seed database) from the shipped copy."""
    from interactscope.egobench import load_variant

    return load_variant(egobench_data, "retail6")
