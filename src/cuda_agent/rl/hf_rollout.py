"""`actor_rollout_ref.rollout.name=hf`: a veRL rollout backend on plain `transformers` generation.

For one-GPU runs and tests, where vLLM or SGLang cannot be installed; they stay the production
path. Importing this module registers the backend with veRL in that process, so every Ray worker
must import it: veRL imports the modules named in `VERL_USE_EXTERNAL_MODULES` when it is itself
imported (`VERL_USE_EXTERNAL_MODULES=cuda_agent.rl.worker_plugins`, which imports this module
and which the pipeline sets for every stage).

Three pieces, as veRL's vLLM backend has them:
- `HFServer`, a Ray actor holding the model (`cuda_agent.rl.hf_generate`): the server handle
  the agent loops' `LLMServerClient` calls (`generate(request_id, prompt_ids, sampling_params)
  -> TokenOutput`, the interface of veRL's vLLM server), one request at a time;
- `HFReplica`, the `RolloutReplica` veRL's `RolloutReplicaRegistry` returns for `hf`: it starts
  the server next to the first worker of its replica, on that worker's GPU;
- `HFServerAdapter`, the `BaseRollout` inside each training worker: veRL's weight sync hands it
  the actor's full tensors after every update (`update_weights`), which it copies to the server.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import ray
import torch
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.config import HFModelConfig
from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

from cuda_agent.rl.hf_generate import HFGenerator, SamplingSettings

NAME = "hf"
MODULE = "cuda_agent.rl.hf_rollout"
_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def server_name(replica_rank: int) -> str:
    return f"{NAME}_server_{replica_rank}"


class HFServer:
    """The rollout server of one replica (a Ray actor: `ray.remote(HFServer)`)."""

    def __init__(self, model_path: str, device: str, dtype: str, response_length: int):
        self.generator = HFGenerator.from_pretrained(model_path, device, _DTYPES[dtype])
        self.response_length = response_length
        self.global_steps: int | None = None
        self.weight_updates = 0
        self._lock = threading.Lock()  # one forward pass at a time on the device
        print(f"hf rollout: serving {model_path} on {device} ({dtype})", flush=True)  # run's log

    async def generate(
        self, request_id, prompt_ids, sampling_params, image_data=None, video_data=None, **kwargs
    ) -> TokenOutput:
        settings = SamplingSettings.from_params(dict(sampling_params), self.response_length)
        sampled = await asyncio.to_thread(self._generate, list(prompt_ids), settings)
        return TokenOutput(
            token_ids=sampled.token_ids,
            log_probs=sampled.log_probs,
            stop_reason="completed" if sampled.stopped else "length",
            # the weights' version, as veRL's vLLM server reports it: the trainer reads each
            # trajectory's first and last version from it (off-policy staleness metrics)
            extra_fields={"global_steps": self.global_steps},
        )

    def _generate(self, prompt_ids, settings):
        with self._lock:
            started = time.perf_counter()
            sampled = self.generator.generate(prompt_ids, settings)
            seconds = time.perf_counter() - started
        # one line per request in the run's log: where generation time goes on one GPU
        per_token = 1000 * seconds / max(1, len(sampled.token_ids))
        print(
            f"hf rollout: {len(prompt_ids)} prompt tokens, {len(sampled.token_ids)} sampled in "
            f"{seconds:.2f} s ({per_token:.1f} ms/token) on {self.generator.device}",
            flush=True,
        )
        return sampled

    def update_weights(self, named_tensors: list[tuple[str, torch.Tensor]]) -> int:
        with self._lock:
            loaded = self.generator.load_weights(named_tensors)
        self.weight_updates += 1
        # one line per update in the run's log: the digest shows the weights moved
        print(
            f"hf rollout: weight update {self.weight_updates}, {loaded} tensors, "
            f"digest {self.weights_digest():.6f}",
            flush=True,
        )
        return loaded

    def weights_digest(self) -> float:
        """A number that changes when the weights do (the sum of every parameter)."""
        with self._lock:
            return float(sum(p.double().sum() for p in self.generator.model.parameters()))

    def status(self) -> dict:
        return {"weight_updates": self.weight_updates, "global_steps": self.global_steps}

    # The model stays resident (it is small next to the actor on one GPU): veRL's memory
    # hand-over calls are accepted and change nothing.
    async def set_global_steps(self, global_steps: int):
        self.global_steps = global_steps

    async def wake_up(self, tags: list[str] | None = None):
        pass

    async def sleep(self):
        pass

    async def clear_kv_cache(self):
        pass

    async def release_kv_cache(self):
        pass

    async def resume_kv_cache(self):
        pass

    async def abort_all_requests(self, reject_request: bool = False) -> dict:
        return {"aborted_count": 0, "request_ids": []}

    async def resume_generation(self):
        pass

    async def start_profile(self, **kwargs):
        pass

    async def stop_profile(self):
        pass


class HFReplica(RolloutReplica):
    """One `HFServer` per replica, on the GPU of the replica's first worker."""

    async def launch_servers(self):
        if self.world_size != 1:
            raise ValueError(
                "the hf rollout serves one GPU per replica: set "
                "actor_rollout_ref.rollout.tensor_model_parallel_size=1 (and data/pipeline 1)"
            )
        env = {}
        if self.workers:
            device_ids = await self.workers[0].__ray_call__.remote(
                lambda worker: ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
            )
            if device_ids:
                env = {
                    "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1",
                    "CUDA_VISIBLE_DEVICES": str(device_ids[0]),
                }
        device = "cuda:0" if env else "cpu"
        server = (
            ray.remote(HFServer)
            .options(
                name=server_name(self.replica_rank),
                runtime_env={"env_vars": env},
                max_concurrency=self.max_concurrency,
            )
            .remote(
                model_path=_local_model_path(self.model_config),
                device=device,
                dtype=self.config.dtype,
                response_length=self.config.response_length,
            )
        )
        await server.status.remote()  # the model is loaded
        self.servers = [server]
        self._server_handle = server
        self._server_address = server_name(self.replica_rank)

    def rollout_worker_use_gpu(self) -> bool:
        return True


