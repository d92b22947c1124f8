"""The GPU, commit, tree and date a benchmark's figures are measured with (gpu_suite.sh sets
the commit and the tree). The GPU is read in a child process, so the benchmark itself need not
initialise CUDA."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime


def run_facts() -> dict:
    probe = "import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else '')"
    gpu = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return {
        "gpu": gpu.stdout.strip() or None,
        "commit": os.environ.get("CUDA_AGENT_COMMIT", "unknown"),
        "tree": os.environ.get("CUDA_AGENT_TREE", "unknown"),  # gpu_suite.sh: the files' git tree
        "date": datetime.now(UTC).date().isoformat(),
    }
