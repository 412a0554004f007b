"""What an agent's worker process may do to other processes: nothing.

An agent named with ``keltis serve --agent`` runs as the server's own user, so by default it
could signal the server (``os.kill(os.getppid(), SIGTERM)``), stop it, trace it or read its
memory (where the deal of every game lies). :func:`confine` installs a seccomp filter in the
worker before any agent is made (Linux on x86-64 and AArch64): from then on the worker and
every process it starts may signal only their own process group (``kill(0, ...)``, the
worker's own pid, ``killpg`` of its group, its own threads), and may not trace another
process, read or write its memory, or leave the group (``setsid``, ``setpgid``). Such a call
fails with ``EPERM`` (Python: ``PermissionError``), so the server, and every other process,
is out of the agent's reach, and the worker's group (:func:`os.killpg`) ends all of it.

The filter is a small classic-BPF program: the architecture is checked first (a syscall of
another ABI, such as x86's 32-bit entry or x32, is refused), then the syscall number, then for
the signal calls the target (the first argument, of which the kernel reads the low 32 bits).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from dataclasses import dataclass

# classic BPF, as linux/filter.h and linux/seccomp.h spell it
_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_RET = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
# offsets in struct seccomp_data
_NR, _ARCH, _ARG0 = 0, 4, 16


@dataclass(frozen=True)
class Abi:
    """One architecture's ``AUDIT_ARCH`` value and the syscall numbers the filter names."""

    arch: int
    #: syscalls refused whatever their arguments: other processes' memory, tracing, leaving the group
    refused: tuple[int, ...]
    #: signal syscalls allowed only at the worker's own pid or group (``kill``, ``tgkill``, ...)
    signals: tuple[int, ...]
    #: syscall numbers from this one up belong to another ABI (x32), refused
    foreign_from: int | None = None


ABIS = {
    # ptrace, process_vm_readv, process_vm_writev, setpgid, setsid, tkill, pidfd_send_signal, pidfd_getfd
    "x86_64": Abi(0xC000003E, (101, 310, 311, 109, 112, 200, 424, 438), (62, 234, 129, 297), 0x40000000),
    "aarch64": Abi(0xC00000B7, (117, 270, 271, 154, 157, 130, 424, 438), (129, 131, 138, 240)),
}
ABIS["amd64"] = ABIS["x86_64"]
ABIS["arm64"] = ABIS["aarch64"]


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def program(abi: Abi, pid: int) -> list[tuple[int, int, int, int]]:
    """The filter for a worker whose pid (and process group) is ``pid``, as
    ``(code, jt, jf, k)`` instructions."""
    own = (pid & 0xFFFFFFFF, -pid & 0xFFFFFFFF, 0)
    # (code, true label, false label, k); a label is a name, or None for the next instruction
    body: list[tuple[str | None, int, str | None, str | None, int]] = [
        (None, _LD_W_ABS, None, None, _ARCH),
        (None, _JEQ, None, "deny", abi.arch),
        (None, _LD_W_ABS, None, None, _NR),
    ]
    if abi.foreign_from is not None:
        body.append((None, _JGE, "deny", None, abi.foreign_from))
    body += [(None, _JEQ, "deny", None, nr) for nr in abi.refused]
    body += [(None, _JEQ, "target", None, nr) for nr in abi.signals]
    body.append((None, _RET, None, None, _RET_ALLOW))
    body.append(("target", _LD_W_ABS, None, None, _ARG0))
    body += [(None, _JEQ, "allow", None, k) for k in own]
    body.append(("deny", _RET, None, None, _RET_ERRNO | errno.EPERM))
    body.append(("allow", _RET, None, None, _RET_ALLOW))
    where = {label: i for i, (label, *_rest) in enumerate(body) if label is not None}

    def jump(i: int, label: str | None) -> int:
        return 0 if label is None else where[label] - i - 1

    return [(code, jump(i, jt), jump(i, jf), k) for i, (_, code, jt, jf, k) in enumerate(body)]


def abi() -> Abi | None:
    """This machine's ABI where :func:`confine` can filter it (Linux, x86-64 or AArch64)."""
    if not sys.platform.startswith("linux"):
        return None
    return ABIS.get(platform.machine().lower())


def confine() -> str | None:
    """Put this process in a process group of its own and install the filter (see the
    module); call it before any other thread starts (threads started later inherit it).
    Returns ``None`` once confined, else why not (not Linux on x86-64 or AArch64, or the
    kernel refused the filter), for the caller to act on."""
    os.setpgid(0, 0)
    target = abi()
    if target is None:
        return f"no process confinement on {sys.platform} {platform.machine()}"
    instructions = program(target, os.getpid())
    filters = (_Filter * len(instructions))(*(_Filter(*i) for i in instructions))
    prog = _Program(len(instructions), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.prctl.restype = ctypes.c_int
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    address = ctypes.cast(ctypes.pointer(prog), ctypes.c_void_p).value or 0
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, address, 0, 0) != 0:
        return f"the kernel refused the seccomp filter: {os.strerror(ctypes.get_errno())}"
    return None


__all__ = ["ABIS", "Abi", "abi", "confine", "program"]
