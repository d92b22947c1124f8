"""What every veRL worker of a one-GPU run imports (`VERL_USE_EXTERNAL_MODULES=
cuda_agent.rl.worker_plugins`, which the pipeline and `cuda-agent train` set): the `hf` rollout
backend, and value models loaded with the config's attention (no flash-attn there)."""

from cuda_agent.rl import hf_rollout, value_model_attention

__all__ = ["hf_rollout", "value_model_attention"]
