"""A write guard for feature evaluators: while installed, the program cannot change anything outside.

The emitter copies this file into every evaluator as ``_mantis_guard.py``, so it uses the standard library
only and never imports mantispy. :func:`install` patches, in this process:

* ``builtins.open`` / ``io.open`` in a mode that writes, appends, creates or updates (``w``, ``a``,
  ``x``, ``+``) and ``os.open`` with a writing flag;
* ``os`` calls that change the file system (remove, unlink, rename, renames, replace, mkdir, makedirs,
  rmdir, removedirs, link, symlink, truncate, chmod, chown, utime, mkfifo, mknod) and ``shutil``'s
  rmtree, move, copy, copy2, copyfile, copytree, copymode, copystat, chown;
* starting processes: ``os.system``, ``os.exec*``, ``os.spawn*``, ``os.posix_spawn*``, ``os.fork``,
  ``subprocess.Popen`` (through ``Popen._execute_child``) and ``_posixsubprocess.fork_exec``
  (multiprocessing's spawn);
* the network: ``socket.socket.connect``, ``connect_ex`` and ``sendto``.

``shutil``, ``subprocess`` and ``socket`` are patched only when already imported (so that an evaluation
does not pay for importing them); an audit hook (``sys.addaudithook``, active only while installed)
refuses the ``socket.connect``/``socket.sendto``/``subprocess.Popen`` events of modules imported later.

Each of them raises ``PermissionError("mantispy evaluator: the slice tried to write <path>")`` (``run``,
``start a process``, ``connect to`` for the others) and appends the message to :data:`VIOLATIONS`, so the
evaluator can fail loudly even when the program catches the exception. Reading stays allowed.
:func:`uninstall` puts every original back.

Not covered (documented limits): ``io.FileIO`` and ``_io`` used directly, ``os.write`` on descriptors the
process already holds, C extensions that write on their own.
"""

from __future__ import annotations

import builtins
import io
import os
import sys

PREFIX = "mantispy evaluator: the slice tried to "
VIOLATIONS: list[str] = []
"""Messages of every refused operation since the last :func:`install`."""

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_OS_WRITES = ("remove", "unlink", "rename", "renames", "replace", "mkdir", "makedirs", "rmdir", "removedirs",
              "link", "symlink", "truncate", "chmod", "lchmod", "chown", "lchown", "utime", "mkfifo", "mknod")
_OS_DESTINATION_SECOND = ("rename", "renames", "replace", "link", "symlink")
_SHUTIL_WRITES = ("rmtree", "move", "copy", "copy2", "copyfile", "copytree", "copymode", "copystat", "chown")
_SHUTIL_DESTINATION_SECOND = ("move", "copy", "copy2", "copyfile", "copytree", "copymode", "copystat")
_OS_PROCESSES = ("system", "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe",
                 "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnvp", "spawnvpe",
                 "posix_spawn", "posix_spawnp", "fork", "forkpty")
_SOCKET_CALLS = ("connect", "connect_ex", "sendto")

Patch = tuple[object, str, object, bool]  # (owner, attribute, original value, owner had it in its __dict__)


def deny(what: str) -> None:
    """Record and raise the refusal of one operation (``what``: "write /tmp/x", "run ls", ...)."""
    message = PREFIX + what
    VIOLATIONS.append(message)
    raise PermissionError(message)


def _describe(target: object) -> str:
    """A path-like argument as text (a descriptor as ``file descriptor N``)."""
    if isinstance(target, int):
        return f"file descriptor {target}"
    try:
        return os.fsdecode(target)  # type: ignore[arg-type]
    except TypeError:
        return repr(target)


def mode_writes(mode: object) -> bool:
    """Whether an ``open`` mode string writes, appends, creates or updates."""
    return isinstance(mode, str) and any(c in mode for c in "wax+")


def _guarded_open(original):
    def open(file, mode="r", *args, **kwargs):  # noqa: A001 - same name as the builtin it replaces
        if mode_writes(mode):
            deny("write " + _describe(file))
        return original(file, mode, *args, **kwargs)

    open.__doc__ = original.__doc__
    return open


