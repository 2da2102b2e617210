"""Kernel confinement for feature evaluators: Linux itself limits what a sliced program can do.

An evaluator runs the user's program code (a slice of it) on the machine that asks for a prediction.
The write guard (:mod:`mantispy.slicer.guard`) refuses writes, processes and connections at the Python
level, where a program can still reach around it (``io.FileIO``, ``sqlite3``, ``ctypes``). This module
adds what the kernel enforces. The emitter copies it into every evaluator as ``_mantis_confine.py``, so
it uses the standard library and ``ctypes`` only and never imports mantispy.

:func:`run_confined` runs an evaluator's work in a forked child and confines that child:

* **Landlock** (Linux 5.13 and later, ``landlock_create_ruleset``): no file or folder can be created,
  written, truncated, removed, renamed, linked or executed except inside the evaluation's *jail*, a fresh
  private folder in the temporary folder (the guard's scratch folders live in it), plus writing
  ``/dev/null``; reading stays allowed everywhere. With Landlock ABI 4 and later, TCP bind and connect
  are refused; with ABI 6 and later, signals to processes outside the evaluation and connections to
  abstract Unix sockets are refused. Landlock also keeps the evaluation from tracing (``ptrace``) other
  processes and from mounting file systems.
* **seccomp** (x86-64 and AArch64): ``socket()`` of every family fails (no TCP, UDP, DNS, raw, netlink
  or Unix sockets; ``socketpair()``, which asyncio needs, stays allowed), ``io_uring`` fails (it could
  open sockets around the filter), and so do the calls that change what Landlock does not cover or that
  only an administrator needs: chmod, chown, utime and extended attributes; mount, namespaces, modules,
  reboot, clocks, keys, BPF, ``ptrace`` and other processes' memory. System calls of a foreign
  architecture (32-bit calls on x86-64) fail. :func:`forbid_processes` adds a second filter under which
  no process can be created (threads can): every evaluation runs under it.
* no core dumps (``RLIMIT_CORE`` 0: the kernel writes them outside any confinement).

The parent stays unconfined for two jobs only: remove the jail when the child ends, and pass a
``SIGTERM``, ``SIGINT`` or ``SIGHUP`` it receives on to the child as ``SIGKILL``. The child dies with the
parent (``PR_SET_PDEATHSIG``); a jail left by a parent killed with ``SIGKILL`` is removed by the next
evaluator that starts.

``MANTISPY_CONFINE`` chooses: ``auto`` (the default: whatever this platform offers, and plain
evaluation where it offers nothing), ``require`` (an evaluation fails, exit status 3, where Landlock or
seccomp cannot be applied), ``off`` (the guard only). :func:`probe` says what this machine enforces.

What stays possible under full confinement: reading any file the user may read; writing to descriptors
the evaluator already holds (its own stdout, stderr and, in the warm server, its reply pipe: at worst a
wrong or missing value, which the caller reports as a failed evaluation); using CPU and memory until the
caller's timeout; signals to the evaluation's own threads. Without Landlock ABI 6, signals to any
process of the same user. Without Landlock, file writes through the guard's blind spots (``io.FileIO``,
C extensions). Without seccomp (other architectures, other systems), sockets of every kind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

MODE_VARIABLE = "MANTISPY_CONFINE"
MODES = ("auto", "require", "off")
JAIL_PREFIX = "mantis-jail-"

# Landlock (include/uapi/linux/landlock.h); the three system calls have the same numbers on every arch
_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 14, 1 << 15
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_FS_RIGHTS_LATEST = (1 << 16) - 1  # ABI 5 added IOCTL_DEV; later ABIs added no file right
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

# seccomp (include/uapi/linux/seccomp.h, filter.h, audit.h)
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 1, 38, 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data (little-endian arg0's low word)
_CLONE_THREAD = 0x00010000
_EPERM, _EACCES, _ENOSYS = 1, 13, 38


class _Arch:
    """One architecture's audit tag and the system call numbers the filters name."""

    def __init__(self, audit: int, socket: int, clone: int, clone3: int, forks: tuple[int, ...],
                 admin: tuple[int, ...], metadata: tuple[int, ...], foreign_bit: int | None) -> None:
        self.audit, self.socket, self.clone, self.clone3 = audit, socket, clone, clone3
        self.forks, self.admin, self.metadata, self.foreign_bit = forks, admin, metadata, foreign_bit


