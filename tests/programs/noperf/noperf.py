"""Run a command with ``perf_event_open`` refused by a seccomp filter (Linux x86_64, no privileges needed):
``python noperf.py ERRNO_NAME PROGRAM ARGS...``. What a container that forbids perf events does."""

import ctypes
import errno
import os
import struct
import sys

PERF_EVENT_OPEN_X86_64 = 298
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x00050000, 0x7FFF0000


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main() -> None:
    """Install the filter (the syscall number at offset 0 of seccomp_data), then exec the command."""
    code = getattr(errno, sys.argv[1])
    instructions = (struct.pack("HBBI", BPF_LD_W_ABS, 0, 0, 0)
                    + struct.pack("HBBI", BPF_JEQ_K, 0, 1, PERF_EVENT_OPEN_X86_64)
                    + struct.pack("HBBI", BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | code)
                    + struct.pack("HBBI", BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    buffer = ctypes.create_string_buffer(instructions)
    program = _Program(len(instructions) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                                                                      ctypes.byref(program), 0, 0) != 0:
        sys.exit(f"noperf: cannot install the seccomp filter (errno {ctypes.get_errno()})")
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
