"""The peak memory in use on the GPUs while a stage runs, every process counted (the trainer,
the rollout server, the environment's builds), read from nvidia-smi once a second."""

from __future__ import annotations

import shutil
import subprocess
import threading


class PeakGpuMemory:
    """`with PeakGpuMemory() as watch: ...` then `watch.peak_mib` (None without nvidia-smi)."""

    def __init__(self, every_s: float = 1.0):
        self.every_s = every_s
        self.peak_mib: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._smi = shutil.which("nvidia-smi")

    def __enter__(self):
        if self._smi:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._smi:
            self._thread.join()
            self._read()

    def _watch(self):
        while not self._stop.wait(self.every_s):
            self._read()

    def _read(self):
        query = [self._smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
        try:
            out = subprocess.run(query, capture_output=True, text=True, timeout=30).stdout
            used = max(int(line) for line in out.split())
        except (subprocess.TimeoutExpired, ValueError):  # a busy or odd answer: the next read
            return
        self.peak_mib = used if self.peak_mib is None else max(self.peak_mib, used)
