"""The static guard's rules, as data: what a solution's sources may import, include and call.

Decisions behind the tables:
- Deny by default. Every `torch.*` (Python) and `at::`/`torch::`/`c10::` (C++) name is PyTorch
  compute unless it is allocation (`empty*`, `zeros*`, `ones*`, `full*`: a constant fill is
  allocation), a dtype, a type, tensor metadata, a view, the current CUDA stream or the device
  guard.
- cuBLAS and cuDNN may be called, also through torch's own handle
  `at::cuda::getCurrentCUDABlasHandle()`: the kernels that run are cuBLAS's either way, and the
  handle carries torch's current stream and workspace. torch's GEMM wrappers (`at::cuda::blas::*`)
  are ATen, not cuBLAS, and are refused like any ATen operator.
- cub is CUDA's own toolkit of block- and warp-level building blocks and may be included; its
  device-wide algorithms (`cub::Device*`), thrust and CUTLASS are libraries that launch their own
  kernels to do the work, and are refused.
- `std::thread`/`std::async` are refused: work happens on the calling thread, inside the call the
  harness times, not in a thread that can outlive it. Streams a binding creates itself are
  allowed (a multi-stream kernel can be honest); the runtime times with a device-wide
  synchronisation, so they hide nothing. Python's `torch.cuda` is refused (streams, events and
  device state belong to the harness, and patching them is a classic timing cheat) except the
  queries and the device-wide synchronize an honest forward writes, which change nothing.
- Python's `.to()`, `.cuda()` and `.float()` pass the static check: on a tensor already of that
  device and dtype they dispatch nothing, and one that converts dispatches `aten::_to_copy`, which
  the runtime guard refuses. A `.to()` naming a dtype other than float32 is refused statically.
- `at::from_blob` is refused: outputs come from the harness's allocator (`at::empty*`), not from
  memory a binding keeps between calls.
- Files, processes, signals, the environment, exiting, reflection and dynamic code are refused in
  both languages: a solution only checks tensors, allocates outputs and launches kernels.
- Each rule has a family (profile.py): `torch_compute` where PyTorch does the work, which the
  kernelbench profile lists instead of refusing, and `integrity` for everything else. Within
  PyTorch compute, what lowers precision (a conversion or a call naming a dtype other than
  float32 or float64), reaches storage or streams (`set_`, `record_stream`, `as_subclass`, ...)
  or is not an ATen operator at all (an at:: stream, event or generator) is integrity.
"""

from __future__ import annotations

import ast
import re

import torch

from cuda_agent.sandbox.guard.profile import Family

# ---------------------------------------------------------------------------------- C++/CUDA

