"""What the parent and a candidate's process say to each other: one request type per command,
one answer type per request, errors typed.

They travel pickled over the pipe; tensors inside them travel over CUDA IPC (torch's reductions),
so an input set handed over is the parent's own memory, never a copy the candidate could keep.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from cuda_agent.sandbox.verdict import Status

if TYPE_CHECKING:  # importing it imports torch; ExtensionCall must be readable before torch
    from cuda_agent.sandbox.timing.call import CallTime

# ---- requests (parent -> child) ----


@dataclass(frozen=True)
class Load:
    """Import the extension and model_new.py; build ModelNew(*init_inputs) with Model's state."""

    command: ClassVar[str] = "load"
    so_path: str
    entry_path: str
    init_inputs: list
    state_dict: dict
    eval_mode: bool = False  # call ModelNew.eval() (module_mode.py); else leave it as constructed
    seed: int | None = None  # the seed Model was built under: ModelNew is built under it too


@dataclass(frozen=True)
class LoadSingleFile:
    """Import a single-file submission (KernelBench's format) with the extension-building calls
    of torch.utils.cpp_extension answered by the parent (ExtensionCall, ExtensionBuilt); build
    `entry_point`(*init_inputs) with Model's state."""

    command: ClassVar[str] = "load_single_file"
    entry_path: str
    entry_point: str
    init_inputs: list
    state_dict: dict
    eval_mode: bool = False  # as Load's
    seed: int | None = None  # as Load's


@dataclass(frozen=True)
class ExtensionBuilt:
    """The parent's answer to an ExtensionCall: the built module's path and the name it is
    imported under (None where it was compiled but could not be linked: no GPU libraries)."""

    so_path: str | None
    module_name: str


@dataclass(frozen=True)
class Verify:
    """One forward per input set under the runtime guard; the GPU kernels too on set
    `profile_at` (-1: on none)."""

    command: ClassVar[str] = "verify"
    sets: list
    poison_bytes: int
    profile_at: int


@dataclass(frozen=True)
class StoreSets:
    """Keep these input sets (the timing's, then the staging set) for the calls that follow."""

    command: ClassVar[str] = "store_sets"
    sets: list


@dataclass(frozen=True)
class Warmup:
    """Untimed forwards on these sets."""

    command: ClassVar[str] = "warmup"
    sets: list


@dataclass(frozen=True)
class DropOutput:
    """Free the last timed output, outside the call and ping the parent's clock compares."""

    command: ClassVar[str] = "drop_output"


@dataclass(frozen=True)
class Ping:
    """A timed call of the harness's own no-op: what a call costs around the timed region."""

    command: ClassVar[str] = "ping"
    poison_bytes: int


@dataclass(frozen=True)
class Call:
    """One timed call on stored set `index`, after an untimed one on set `warm_index` when
    given; with `refill_from`, that set's new content is copied in from the staging set first."""

    command: ClassVar[str] = "call"
    index: int
    warm_index: int | None
    poison_bytes: int
    refill_from: int | None = None


@dataclass(frozen=True)
class Stop:
    """Exit, letting go of every tensor received."""

    command: ClassVar[str] = "exit"


Request = (
    Load
    | LoadSingleFile
    | ExtensionBuilt
    | Verify
    | StoreSets
    | Warmup
    | DropOutput
    | Ping
    | Call
    | Stop
)

# ---- answers (child -> parent) ----


@dataclass(frozen=True)
class Ready:
    """The process is up and confined: which layers took effect, and when each start-up step
    ended (wall-clock stamps)."""

    layers: dict[str, bool]
    stamps: dict[str, float]


@dataclass(frozen=True)
class Done:
    """The answer to Warmup and DropOutput."""


@dataclass(frozen=True)
class Loaded:
    """The answer to Load and LoadSingleFile: how the model got Model's weights, where its
    parameters are named differently (process/model_state.py)."""

    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stored:
    """The answer to StoreSets."""

    count: int


