"""cuda-agent: faster PyTorch programs via agent-written CUDA kernels."""

__version__ = "0.1.0"