_IO_URING = (425, 426, 427)
# Numbers from the kernel's syscall_64.tbl (x86-64) and asm-generic/unistd.h (AArch64).
_ARCHES = {
    "x86_64": _Arch(
        audit=0xC000003E, socket=41, clone=56, clone3=435, forks=(57, 58),
        # ptrace, process_vm_readv/writev, pidfd_getfd, mount, umount2, pivot_root, chroot, reboot,
        # kexec_load, kexec_file_load, init/finit/delete_module, swapon/off, sethostname,
        # setdomainname, settimeofday, clock_settime, adjtimex, clock_adjtime, acct, unshare, setns, bpf,
        # userfaultfd, keyctl, add_key, request_key, open_by_handle_at, name_to_handle_at, iopl, ioperm,
        # open_tree, move_mount, fsopen, fsmount, mount_setattr
        admin=(101, 310, 311, 438, 165, 166, 155, 161, 169, 246, 320, 175, 313, 176, 167, 168, 170, 171, 164,
               227, 159, 305, 163, 272, 308, 321, 323, 250, 248, 249, 304, 303, 172, 173, 428, 429, 430, 432,
               442),
        # chmod, fchmod, fchmodat, fchmodat2, chown, fchown, lchown, fchownat, utime, utimes, utimensat,
        # futimesat, setxattr, lsetxattr, fsetxattr, removexattr, lremovexattr, fremovexattr
        metadata=(90, 91, 268, 452, 92, 93, 94, 260, 132, 235, 280, 261, 188, 189, 190, 197, 198, 199),
        foreign_bit=0x40000000),  # x32 system calls
    "aarch64": _Arch(
        audit=0xC00000B7, socket=198, clone=220, clone3=435, forks=(),
        admin=(117, 270, 271, 438, 40, 39, 41, 51, 142, 104, 294, 105, 273, 106, 224, 225, 161, 162, 170,
               112, 171, 266, 89, 97, 268, 280, 282, 219, 217, 218, 265, 264, 428, 429, 430, 432, 442),
        # fchmod, fchmodat, fchmodat2, fchown, fchownat, utimensat, the six xattr calls
        metadata=(52, 53, 452, 55, 54, 88, 5, 6, 7, 14, 15, 16),
        foreign_bit=None),
}


class ConfinementError(Exception):
    """``MANTISPY_CONFINE=require`` and this platform cannot confine an evaluation (the message says why)."""


def mode() -> str:
    """The confinement mode asked for in the environment (an unknown value counts as ``require``: a
    misspelt request for confinement must not silently turn it off)."""
    value = os.environ.get(MODE_VARIABLE, "auto").strip().lower() or "auto"
    return value if value in MODES else "require"


_LIBC: list = []


