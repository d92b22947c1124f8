"""Where the stage jobs run: local worker threads (each job runs its code in an isolated child
process, so threads are enough to keep K processes busy), or tasks on a Ray cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

from cuda_agent.errors import UserError


class LocalPool:
    def __init__(self, workers: int):
        self.workers = max(1, workers)

    def map(self, fn: Callable[[Any], Any], items: list) -> Iterator[tuple[Any, Any]]:
        """(item, fn(item)) as each finishes."""
        with ThreadPoolExecutor(self.workers) as pool:
            pending = {pool.submit(fn, item): item for item in items}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield pending.pop(future), future.result()

    def close(self) -> None:
        pass


class RayPool:
    """Jobs as Ray tasks, at most `workers` in flight; each needs a GPU share on CUDA runs."""

    def __init__(self, address: str, workers: int, gpu_share: float):
        try:
            import ray
        except ImportError:
            raise UserError("--ray needs the ray package: pip install 'cuda-agent[ray]'") from None
        self.ray = ray
        self.workers = max(1, workers)
        self.gpu_share = gpu_share
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as err:
            raise UserError(f"--ray {address}: cannot connect to the Ray cluster ({err})") from None

    def map(self, fn: Callable[[Any], Any], items: list) -> Iterator[tuple[Any, Any]]:
        remote = self.ray.remote(num_cpus=1, num_gpus=self.gpu_share)(fn)
        queue = list(items)
        running: dict = {}
        while queue or running:
            while queue and len(running) < self.workers:
                item = queue.pop(0)
                running[remote.remote(item)] = item
            done, _ = self.ray.wait(list(running), num_returns=1)
            for ref in done:
                yield running.pop(ref), self.ray.get(ref)

    def close(self) -> None:
        self.ray.shutdown()