@dataclass(frozen=True)
class Verified:
    """The answer to Verify: an output and a trace per set."""

    outputs: list
    traces: list


@dataclass(frozen=True)
class Timed:
    """The answer to Ping and Call: the output, the call's times, and (Call) the host time of
    its untimed call and refill, which the parent's round trip includes and the times do not."""

    output: Any
    time: CallTime
    warm_ms: float = 0.0


@dataclass(frozen=True)
class ExtensionCall:
    """Sent by a single-file submission's process in the middle of a request, when its code calls
    torch.utils.cpp_extension.load_inline or load: the call's arguments, which the parent checks
    and builds itself before answering with ExtensionBuilt (the request's deadline is paused
    meanwhile). For `load`, the sources are file names and `files` holds their text (and that
    of the headers beside them)."""

    api: str  # "load_inline" | "load"
    name: str
    cpp_sources: tuple[str, ...]
    cuda_sources: tuple[str, ...]
    functions: tuple[tuple[str, str], ...]  # (name, docstring); empty: the sources bind themselves
    files: tuple[tuple[str, str], ...]
    extra_cflags: tuple[str, ...]
    extra_cuda_cflags: tuple[str, ...]
    extra_ldflags: tuple[str, ...]
    extra_include_paths: tuple[str, ...]
    with_cuda: bool | None


@dataclass(frozen=True)
class TritonLauncher:
    """Sent by a Triton submission's process when Triton compiles one of its C modules (its
    driver utilities, or a kernel's launcher, which Triton generates from the kernel's
    signature): the module's name and C source, which the parent compiles with the host
    compiler, since the candidate's process may start no process. Answered with
    TritonLauncherBuilt."""

    name: str
    source: str


@dataclass(frozen=True)
class TritonLauncherBuilt:
    so_path: str


@dataclass(frozen=True)
class TritonCubin:
    """Sent by a Triton submission's process at the last stage of a kernel's compilation: the
    PTX Triton generated and the ptxas flags it would pass; the parent runs ptxas and answers
    with TritonCubinBuilt (the kernel's entry name, read from the PTX, is one of the
    solution's own kernels from then on)."""

    ptx: str
    flags: tuple[str, ...]
    arch: int  # the target's compute capability as Triton numbers it (90: sm_90)


@dataclass(frozen=True)
class TritonCubinBuilt:
    cubin: bytes


# what a single-file submission's process may ask of the parent in the middle of a request
BuildRequest = ExtensionCall | TritonLauncher | TritonCubin
BuildAnswer = ExtensionBuilt | TritonLauncherBuilt | TritonCubinBuilt


class ErrorKind(StrEnum):
    """Whose fault a request's error is, as the child tells it apart."""

    TAMPER = "tamper"  # the GPU trace around a timed or traced call was stopped: a violation
    INTERFACE = "interface"  # ModelNew lacks Model's constructor or state_dict: invalid
    HARNESS = "harness"  # the harness's own allocation ran out of GPU memory
    OOM = "oom"  # the candidate's code ran out of GPU memory (its fault only alone on the GPU)
    ERROR = "error"  # anything else the candidate's code raised

    @property
    def status(self) -> Status:
        return _STATUS.get(self, Status.RUNTIME_ERROR)

    @property
    def out_of_memory(self) -> bool:
        return self in (ErrorKind.OOM, ErrorKind.HARNESS)


_STATUS = {
    ErrorKind.INTERFACE: Status.INVALID,
    ErrorKind.HARNESS: Status.HARNESS_ERROR,
    ErrorKind.TAMPER: Status.VIOLATION,
}


@dataclass(frozen=True)
class ChildError:
    """A request failed; the child exits after sending this. `text`: the error and the
    candidate's own frames."""

    kind: ErrorKind
    text: str


Answer = Ready | Done | Loaded | Stored | Verified | Timed | ChildError | BuildRequest