ALLOWED_INCLUDES = tuple(
    """
    cuda.h cuda_runtime.h cuda_runtime_api.h device_launch_parameters.h device_functions.h
    vector_types.h vector_functions.h math_constants.h mma.h cuda_fp16.h cuda_fp16.hpp
    cuda_bf16.h cuda_bf16.hpp cuda_fp8.h cuda_fp8.hpp cuda_pipeline.h cuda_pipeline_primitives.h
    cuda_awbarrier.h cuda_awbarrier_primitives.h cooperative_groups.h cooperative_groups/* cub/*
    cuda/* nv/*
    cublas_v2.h cublasLt.h cublas_api.h cudnn.h cudnn_*.h
    torch/extension.h torch/types.h torch/csrc/utils/pybind.h ATen/ATen.h ATen/Tensor.h
    ATen/core/Tensor.h ATen/Dispatch.h ATen/cuda/CUDAContext.h ATen/cuda/Exceptions.h
    c10/cuda/CUDAStream.h c10/cuda/CUDAGuard.h
    c10/cuda/CUDAException.h c10/util/Half.h c10/util/BFloat16.h binding_registry.h
    algorithm array atomic bit bitset cassert cctype cfloat cinttypes climits cmath complex
    cstddef cstdint cstdio cstdlib cstring deque functional initializer_list iomanip iostream
    istream iterator limits list map memory mutex new numeric optional ostream queue set sstream
    stack stdexcept string string_view tuple type_traits typeinfo unordered_map unordered_set
    utility variant vector assert.h float.h inttypes.h limits.h math.h stdbool.h stddef.h
    stdint.h stdio.h stdlib.h string.h
    """.split()
)
INFRA_HEADERS = frozenset({"binding_registry.h"})  # the harness's, however a source reaches it
ATEN_INCLUDES = ("ATen/native/*", "ATen/ops/*", "ATen/cuda/CUDABlas.h")  # PyTorch compute
INCLUDE_REASONS = (  # (pattern, what it is); first match wins
    ("ATen/native/*", "ATen's internal kernels"),
    ("ATen/ops/*", "ATen's operators"),
    ("ATen/cuda/CUDABlas.h", "torch's own GEMM wrappers; call cuBLAS directly"),
    ("cutlass/*", "CUTLASS, a kernel library"),
    ("cute/*", "CUTLASS, a kernel library"),
    ("thrust/*", "thrust, a library that launches its own kernels"),
    ("pybind11/*", "pybind11 itself; binding_registry.h brings what a binding needs"),
    ("Python.h", "the Python C API"),
    ("curand*", "an RNG library; kernels compute outputs from their inputs"),
    ("unistd.h", "system calls"),
    ("sys/*", "system calls"),
    ("dlfcn.h", "dynamic loading"),
    ("signal.h", "signals"),
    ("csignal", "signals"),
    ("fcntl.h", "file access"),
    ("fstream", "file access"),
    ("filesystem", "file access"),
    ("spawn.h", "process creation"),
    ("pthread.h", "threads"),
    ("thread", "threads"),
    ("future", "threads"),
    ("chrono", "clocks; timing belongs to the harness"),
    ("ctime", "clocks; timing belongs to the harness"),
    ("time.h", "clocks; timing belongs to the harness"),
)
INCLUDE_FIX = (
    "include only CUDA headers, cuBLAS/cuDNN, torch/extension.h with its CUDA stream and guard "
    "headers, the standard library and your own headers"
)

# Allocation, in both languages: torch.NAME in Python, at::/torch::NAME in C++ (a constant fill is
# allocation; runtime.ALLOWED_OPS allows the aten ops these dispatch)
ALLOCATORS = "empty empty_like empty_strided zeros zeros_like ones ones_like full full_like".split()
ALLOWED_ATEN = tuple(
    re.compile(p)
    for p in (
        r"(at|torch|c10)::(Tensor|TensorOptions|Half|BFloat16|IntArrayRef|ArrayRef|Device|Scalar"
        r"|OptionalIntArrayRef|Dtype|optional|nullopt|string_view|irange|elementSize|toString)",
        r"(at|torch|c10)::(ScalarType|DeviceType|Layout|MemoryFormat)(::\w+)?",  # enum values
        r"(at|torch|c10)::k[A-Z]\w*",
        rf"(at|torch)::({'|'.join(ALLOCATORS)}|dtype|device)",
        r"(at|c10)::cuda::(getCurrentCUDAStream|CUDAStream|CUDAGuard|OptionalCUDAGuard"
        r"|current_device|getCurrentDeviceProperties|getDeviceProperties"
        r"|getCurrentCUDABlasHandle|getCurrentCUDABlasLtHandle)",
    )
)
ATEN_REASONS = (  # (prefix, what it is); default: not on the ATen allow-list
    ("at::native::", "ATen's internal kernels"),
    ("at::cuda::blas::", "torch's own GEMM wrappers, not cuBLAS"),
    ("at::_ops::", "an ATen operator"),
    ("at::from_blob", "wraps memory the harness's allocator does not own"),
    ("torch::from_blob", "wraps memory the harness's allocator does not own"),
)
ATEN_FIX = (
    "from ATen use only allocation (empty*, zeros*, ones*, full*), tensor metadata and types, the "
    "current CUDA stream and the device guard; write a kernel or call cuBLAS/cuDNN for the work"
)
ALLOWED_PYBIND = frozenset(
    "arg arg_v kw_only pos_only return_value_policy call_guard gil_scoped_release".split()
    + ["module", "module_"]
)  # the module only as the parameter of CUDA Agent's registration functions (see infra/)
# What a registration function may not do with the module it is handed: anything beyond .def
PY_MODULE_METHODS = frozenset("attr import add_object def_submodule reload inc_ref dec_ref".split())