def _guarded_os_open(original):
    def os_open(path, flags, *args, **kwargs):
        if flags & _WRITE_FLAGS:
            deny("write " + _describe(path))
        return original(path, flags, *args, **kwargs)

    return os_open


def _file_writer(name: str, destination_second: bool):
    def refuse(*args, **kwargs):
        target = args[1] if destination_second and len(args) > 1 else (args[0] if args else kwargs.get("path", "?"))
        deny("write " + _describe(target))

    refuse.__name__ = name
    return refuse


def _process_starter(name: str):
    def refuse(*args, **kwargs):
        if name == "system":
            deny(f"run {args[0] if args else ''!r}")
        deny(f"start a process (os.{name}{'' if not args else ': ' + repr(args[0])})")

    refuse.__name__ = name
    return refuse


def _execute_child(self, args, *rest, **kwargs):
    deny(f"start a process ({args!r})")


def _fork_exec(args, *rest, **kwargs):
    deny(f"start a process ({args!r})")


def _socket_call(name: str):
    def refuse(self, *args, **kwargs):
        address = args[-1] if args else "?"
        deny(f"connect to {address!r}")

    refuse.__name__ = name
    return refuse


def _patch(patches: list[Patch], owner: object, name: str, replacement: object) -> None:
    if not hasattr(owner, name):
        return
    had = name in getattr(owner, "__dict__", {})
    patches.append((owner, name, getattr(owner, name), had))
    setattr(owner, name, replacement)


def install() -> list[Patch]:
    """Patch every writing / process / network entry point; returns the token :func:`uninstall` takes."""
    VIOLATIONS.clear()
    patches: list[Patch] = []
    guarded = _guarded_open(builtins.open)
    _patch(patches, builtins, "open", guarded)
    _patch(patches, io, "open", guarded)
    _patch(patches, os, "open", _guarded_os_open(os.open))
    for name in _OS_WRITES:
        _patch(patches, os, name, _file_writer(name, name in _OS_DESTINATION_SECOND))
    # shutil, subprocess and socket are patched only if the process already imported them (importing
    # them costs milliseconds on every evaluation); shutil writes through the patched os and open anyway,
    # and the audit hook below refuses processes and connections of modules imported later.
    shutil = sys.modules.get("shutil")
    if shutil is not None:
        for name in _SHUTIL_WRITES:
            _patch(patches, shutil, name, _file_writer(name, name in _SHUTIL_DESTINATION_SECOND))
    for name in _OS_PROCESSES:
        _patch(patches, os, name, _process_starter(name))
    subprocess = sys.modules.get("subprocess")
    if subprocess is not None:
        _patch(patches, subprocess.Popen, "_execute_child", _execute_child)
    posixsubprocess = sys.modules.get("_posixsubprocess")
    if posixsubprocess is None:
        try:
            import _posixsubprocess as posixsubprocess  # type: ignore[no-redef]
        except ImportError:  # pragma: no cover - Windows
            posixsubprocess = None
    if posixsubprocess is not None:
        _patch(patches, posixsubprocess, "fork_exec", _fork_exec)
    socket = sys.modules.get("socket")
    if socket is not None:
        for name in _SOCKET_CALLS:
            _patch(patches, socket.socket, name, _socket_call(name))
    global _active
    if not _hooked:
        _add_audit_hook()
    _active = True
    return patches


_active = False
_hooked = False


def _audit(event: str, args: tuple) -> None:
    """Refuses, while the guard is installed, what the patches cannot see: connections and processes of
    modules imported after :func:`install` (audit hooks cannot be removed, so this one checks a flag)."""
    if not _active:
        return
    if event in ("socket.connect", "socket.sendto"):
        deny(f"connect to {args[-1]!r}")
    elif event == "subprocess.Popen":
        deny(f"start a process ({args[1]!r})")


def _add_audit_hook() -> None:
    global _hooked
    sys.addaudithook(_audit)
    _hooked = True


def uninstall(patches: list[Patch]) -> None:
    """Undo :func:`install` (in reverse order)."""
    global _active
    _active = False
    for owner, name, original, had in reversed(patches):
        if had or not isinstance(owner, type):
            setattr(owner, name, original)
        else:
            delattr(owner, name)  # it was inherited: let inheritance show through again
    patches.clear()
