"""Task synthesis: seed operators mined from torch and transformers, composed into programs,
filtered by execution, labelled by tracing, deduplicated, decontaminated against KernelBench,
exported as a CUDA-Agent-Ops-6K-compatible dataset."""

from cuda_agent.synth.catalog import Catalog, OpEntry, catalog_rows, load_catalog
from cuda_agent.synth.config import SynthConfig, default_cache_dir
from cuda_agent.synth.export import DATA_SOURCE
from cuda_agent.synth.filters import FilterConfig, compile_check, eager_check
from cuda_agent.synth.journal import STAGES, open_journals
from cuda_agent.synth.llm import ChatModel, OpenAIChat, llm_compose
from cuda_agent.synth.pipeline import NoProgress, Pipeline, Progress, RunResult

__all__ = [
    "DATA_SOURCE",
    "STAGES",
    "Catalog",
    "ChatModel",
    "FilterConfig",
    "NoProgress",
    "OpEntry",
    "OpenAIChat",
    "Pipeline",
    "Progress",
    "RunResult",
    "SynthConfig",
    "catalog_rows",
    "compile_check",
    "default_cache_dir",
    "eager_check",
    "llm_compose",
    "load_catalog",
    "open_journals",
]