# Tensor methods, shared with the Python rules: everything callable on torch.Tensor is compute
# except these metadata, view and allocation methods.
ALLOWED_TENSOR_METHODS = frozenset(
    """
    size dim ndimension numel nelement stride storage_offset data_ptr element_size is_contiguous
    is_floating_point is_complex is_signed get_device view view_as reshape reshape_as contiguous
    unsqueeze squeeze flatten unflatten permute transpose t movedim moveaxis swapaxes swapdims
    expand expand_as narrow select split chunk unbind as_strided diagonal unfold detach
    requires_grad_ new_empty new_empty_strided new_zeros new_ones new_full dim_order has_names
    is_pinned is_inference
    """.split()
)
# The same view and metadata operations called as torch functions (torch.flatten(x, 1) is
# x.flatten(1)); the runtime guard still refuses any that has to copy.
VIEW_FUNCTIONS = frozenset(
    f"torch.{n}" for n in ALLOWED_TENSOR_METHODS if callable(getattr(torch, n, None))
)
COMPUTE_METHODS = (
    frozenset(
        n
        for n in dir(torch.Tensor)
        if not n.startswith("_") and callable(getattr(torch.Tensor, n, None))
    )
    - ALLOWED_TENSOR_METHODS
)
CPP_MEMBER_COLLISIONS = frozenset(
    {"resize", "type"}
)  # std::vector::resize, Tensor::type() (metadata)
CPP_COMPUTE_METHODS = (COMPUTE_METHODS | {"index", "index_put_", "item"}) - CPP_MEMBER_COLLISIONS
# Tensor methods that stay refused where PyTorch compute is allowed: conversions that lower
# precision, and access to storage, streams and tensor subclasses.
INTEGRITY_METHODS = frozenset(
    """
    half bfloat16 type type_as char byte short int long bool set_ storage untyped_storage
    share_memory_ pin_memory record_stream resize_ resize_as_ as_subclass
    """.split()
)
# ATen operator names (aten::gelu -> gelu): an at::/torch:: name among them is PyTorch compute;
# any other name not on the allow-list (streams, events, generators, graphs) is not.
ATEN_OPS = (
    frozenset(
        name.split("::", 1)[1].split(".")[0]
        for name in torch._C._dispatch_get_all_op_names()
        if name.startswith("aten::")
    )
    - INTEGRITY_METHODS
    - {"to", "_to_copy", "from_blob"}
)
ATEN_OP_ROOTS = (  # where an ATen operator's name starts in a qualified C++ name
    ("at",), ("torch",), ("at", "native"), ("at", "_ops"), ("torch", "nn", "functional"),
)  # fmt: skip
# Dtype names that lower the precision of float32 work (a conversion or a compute call naming
# one is integrity): C++ tokens, read inside the call's parentheses.
CPP_LOW_DTYPES = frozenset(
    """
    kHalf kFloat16 kBFloat16 kChar kByte kShort kInt kLong kBool kInt8 kInt16 kInt32 kInt64
    kUInt8 kQInt8 kQUInt8 kQInt32 Half BFloat16 Char Byte Short Int Long Bool
    """.split()
)
CPP_LOW_DTYPE_PREFIXES = ("kFloat8", "kFloat4", "Float8", "Float4")

# Process, file and environment access. Distinctive names are refused wherever they appear;
# common words only when called (`write(`) or taken by address (`&write`); std:: names in STD.
SYS_DISTINCT = frozenset(
    """
    system popen pclose fork vfork execl execlp execle execv execvp execvpe execve fexecve
    posix_spawn posix_spawnp kill killpg ptrace prctl syscall dlopen dlsym dlmopen fopen freopen
    fdopen getenv secure_getenv setenv putenv unsetenv clearenv socket _exit _Exit quick_exit
    atexit at_quick_exit abort mmap mprotect pthread_create pthread_kill setrlimit prlimit getppid
    chdir unlink unlinkat openat creat tmpfile
    """.split()
)
SYS_COMMON = frozenset(
    """
    exit open read write pread pwrite close remove rename link symlink mkdir rmdir chmod chown
    truncate ftruncate signal raise sigaction clone
    """.split()
)
STD_FORBIDDEN = SYS_DISTINCT | frozenset(  # std::remove is also <algorithm>'s: not listed
    """
    exit rename signal raise thread jthread async terminate set_terminate filesystem ifstream
    ofstream fstream
    """.split()
)
SYS_FIX = "a binding only checks tensors, allocates outputs and launches kernels"

