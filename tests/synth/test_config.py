"""Where synthesis keeps its caches: beneath the project's one cache folder."""

from __future__ import annotations

from pathlib import Path

from cuda_agent.sandbox import EnvConfig
from cuda_agent.synth import SynthConfig, default_cache_dir


def test_synthesis_caches_beneath_the_sandboxs_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))
    assert EnvConfig().cache_dir == tmp_path / "cache"
    assert default_cache_dir() == tmp_path / "cache" / "synth"
    assert SynthConfig(n=1, out=tmp_path / "out").cache_dir == tmp_path / "cache" / "synth"
    monkeypatch.delenv("CUDA_AGENT_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "cuda-agent" / "synth"
