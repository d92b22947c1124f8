"""Where the stage jobs run: local worker threads (each job runs its code in an isolated child
process, so threads are enough to keep K processes busy), or tasks on a Ray cluster.

Both hand out jobs one at a time (`submit`) and give back whichever finished (`wait`), so the
scheduler can keep every worker busy with whatever work is ready; `map` is the batch form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

from cuda_agent.errors import UserError


class LocalPool:
    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self._threads = ThreadPoolExecutor(self.workers)

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Future:
        return self._threads.submit(fn, item)

    def wait(self, handles: list, timeout: float | None = None) -> list[tuple[Any, Any]]:
        """(handle, result) of the submitted jobs that finished, after at most `timeout` s."""
        done, _ = wait_futures(handles, timeout=timeout, return_when=FIRST_COMPLETED)
        return [(f, f.result()) for f in done]

    def map(self, fn: Callable[[Any], Any], items: list) -> Iterator[tuple[Any, Any]]:
        """(item, fn(item)) as each finishes."""
        pending = {self.submit(fn, item): item for item in items}
        while pending:
            for handle, result in self.wait(list(pending)):
                yield pending.pop(handle), result

    def close(self) -> None:
        self._threads.shutdown(wait=True)


class RayPool:
    """Jobs as Ray tasks; each needs a GPU share on CUDA runs. The caller keeps at most
    `workers` in flight."""

    def __init__(self, address: str, workers: int, gpu_share: float):
        try:
            import ray
        except ImportError:
            raise UserError("--ray needs the ray package: pip install 'cuda-agent[ray]'") from None
        self.ray = ray
        self.workers = max(1, workers)
        self.gpu_share = gpu_share
        self._remote: dict[Callable, Any] = {}
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as err:
            raise UserError(f"--ray {address}: cannot connect to the Ray cluster ({err})") from None

    def submit(self, fn: Callable[[Any], Any], item: Any):
        if fn not in self._remote:
            self._remote[fn] = self.ray.remote(num_cpus=1, num_gpus=self.gpu_share)(fn)
        return self._remote[fn].remote(item)

    def wait(self, handles: list, timeout: float | None = None) -> list[tuple[Any, Any]]:
        done, _ = self.ray.wait(list(handles), num_returns=1, timeout=timeout)
        return [(ref, self.ray.get(ref)) for ref in done]

    def map(self, fn: Callable[[Any], Any], items: list) -> Iterator[tuple[Any, Any]]:
        queue = list(items)
        running: dict = {}
        while queue or running:
            while queue and len(running) < self.workers:
                item = queue.pop(0)
                running[self.submit(fn, item)] = item
            for ref, result in self.wait(list(running)):
                yield running.pop(ref), result

    def close(self) -> None:
        self.ray.shutdown()