FORBIDDEN_CUDA_PREFIXES = (  # device-wide state, the harness's IPC channel, profiler control
    "cudaDeviceReset cudaThreadExit cudaSetDevice cudaSetValidDevices cudaIpc cudaProfilerStart "
    "cudaProfilerStop cudaLibraryLoad cuCtx cuDevicePrimaryCtx cuProfiler cuIpc cuModuleLoad "
    "cuLibraryLoad cupti"
).split()
CUDA_FIX = (
    "device, context and profiler state belong to the harness; use the current device and stream"
)

FORBIDDEN_MACROS = {
    "PYBIND11_MODULE": "defines its own Python module; register functions with REGISTER_BINDING",
    "PYBIND11_EMBEDDED_MODULE": "embeds Python; register functions with REGISTER_BINDING",
    "TORCH_LIBRARY": "registers operators with PyTorch's dispatcher; use REGISTER_BINDING",
    "TORCH_LIBRARY_IMPL": "registers kernels with PyTorch's dispatcher (they could replace "
    "ATen's); use REGISTER_BINDING",
    "TORCH_LIBRARY_FRAGMENT": "registers operators with PyTorch's dispatcher; use REGISTER_BINDING",
}
PY_FIX = "a binding takes and returns tensors only"
NS_ROOTS = frozenset({"at", "torch", "c10", "pybind11", "py"})
PY_C_API = re.compile(r"_?Py[A-Z_]\w*")
CPP_KEYWORDS = frozenset(
    "return else do case throw new delete sizeof co_return co_await co_yield if while for switch "
    "and or not".split()
)


# ------------------------------------------------------------------------------------- Python

