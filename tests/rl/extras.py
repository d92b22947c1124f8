"""Shared by the RL test modules: why one skips (an optional extra it imports is not installed),
and the module path Ray's workers get.

CI installs both extras and runs every module; the device's image has neither veRL nor Ray, and
`scripts/gpu_suite.sh tests` collects these modules there.
"""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

VERL_MISSING = "needs veRL, the rl extra: pip install -e '.[rl]'"
RAY_MISSING = "needs Ray, the ray extra: pip install -e '.[ray]'"


def worker_pythonpath() -> str:
    """The checkout's source and tests ahead of the inherited PYTHONPATH: a Ray worker started with
    only the checkout would lose packages installed on the path (veRL and Ray themselves, where a
    machine carries them in a folder of its own), and a Ray actor that cannot start waits
    forever."""
    inherited = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    return os.pathsep.join([str(REPO / "src"), str(REPO), *inherited])
