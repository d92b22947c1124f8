"""Service workers as Ray actors: one GPU actor per GPU (num_gpus=1), CPU actors for builds.

Ray is the engine for many nodes (`--ray auto` joins a running cluster, `--ray ADDRESS` a given
one; without an address a local cluster is started and stopped with the service). Ray pins each
GPU actor's CUDA_VISIBLE_DEVICES itself and restarts a dead actor (max_restarts), which this
module reports as WorkerLost so the pipeline retries the call once.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import replace
from typing import Any

from cuda_agent.bench import calls
from cuda_agent.bench.workers import STARTUP_TIMEOUT_S, WorkerError, WorkerLost
from cuda_agent.errors import UserError
from cuda_agent.sandbox import EnvConfig, Environment

CONNECT_TIMEOUT_S = 5.0


def import_ray():
    try:
        import ray
    except ImportError:
        raise UserError(
            "the Ray mode needs Ray: pip install 'cuda-agent[ray]' (or run without --ray)"
        ) from None
    return ray


def check_ray_address(address: str) -> None:
    """UserError at once when nothing listens at a HOST:PORT address (Ray itself keeps trying to
    reach a missing cluster for minutes); `auto` is left to Ray, which fails fast."""
    if address == "auto":
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        raise UserError(
            f"--ray {address!r}: give auto, local, or the HOST:PORT of a Ray cluster's head"
        )
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as err:
        raise UserError(
            f"--ray {address}: no Ray cluster answers there ({err.strerror or err}); start one "
            "with `ray start --head`, or use --ray local"
        ) from None


class _EnvironmentActor:
    """Lives in a Ray worker process; holds one Environment for its lifetime.

    Ray leaves CUDA_VISIBLE_DEVICES alone for an actor without GPUs, so a build actor hides the
    GPUs itself (`hide_gpus`) before anything in its process has touched CUDA."""

    def __init__(self, env_config: EnvConfig, hide_gpus: bool = False):
        if hide_gpus:
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
        self._env = Environment(env_config)
        self._env.__enter__()
        self._env.warm_up()

    def call(self, method: str, args: tuple) -> tuple[str, Any]:
        try:
            return "ok", calls.dispatch(self._env, method, args)
        except Exception as err:  # this call's failure; the actor lives on
            return "error", f"{type(err).__name__}: {err}"

    def pid(self) -> int:
        return os.getpid()

    def arch(self) -> str | None:
        return calls.device_arch()


class RayWorker:
    """A handle on one actor, with the Worker interface of `workers`."""

    def __init__(self, name: str, actor):
        self.name = name
        self.actor = actor
        self.restarts = 0
        self.pid = None  # on another host, maybe: ask the actor (`actor.pid.remote()`)
        self._killed = False

    def call(self, method: str, args: tuple, timeout_s: float) -> Any:
        ray = import_ray()
        try:
            kind, value = ray.get(self.actor.call.remote(method, args), timeout=timeout_s)
        except ray.exceptions.GetTimeoutError:
            ray.kill(self.actor, no_restart=False)
            self._await_restart()
            raise WorkerLost(f"{self.name}: no answer within {timeout_s:.0f} s", True) from None
        except ray.exceptions.RayActorError as err:  # Ray restarts it (max_restarts)
            self._await_restart()
            raise WorkerLost(f"{self.name}: actor died ({err})") from None
        if kind == "error":
            raise WorkerError(value)
        return value

    def close(self) -> None:
        import_ray().kill(self.actor, no_restart=True)

    def kill(self) -> None:
        self._killed = True
        self.close()

    def _await_restart(self) -> None:
        """Block until Ray has the actor back (calls to a restarting actor fail at once)."""
        if self._killed:
            raise WorkerLost(f"{self.name}: the service is shutting down")
        ray = import_ray()
        self.restarts += 1
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                ray.get(self.actor.pid.remote(), timeout=60)
                return
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                time.sleep(1.0)
        raise WorkerLost(f"{self.name}: Ray did not restart the actor in {STARTUP_TIMEOUT_S:.0f} s")


def ray_workers(
    env_config: EnvConfig,
    address: str | None,
    gpus: int | None,
    compile_workers: int | None,
    num_cpus: int | None = None,
) -> tuple[list[RayWorker], list[RayWorker], bool]:
    """Build actors and GPU actors on the cluster at `address` (None: a new local cluster).

    `gpus` None uses every GPU of the cluster; on a cluster without GPUs one CPU-only
    evaluation actor stands in (its Environment reports no_gpu). Returns whether this call
    started Ray (and so the service must stop it).
    """
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        if address is None:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        else:
            check_ray_address(address)
            try:
                ray.init(address=address, log_to_driver=False)
            except ConnectionError as err:
                raise UserError(f"--ray {address}: {str(err).splitlines()[0]}") from None
    resources = ray.cluster_resources()
    cluster_gpus = int(resources.get("GPU", 0))
    n_gpu = cluster_gpus if gpus is None else gpus
    if n_gpu > cluster_gpus:
        raise UserError(f"asked for {n_gpu} GPUs; the Ray cluster has {cluster_gpus}")
    actor = ray.remote(_EnvironmentActor)
    gpu_options = {"num_gpus": 1, "num_cpus": 1} if n_gpu else {"num_gpus": 0, "num_cpus": 1}
    evaluators = [
        RayWorker(
            f"gpu{i}",
            actor.options(max_restarts=-1, **gpu_options).remote(
                replace(env_config, device_index=0)
            ),
        )
        for i in range(max(n_gpu, 1))
    ]
    arch = env_config.arch or (ray.get(evaluators[0].actor.arch.remote()) if n_gpu else None)
    if compile_workers is None:
        compile_workers = max(1, int(resources.get("CPU", 1)) - len(evaluators))
    builders = [
        RayWorker(
            f"build{i}",
            actor.options(max_restarts=-1, num_cpus=1, num_gpus=0).remote(
                replace(env_config, arch=arch), hide_gpus=True
            ),
        )
        for i in range(compile_workers)
    ]
    return builders, evaluators, started