ALLOWED_IMPORTS = frozenset(
    "torch torch.nn torch.nn.functional cuda_extension math typing dataclasses functools numbers "
    "itertools collections collections.abc "
    "__future__".split()
)
IMPORT_REASONS = {
    "model": "the reference program",
    "triton": "Triton kernels, not CUDA ones",
    "time": "clocks; timing belongs to the harness",
    **dict.fromkeys(("random", "numpy"), "a second source of compute or randomness"),
    **dict.fromkeys(("os", "pathlib", "io", "shutil", "tempfile"), "file and process access"),
    **dict.fromkeys(("sys", "builtins", "gc", "inspect"), "the interpreter's own state"),
    **dict.fromkeys(("subprocess", "signal", "socket"), "processes, signals or the network"),
    **dict.fromkeys(("threading", "multiprocessing", "concurrent", "asyncio"), "concurrency"),
    **dict.fromkeys(
        ("importlib", "ctypes", "operator"), "dynamic code, native calls or hidden ops"
    ),
}
TORCH_MODULES = frozenset({"torch", "torch.nn", "torch.nn.functional"})
ALLOCATION = frozenset(f"torch.{n}" for n in ALLOCATORS)
ALLOWED_TORCH = (
    TORCH_MODULES
    | ALLOCATION
    | VIEW_FUNCTIONS
    | frozenset(
        f"torch.{name}"
        for name in """
        Tensor Size device dtype no_grad inference_mode is_tensor is_floating_point finfo iinfo
        contiguous_format channels_last channels_last_3d preserve_format strided nn.Module float32
        float float16 half bfloat16 float64 double int8 int16 short int32 int int64 long uint8
        uint16 uint32 uint64 bool complex64 cfloat complex128 cdouble float8_e4m3fn float8_e5m2
        cuda.synchronize cuda.current_stream cuda.current_device cuda.is_available
        cuda.device_count cuda.get_device_capability cuda.get_device_properties
        """.split()
    )
)
# Python conversions that are free when they change nothing (see the module's docstring).
PY_CONVERSION_METHODS = frozenset({"to", "cuda", "float"})
FLOAT32_NAMES = frozenset({"torch.float32", "torch.float"})
TORCH_DTYPES = frozenset(
    f"torch.{n}" for n in dir(torch) if isinstance(getattr(torch, n, None), torch.dtype)
)
TORCH_CATEGORIES = (  # (prefixes, what it is, what to do instead); first match wins
    ("torch.ops", "a PyTorch operator", "write a kernel instead"),
    (
        "torch.manual_seed torch.seed torch.initial_seed torch.random torch.Generator "
        "torch.default_generator torch.get_rng_state torch.set_rng_state torch.cuda.manual_seed "
        "torch.cuda.manual_seed_all torch.cuda.seed torch.cuda.seed_all torch.cuda.initial_seed "
        "torch.cuda.get_rng_state torch.cuda.set_rng_state torch.cuda.random",
        "torch's RNG state",
        "the harness draws inputs with a secret seed; compute outputs from the inputs you get",
    ),
    (
        "torch.compile torch._dynamo torch._inductor torch.jit torch.fx torch.export",
        "a PyTorch compiler, which generates its own kernels",
        "write CUDA kernels in kernels/",
    ),
    (
        "torch.utils.cpp_extension",
        "building an extension at runtime",
        "put sources in kernels/; the harness builds them",
    ),
    (
        "torch.cuda",
        "streams, events, synchronisation and device state, which belong to the harness",
        "launch kernels on the current stream from your binding",
    ),
    (
        "torch.testing torch.allclose torch.isclose torch.equal",
        "a comparison; comparing outputs is the harness's job",
        "return your kernel's output",
    ),
    (
        "torch.backends torch.set_ torch.use_deterministic_algorithms",
        "a global PyTorch setting",
        "leave settings to the harness",
    ),
    (
        "torch.library torch._C torch._ops torch.overrides torch.utils._python_dispatch "
        "torch._subclasses torch._prims torch._refs torch._decomp",
        "PyTorch's dispatcher internals",
        "call your extension instead",
    ),
    (
        "torch.save torch.load torch.hub torch.utils torch.distributed torch.multiprocessing "
        "torch.profiler torch.autograd.profiler torch.autograd.profiler_util",
        "files, processes or profiling",
        "a solution only launches its kernels",
    ),
)
COMPUTE = ("compute", "PyTorch compute", "write a kernel instead")
FORBIDDEN_BUILTINS = {  # name: (what it is, what to do instead)
    **dict.fromkeys(
        ("getattr", "setattr", "delattr", "hasattr"), ("reflection", "name attributes directly")
    ),
    **dict.fromkeys(("globals", "locals", "vars"), ("namespaces as dicts", "use names directly")),
    **dict.fromkeys(("eval", "exec", "compile"), ("code built at runtime", "write plain code")),
    "__import__": ("an import by name at runtime", "import at the top of the file"),
    "open": ("file access", "a solution reads and writes no files"),
    **dict.fromkeys(("breakpoint", "input"), ("a debugger or the terminal", "remove it")),
    **dict.fromkeys(
        ("exit", "quit", "SystemExit"),
        (
            "ending the process",
            "return the output; the verdict comes from the harness, not an exit",
        ),
    ),
}
_KERNELS = "write it in your kernel"
MESSAGES = {  # what the checker says, by rule
    "model": "references Model (the reference program); ModelNew must compute with your kernels",
    "define_model": "defines a class named Model (the reference's name); name yours ModelNew",
    "base": "{cls} subclasses {base}; subclass nn.Module (or your own classes) only",
    "keywords": "{cls} sets a metaclass or class keywords; write a plain class",
    "dunder_method": "defines {name} (it changes how the harness calls or inspects the module); "
    "define __init__ and forward only",
    "relative": "uses a relative import; import allowed modules by name",
    "star": "imports * from {module}; import names explicitly",
    "import": "imports {name}{why}; import only {allowed}",
    "imports_torch": "imports {q} ({what}); {fix}",
    "builtin": "uses {name} ({what}); {fix}",
    "dunder": "uses {name} (Python internals); write plain code",
    "module_value": "passes the module {q} around as a value; name allowed functions directly",
    "nn_outside_init": "builds {q} outside __init__ (nn modules only hold parameters, built in "
    "__init__); pass the parameters to your kernel",
    "torch": "{verb} {q} ({what}); {fix}",
    "hook": "calls .{name}() (hooks change what the harness runs); compute in forward",
    "held_module": "calls the torch module self.{name} ({q}: PyTorch compute); pass its "
    "parameters to your kernel",
    "method": "calls the tensor method .{name}() (PyTorch compute); write a kernel instead",
    "private": "calls the private method .{name}() (library internals); write plain code",
    "builtin_on_tensor": f"applies {{name}}() to a tensor (PyTorch compute); {_KERNELS}",
    "matmul": "uses the @ operator (a PyTorch matmul); write a GEMM kernel or call cuBLAS",
    "operator": f"applies {{symbol}} to a tensor (PyTorch compute); {_KERNELS}",
    "compare": f"compares tensors (PyTorch compute); {_KERNELS}",
    "slice_write": f"writes into a tensor slice (a PyTorch copy or fill); {_KERNELS}",
    "tensor_index": f"indexes a tensor with a tensor (a PyTorch gather); {_KERNELS}",
    "patch": "{verb} {target} (monkey-patching a library); never modify torch or other modules",
    "no_extension": "ModelNew never calls cuda_extension; the work must run in your kernels",
}
# Rules whose findings read alike but belong to another family (see PY_FAMILIES)
MESSAGES |= {
    "torch_compute": MESSAGES["torch"],  # a torch.* compute function
    # a torch.* compute function that lowers precision or reaches storage (INTEGRITY_METHODS)
    "torch_integrity": MESSAGES["torch"],
    "imports_torch_compute": MESSAGES["imports_torch"],
    "integrity_method": MESSAGES["method"],  # INTEGRITY_METHODS, or .to() naming a lower dtype
}
_I, _T = Family.INTEGRITY, Family.TORCH_COMPUTE
PY_FAMILIES = {
    "model": _I, "define_model": _I, "base": _I, "keywords": _I, "dunder_method": _I,
    "relative": _I, "star": _I, "import": _I, "imports_torch": _I, "builtin": _I,
    "dunder": _I, "module_value": _I, "torch": _I, "hook": _I, "private": _I, "patch": _I,
    "no_extension": _I, "torch_integrity": _I, "integrity_method": _I, "syntax": _I,
    "torch_compute": _T, "imports_torch_compute": _T, "nn_outside_init": _T, "held_module": _T,
    "method": _T, "builtin_on_tensor": _T, "matmul": _T, "operator": _T, "compare": _T,
    "slice_write": _T, "tensor_index": _T,
}  # fmt: skip
CPP_FAMILIES = {
    "include": _I, "directive": _I, "computed_include": _I, "macro": _I, "load_hook": _I,
    "pybind11_module": _I, "python_c_api": _I, "integrity_method": _I, "pybind_method": _I,
    "using_namespace": _I,
    "namespace_alias": _I, "aten": _I, "pybind": _I, "std": _I,
    "cub_device": _I, "thrust": _I, "sys": _I, "cuda_state": _I,
    "include_aten": _T, "method": _T, "aten_compute": _T,
}  # fmt: skip