def _local_model_path(model_config) -> str:
    """The model's local folder (veRL copies a remote path to local disk), from the model config
    veRL hands a replica: its DictConfig, or the dataclass."""
    if not isinstance(model_config, HFModelConfig):
        model_config = omega_conf_to_dataclass(model_config, dataclass_type=HFModelConfig)
    return model_config.local_path


class HFServerAdapter(BaseRollout):
    """Inside a training worker: hands the actor's weights to its replica's server."""

    def __init__(self, config, model_config, device_mesh, replica_rank: int = -1, **kwargs):
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", "0"))
        self.replica_rank = rank if replica_rank == -1 else replica_rank
        self.is_leader_rank = True
        self._server = None

    def server(self):
        if self._server is None:  # started after the training workers
            self._server = ray.get_actor(server_name(self.replica_rank))
        return self._server

    async def resume(self, tags: list[str]):
        pass

    async def release(self):
        pass

    @torch.no_grad()
    async def update_weights(self, weights, wire_format: str = "named_tensors", **kwargs):
        if wire_format != "named_tensors":
            raise ValueError(f"the hf rollout takes full named tensors, not {wire_format!r}")
        # every rank walks the generator: gathering a sharded tensor is collective
        named = [(name, tensor.detach().to("cpu")) for name, tensor in weights]
        await self.server().update_weights.remote(named)
        if kwargs.get("global_steps") is not None:
            await self.server().set_global_steps.remote(kwargs["global_steps"])


def register() -> None:
    """Make `rollout.name=hf` known to veRL's replica registry and rollout-class lookup."""
    RolloutReplicaRegistry.register(NAME, lambda: HFReplica)
    # veRL keeps its rollout classes in a module dict and offers no function to add one
    rollout_base._ROLLOUT_REGISTRY[(NAME, "async")] = f"{MODULE}.HFServerAdapter"


register()
