"""A small seccomp filter for confined commands: the few system calls no namespace covers.

Namespaces, mounts and Landlock leave two doors open that a command has no business with:
* the kernel's keyrings (`add_key`, `request_key`, `keyctl`): the user's keyring is shared
  with every process of that user, so a command could plant or read keys outside its sandbox;
* `AF_VSOCK` sockets, which talk to the hypervisor and other virtual machines whatever network
  namespace the command is in.
They fail with EPERM. A system call made through another architecture's entry (32-bit code on
a 64-bit kernel, x32) could skip the checks, so every such call fails too. On architectures
this module does not know, there is no filter.
"""

from __future__ import annotations

import ctypes
import functools
import platform
import struct

__all__ = ["seccomp_filter"]

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1
_AF_VSOCK = 40
_X32_BIT = 0x40000000
# seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_NR, _ARCH, _ARG0 = 0, 4, 16

# machine -> (AUDIT_ARCH_*, socket, add_key, request_key, keyctl)
_ARCHES = {
    "x86_64": (0xC000003E, 41, 248, 249, 250),
    "aarch64": (0xC00000B7, 198, 217, 218, 219),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


@functools.cache
def _program(machine: str) -> bytes | None:
    known = _ARCHES.get(machine)
    if known is None:
        return None
    arch, sock, *keyring = known
    deny, allow = _insn(_RET_K, 0, 0, _RET_EPERM), _insn(_RET_K, 0, 0, _RET_ALLOW)
    body = [
        _insn(_LD_W_ABS, 0, 0, _NR),
        *(_insn(_JEQ_K, 0, 1, nr) + deny for nr in keyring),
        _insn(_JEQ_K, 0, 3, sock),  # not socket(): on to allow
        _insn(_LD_W_ABS, 0, 0, _ARG0) + _insn(_JEQ_K, 0, 1, _AF_VSOCK) + deny,
        allow,
    ]
    code = b"".join(body)
    head = [
        _insn(_LD_W_ABS, 0, 0, _ARCH),
        _insn(_JEQ_K, 1, 0, arch),  # the native entry: on to the checks
        deny,  # another architecture's entry
    ]
    if machine == "x86_64":
        head += [_insn(_LD_W_ABS, 0, 0, _NR), _insn(_JGE_K, 0, 1, _X32_BIT), deny]
    return b"".join(head) + code


def seccomp_filter() -> ctypes.Array[ctypes.c_char] | None:
    """The filter's instructions, in a buffer that lives as long as the caller keeps it."""
    program = _program(platform.machine())
    if program is None:
        return None
    return ctypes.create_string_buffer(program, len(program))