TENSOR_BUILTINS = frozenset(
    "abs sum max min pow round divmod sorted float int bool complex any all".split()
)
ALLOWED_DUNDER_NAMES = frozenset({"__name__", "__doc__", "__all__"})
ALLOWED_DUNDER_ATTRS = frozenset({"__init__", "__name__", "__doc__", "__qualname__", "__class__"})
ALLOWED_DUNDER_METHODS = frozenset({"__init__", "__repr__", "__str__"})
ALLOWED_REGISTER = frozenset({"register_buffer", "register_parameter", "register_module"})
HOLDER_TENSORS = frozenset({"weight", "bias", "running_mean", "running_var", "in_proj_weight"})
VIEW_PROPERTIES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag", "grad"})
NON_TENSOR_METHODS = frozenset(
    """
    size dim ndimension numel nelement stride storage_offset data_ptr element_size is_contiguous
    is_floating_point is_complex is_signed get_device dim_order has_names is_pinned is_inference
    split chunk unbind
    """.split()
)
TENSOR_RETURNING = ALLOWED_TENSOR_METHODS - NON_TENSOR_METHODS
TENSOR_VIEW_FUNCTIONS = frozenset(f"torch.{n}" for n in TENSOR_RETURNING) & VIEW_FUNCTIONS
PY_COMMON_METHODS = COMPUTE_METHODS & frozenset(
    n for t in (list, dict, set, str, tuple, int, float, bytes) for n in dir(t)
)  # set.add, list.sort, dict.values: tensor methods only when called on a known tensor
TORCH_HIGH_DTYPES = frozenset({"torch.float32", "torch.float", "torch.float64", "torch.double"})
COMPARISONS = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip
SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^",
    ast.BitAnd: "&", ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not",
}  # fmt: skip
