"""A workspace solution written in another harness's format.

kernelbench   one Python file: ModelNew and load_inline sources (kernelbench.py)
cuda-agent    a CUDA Agent workdir (cuda_agent.py)
sources.py    translation units merged, REGISTER_BINDING calls read
"""

from cuda_agent.sandbox.export.cuda_agent import export_cuda_agent
from cuda_agent.sandbox.export.kernelbench import export_kernelbench

EXPORT_FORMATS = ("kernelbench", "cuda-agent")

__all__ = ["EXPORT_FORMATS", "export_cuda_agent", "export_kernelbench"]