def _libc():
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _syscall(libc, number: int, *args) -> int:
    result = libc.syscall(ctypes.c_long(number), *args)
    return result if result >= 0 else -ctypes.get_errno()


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _syscall(_libc(), _LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def _arch() -> _Arch | None:
    return _ARCHES.get(os.uname().machine) if sys.platform.startswith("linux") else None


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _landlock(libc, abi: int, jail: str) -> dict:
    """Restrict this thread (and what it starts) with Landlock; returns what is enforced."""
    handled_fs = _FS_RIGHTS_BY_ABI.get(abi, _FS_RIGHTS_LATEST) & ~(_FS_READ_FILE | _FS_READ_DIR)
    attr = _RulesetAttr(handled_fs, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0,
                        (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0)
    ruleset = _syscall(libc, _LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                       ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(-ruleset, "landlock_create_ruleset: " + os.strerror(-ruleset))
    try:
        for path, allowed in ((jail, handled_fs & ~_FS_EXECUTE),
                              (os.devnull, handled_fs & (_FS_WRITE_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV))):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(allowed, fd)
                done = _syscall(libc, _LANDLOCK_ADD_RULE, ctypes.c_int(ruleset),
                                ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
                if done < 0:
                    raise OSError(-done, f"landlock_add_rule {path}: " + os.strerror(-done))
            finally:
                os.close(fd)
        done = _syscall(libc, _LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
        if done < 0:
            raise OSError(-done, "landlock_restrict_self: " + os.strerror(-done))
    finally:
        os.close(ruleset)
    return {"landlock": abi, "files": True, "tcp": abi >= 4, "signals": abi >= 6}


def _install_filter(libc, program: list[tuple[int, int, int, int]]) -> None:
    filters = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
    fprog = _SockFprog(len(program), filters)
    done = libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0)
    if done != 0:
        error = ctypes.get_errno()
        raise OSError(error, "seccomp filter: " + os.strerror(error))


def _prologue(arch: _Arch) -> list[tuple[int, int, int, int]]:
    """Fail a foreign architecture's calls (and x32's), then load the call's number."""
    program = [(_LD_W_ABS, 0, 0, _OFFSET_ARCH), (_JEQ_K, 1, 0, arch.audit), (_RET_K, 0, 0, _RET_ERRNO | _EPERM),
               (_LD_W_ABS, 0, 0, _OFFSET_NR)]
    if arch.foreign_bit is not None:
        program += [(_JGE_K, 0, 1, arch.foreign_bit), (_RET_K, 0, 0, _RET_ERRNO | _EPERM)]
    return program


def _refuse(numbers, errno: int) -> list[tuple[int, int, int, int]]:
    program = []
    for number in numbers:
        program += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, _RET_ERRNO | errno)]
    return program


def _base_filter(arch: _Arch) -> list[tuple[int, int, int, int]]:
    return (_prologue(arch) + _refuse([arch.socket], _EACCES) + _refuse(_IO_URING, _ENOSYS)
            + _refuse(arch.admin, _EPERM) + _refuse(arch.metadata, _EPERM) + [(_RET_K, 0, 0, _RET_ALLOW)])


def _process_filter(arch: _Arch) -> list[tuple[int, int, int, int]]:
    # clone3 hides its flags in memory: ENOSYS makes the C library fall back to clone, whose flags the
    # filter reads (a thread has CLONE_THREAD, a process does not)
    return (_prologue(arch) + _refuse([arch.clone3], _ENOSYS) + _refuse(arch.forks, _EPERM)
            + [(_JEQ_K, 0, 3, arch.clone), (_LD_W_ABS, 0, 0, _OFFSET_ARG0), (_JSET_K, 1, 0, _CLONE_THREAD),
               (_RET_K, 0, 0, _RET_ERRNO | _EPERM), (_RET_K, 0, 0, _RET_ALLOW)])


def confine(jail: str, strict: bool = False) -> dict:
    """Confine this process for good (call it in a fresh child, single-threaded): Landlock with ``jail``
    the one writable folder, then the seccomp filter. Returns what is enforced (see :func:`probe`); with
    ``strict``, raises :class:`ConfinementError` unless both layers were applied."""
    why: list[str] = []
    report: dict = {"landlock": 0, "files": False, "tcp": False, "signals": False, "seccomp": False,
                    "processes": False, "why": why}
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    if not sys.platform.startswith("linux"):
        why.append(f"{sys.platform} is not Linux")
        return _checked(report, strict)
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        why.append("prctl(PR_SET_NO_NEW_PRIVS): " + os.strerror(ctypes.get_errno()))
        return _checked(report, strict)
    abi = landlock_abi()
    if abi <= 0:
        why.append("this kernel offers no Landlock (Linux 5.13+ with the landlock LSM enabled)")
    else:
        try:
            report.update(_landlock(libc, abi, jail))
        except OSError as exc:
            why.append(f"Landlock: {exc}")
    arch = _arch()
    if arch is None:
        why.append(f"no seccomp table for {os.uname().machine}")
    else:
        try:
            _install_filter(libc, _base_filter(arch))
            report["seccomp"] = True
        except OSError as exc:
            why.append(str(exc))
    return _checked(report, strict)


def _checked(report: dict, strict: bool) -> dict:
    if strict and not (report["files"] and report["seccomp"]):
        raise ConfinementError("cannot confine the evaluation (MANTISPY_CONFINE=require): "
                               + "; ".join(report["why"]))
    return report


def forbid_processes() -> bool:
    """Add a filter under which this process can start no process (threads still start); False where
    seccomp is not available. Each evaluation calls it before running the program."""
    arch = _arch()
    if arch is None or mode() == "off":
        return False
    try:
        libc = _libc()
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        _install_filter(libc, _process_filter(arch))
    except OSError:
        if mode() == "require":
            raise
        return False
    return True


def _temporary_root() -> str:
    return os.path.realpath(os.environ.get("TMPDIR") or "/tmp")


def make_jail() -> str:
    """A fresh private folder for one confined evaluator; stale jails of dead evaluators are removed."""
    root = _temporary_root()
    try:
        with os.scandir(root) as entries:
            for entry in entries:
                if entry.name.startswith(JAIL_PREFIX) and _owner_gone(entry.name):
                    remove_tree(entry.path)
    except OSError:
        pass
    path = os.path.join(root, f"{JAIL_PREFIX}{os.getpid()}-{os.urandom(4).hex()}")
    os.mkdir(path, 0o700)
    return path


def _owner_gone(name: str) -> bool:
    pid = name[len(JAIL_PREFIX):].split("-", 1)[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_tree(path: str) -> None:
    """Remove ``path`` and everything in it (symbolic links are removed, never followed)."""
    if not os.path.isdir(path) or os.path.islink(path):
        return
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            full = os.path.join(root, name)
            try:
                (os.unlink if os.path.islink(full) else os.rmdir)(full)
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def read_to_end(fd: int) -> bytes:
    """Everything a pipe gives until its writers close it; closes ``fd``."""
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def run_confined(body, on_error) -> int:
    """Run ``body()`` (returns an exit status) in a confined child and return its exit status.

    ``on_error(exc)`` reports a :class:`ConfinementError` (``require`` mode) or anything ``body`` raises
    that is not SystemExit, and returns the status to exit with. With ``MANTISPY_CONFINE=off``, or where
    fork is missing, ``body`` runs here, unconfined."""
    chosen = mode()
    if chosen == "off" or not hasattr(os, "fork"):
        return _call(body, on_error)
    jail = make_jail()
    parent = os.getpid()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    child = os.fork()
    if child == 0:
        status = 3
        try:
            die_with(parent)
            os.environ["TMPDIR"] = jail
            tempfile = sys.modules.get("tempfile")
            if tempfile is not None:
                setattr(tempfile, "tempdir", jail)  # noqa: B010 - the module may be any object here
            try:
                confine(jail, strict=chosen == "require")
            except ConfinementError as exc:
                status = on_error(exc)
            else:
                status = _call(body, on_error)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (AttributeError, OSError, ValueError):
                    pass
            os._exit(status if isinstance(status, int) else 1)
    return _wait(child, jail)


def _call(body, on_error) -> int:
    try:
        status = body()
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        sys.stderr.write(f"{code}\n")
        return 1
    except BaseException as exc:  # noqa: BLE001 - reported on the evaluator's one error line
        return on_error(exc)
    return status if isinstance(status, int) else 0


def die_with(parent: int) -> None:
    """Have the kernel kill this (forked) process when its parent ``parent`` dies, and leave now if it
    already has."""
    if sys.platform.startswith("linux"):
        _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _wait(child: int, jail: str) -> int:
    """Wait for the confined child (signals to this parent kill it), remove the jail, return its status."""
    received: list[int] = []

    def forward(signum, frame):
        received.append(signum)
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass

    previous = {}
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            previous[signum] = signal.signal(signum, forward)
        except (ValueError, OSError):  # not the main thread
            pass
    try:
        while True:
            try:
                _, status = os.waitpid(child, 0)
                break
            except ChildProcessError:
                status = 0
                break
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        remove_tree(jail)
    if received:
        return 128 + received[0]
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def probe() -> dict:
    """What an evaluation on this machine is confined by, found by confining a throw-away child:
    ``{"mode", "landlock" (ABI, 0 none), "files", "tcp", "signals", "seccomp", "processes", "why"}``."""
    import json

    chosen = mode()
    if chosen == "off" or not hasattr(os, "fork"):
        return {"mode": chosen, "landlock": 0, "files": False, "tcp": False, "signals": False, "seccomp": False,
                "processes": False, "why": ["confinement is off (MANTISPY_CONFINE=off)" if chosen == "off"
                                            else "this platform has no fork"]}
    read, write = os.pipe()
    jail = make_jail()
    child = os.fork()
    if child == 0:
        os.close(read)
        try:
            report = confine(jail)
            report["processes"] = forbid_processes()
        except BaseException as exc:  # noqa: BLE001 - the probe reports it
            report = {"landlock": 0, "files": False, "tcp": False, "signals": False, "seccomp": False,
                      "processes": False, "why": [f"{type(exc).__name__}: {exc}"]}
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    answer = read_to_end(read)
    os.waitpid(child, 0)
    remove_tree(jail)
    report = json.loads(answer or b"{}")
    report["mode"] = chosen
    return report


def describe(report: dict) -> str:
    """One line: what confines an evaluation, and what the platform leaves open."""
    if report.get("mode") == "off":
        return "evaluators are not confined (MANTISPY_CONFINE=off): only the Python-level write guard applies"
    parts = []
    if report.get("files"):
        extra = [what for what, key in (("TCP", "tcp"), ("signals", "signals")) if report.get(key)]
        parts.append(f"Landlock ABI {report.get('landlock')} (writes outside a private folder"
                     + "".join(f", {what}" for what in extra) + ")")
    if report.get("seccomp"):
        parts.append("seccomp (sockets, io_uring, chmod/chown/xattr, administration"
                     + (", new processes" if report.get("processes") else "") + ")")
    line = "evaluators confined by " + " and ".join(parts) if parts else "evaluators are not confined by the kernel"
    missing = list(report.get("why") or [])
    if report.get("files") and not report.get("signals"):
        missing.append(f"Landlock ABI {report.get('landlock')} < 6: signals to other processes of the user")
    return line + (" (missing: " + "; ".join(missing) + ")" if missing else "")
