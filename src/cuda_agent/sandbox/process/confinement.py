"""Confinement of untrusted processes: scrubbed environment, rlimits, Landlock, seccomp.

Applied in a child right after it is forked and before any candidate code runs. Each layer is used
where the OS allows it (Landlock needs Linux >= 5.13; seccomp needs x86-64 or aarch64) and
`apply_confinement` reports which layers took effect, so a verdict can say so.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct
from pathlib import Path

_KEEP_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
)


def scrubbed_env(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Only what CUDA and a compiler need; HOME and TMPDIR inside the workdir; no secrets."""
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
    tmp = workdir / ".tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(workdir), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1"
    )
    env.update(extra or {})
    return env


def apply_confinement(workdir: Path, no_processes: bool = False) -> dict[str, bool]:
    """Confine the calling process to `workdir`; returns which layers are active. With
    `no_processes` it can start no process either (threads it can): a candidate's process,
    whose GPU work must all happen where the harness's GPU trace records it.

    Memory is limited by the parent watching the child's resident size, not by RLIMIT_AS or
    RLIMIT_DATA: CUDA maps far more address space than it uses, and either limit breaks its
    initialisation (cudaGetDeviceCount fails with error 304).
    """
    env = scrubbed_env(workdir)  # read what is kept before clearing
    os.environ.clear()
    os.environ.update(env)
    os.chdir(workdir)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 30, 4 << 30))
    return {"landlock": _landlock(workdir), "seccomp": _seccomp(no_processes)}


def confine_preexec(workdir: Path):
    """A `preexec_fn` for subprocess: the command may write only beneath `workdir`, opens no
    inet sockets and signals no process outside its own (pass `env=scrubbed_env(...)` too)."""

    def confine() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _landlock(workdir)
        _seccomp()

    return confine


# ---- Landlock: writes only beneath the workdir (and /dev for the GPU and shared memory) ----

_LANDLOCK_CREATE, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT = 444, 445, 446
_FS_WRITE_RIGHTS = [1 << 1] + [1 << i for i in range(4, 13)]  # WRITE_FILE, REMOVE_*, MAKE_*
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_SIGNAL = 1 << 1
_PR_SET_NO_NEW_PRIVS = 38


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _landlock(workdir: Path) -> bool:
    libc = _libc()
    abi = libc.syscall(_LANDLOCK_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return False
    rights = (
        sum(_FS_WRITE_RIGHTS) | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    )
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("QQQ", rights, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_LANDLOCK_CREATE, buf, len(attr), 0)
    if ruleset < 0:
        return False
    try:
        for path in (workdir, Path("/dev")):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
                if libc.syscall(_LANDLOCK_ADD_RULE, ruleset, 1, rule, 0) != 0:
                    return False
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.syscall(_LANDLOCK_RESTRICT, ruleset, 0) == 0
    finally:
        os.close(ruleset)


# ---- seccomp: no inet/packet sockets, no signals or ptrace to other processes ----

_ARCH = {  # audit arch, socket, kill, tkill, tgkill, ptrace, vm_readv, vm_writev, pidfd_send_signal
    "x86_64": (0xC000003E, 41, 62, 200, 234, 101, 310, 311, 424),
    "aarch64": (0xC00000B7, 198, 129, 130, 131, 117, 270, 271, 424),
}
_PROCESS_CALLS = {  # clone, clone3, then fork and vfork where they exist
    "x86_64": (56, 435, 57, 58),
    "aarch64": (220, 435),
}
_CLONE_THREAD = 0x00010000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x45, 0x06
_RET_ALLOW, _RET_EPERM, _RET_EACCES = 0x7FFF0000, 0x00050001, 0x0005000D
_RET_ENOSYS = 0x00050026  # clone3: its flags are out of a filter's reach; libc falls back to clone
_AF_INET, _AF_INET6, _AF_PACKET = 2, 10, 17
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


def _seccomp(no_processes: bool = False) -> bool:
    spec = _ARCH.get(platform.machine())
    if spec is None:
        return False
    arch, sock, kill, tkill, tgkill, ptrace, vm_r, vm_w, pidfd_sig = spec
    processes = []  # with no_processes: clone only with CLONE_THREAD, clone3 unknown, no fork
    if no_processes:
        clone, clone3, *forks = _PROCESS_CALLS[platform.machine()]
        processes = [
            (_BPF_JEQ_K, clone, "clone", None),
            (_BPF_JEQ_K, clone3, "enosys", None),
            *[(_BPF_JEQ_K, nr, "eperm", None) for nr in forks],
        ]
    me, group = os.getpid(), (-os.getpid()) & 0xFFFFFFFF
    ld, jeq, ret = _BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_RET_K
    program = [
        (ld, 4, None, None),  # seccomp_data.arch
        (jeq, arch, None, "allow"),
        (ld, 0, None, None),  # seccomp_data.nr
        *[(jeq, nr, "eperm", None) for nr in (ptrace, vm_r, vm_w, pidfd_sig)],
        *processes,
        (jeq, sock, "socket", None),
        *[(jeq, nr, "signal", None) for nr in (kill, tkill, tgkill)],
        (ret, _RET_ALLOW, None, None),
        ("socket", ld, 16, None, None),  # args[0] low word: the address family
        *[(jeq, fam, "eacces", None) for fam in (_AF_INET, _AF_INET6, _AF_PACKET)],
        (ret, _RET_ALLOW, None, None),
        ("clone", ld, 16, None, None),  # args[0] low word: the flags
        (_BPF_JSET_K, _CLONE_THREAD, "allow", "eperm"),
        ("signal", ld, 16, None, None),  # args[0] low word: the target pid (tgid for tgkill)
        *[(jeq, pid, "allow", None) for pid in (me, 0, group)],
        ("eperm", ret, _RET_EPERM, None, None),
        ("allow", ret, _RET_ALLOW, None, None),
        ("eacces", ret, _RET_EACCES, None, None),
        ("enosys", ret, _RET_ENOSYS, None, None),
    ]
    prog = _assemble(program)
    filt = ctypes.create_string_buffer(prog, len(prog))
    fprog = struct.pack("HxxxxxxP", len(prog) // 8, ctypes.addressof(filt))
    fbuf = ctypes.create_string_buffer(fprog, len(fprog))
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fbuf, 0, 0) == 0


def _assemble(program) -> bytes:
    """Classic BPF with symbolic jump targets: entries are (code, k, jt, jf) or (label, ...)."""
    rows = [r[1:] if isinstance(r[0], str) else r for r in program]
    labels = {r[0]: i for i, r in enumerate(program) if isinstance(r[0], str)}
    out = []
    for i, (code, k, jt, jf) in enumerate(rows):
        jt_off = labels[jt] - i - 1 if jt else 0
        jf_off = labels[jf] - i - 1 if jf else 0
        out.append(struct.pack("HBBI", code, jt_off, jf_off, k))
    return b"".join(out)
