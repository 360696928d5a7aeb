"""Whether a Ray test can run inside (or is inside) a loopback-only network namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from interactscope.streaming.distributed import INSTALL_HINT

NETNS_ENV = "INTERACTSCOPE_RAY_NETNS"


def _loopback_only() -> bool:
    """Only ``lo`` in this process's network namespace (/proc/net/dev is per namespace)."""
    try:
        lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    return {ln.split(":")[0].strip() for ln in lines} <= {"lo"}


def _can_isolate() -> str | None:
    """Why the namespace test cannot run here (None: it can)."""
    if os.environ.get(NETNS_ENV):
        return "already inside the namespace"
    if shutil.which("unshare") is None or shutil.which("strace") is None:
        return "needs unshare and strace (apt-get install -y strace)"
    try:
        import ray  # noqa: F401
    except ImportError:
        return f"needs Ray ({INSTALL_HINT})"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True)
    return None if probe.returncode == 0 else "cannot create a network namespace (needs root)"
