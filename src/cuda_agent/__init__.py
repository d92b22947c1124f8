"""cuda-agent: make PyTorch programs faster with agent-written CUDA kernels, and train such agents."""

__version__ = "0.1.0"
