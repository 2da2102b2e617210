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

The one place an evaluation may write is its own *scratch folder*: a fresh private folder in the system's
temporary folder, made the evaluation's temporary folder (``TMPDIR`` and ``tempfile.tempdir``), and removed
with everything in it when the evaluation ends. A program that builds an index in ``tempfile.mkdtemp()``
(Whoosh) or writes temporary files then runs as it does unguarded, and nothing outside the scratch folder
changes: a path counts as inside only if its real path (symbolic links resolved, ``dir_fd`` followed) is.

Not covered (documented limits): ``io.FileIO`` and ``_io`` used directly, ``os.write`` on descriptors the
process already holds, C extensions that write on their own. Evaluations run from the command line are
also confined by the kernel (:mod:`mantispy.slicer.confine`), which covers what this guard cannot see.
"""

from __future__ import annotations

import builtins
import io
import os
import sys

PREFIX = "mantispy evaluator: the slice tried to "
VIOLATIONS: list[str] = []
"""Messages of every refused operation since the last :func:`install`."""
SCRATCH: str | None = None
"""The real path of the current evaluation's scratch folder (None: no writes at all)."""

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_OS_WRITES = ("remove", "unlink", "rename", "renames", "replace", "mkdir", "makedirs", "rmdir", "removedirs",
              "link", "symlink", "truncate", "chmod", "lchmod", "chown", "lchown", "utime", "mkfifo", "mknod")
# which arguments name paths the call changes (others are only read): (positions, keyword names)
_CHANGED = {"rename": ((0, 1), ("src", "dst")), "renames": ((0, 1), ("old", "new")),
            "replace": ((0, 1), ("src", "dst")), "link": ((1,), ("dst",)), "symlink": ((1,), ("dst",)),
            "move": ((0, 1), ("src", "dst")), "copy": ((1,), ("dst",)), "copy2": ((1,), ("dst",)),
            "copyfile": ((1,), ("dst",)), "copytree": ((1,), ("dst",)), "copymode": ((1,), ("dst",)),
            "copystat": ((1,), ("dst",))}
_FIRST = ((0,), ("path",))
_SHUTIL_WRITES = ("rmtree", "move", "copy", "copy2", "copyfile", "copytree", "copymode", "copystat", "chown")
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


def inside_scratch(target: object, dir_fd: int | None = None) -> bool:
    """Whether a path argument (relative to ``dir_fd`` if given) really lies in the scratch folder."""
    if SCRATCH is None or isinstance(target, int):
        return False
    try:
        path = os.fsdecode(target)  # type: ignore[arg-type]
        if dir_fd is not None and not os.path.isabs(path):
            base = os.readlink(f"/proc/self/fd/{dir_fd}")
        else:
            base = os.getcwd()
        real = os.path.realpath(os.path.join(base, path))
    except (TypeError, ValueError, OSError):
        return False
    return real == SCRATCH or real.startswith(SCRATCH + os.sep)


def _guarded_open(original):
    def open(file, mode="r", *args, **kwargs):  # noqa: A001 - same name as the builtin it replaces
        if mode_writes(mode) and not inside_scratch(file):
            deny("write " + _describe(file))
        return original(file, mode, *args, **kwargs)

    open.__doc__ = original.__doc__
    return open


def _guarded_os_open(original):
    def os_open(path, flags, *args, **kwargs):
        if flags & _WRITE_FLAGS and not inside_scratch(path, kwargs.get("dir_fd")):
            deny("write " + _describe(path))
        return original(path, flags, *args, **kwargs)

    return os_open


def _file_writer(name: str, original):
    positions, keywords = _CHANGED.get(name, _FIRST)

    def guarded(*args, **kwargs):
        for i, keyword in zip(positions, keywords):
            target = args[i] if i < len(args) else kwargs.get(keyword, "?")
            dir_fd = kwargs.get(("src_dir_fd", "dst_dir_fd")[i] if name in ("rename", "replace", "link") else "dir_fd")
            if not inside_scratch(target, dir_fd):
                deny("write " + _describe(target))
        return original(*args, **kwargs)

    guarded.__name__ = name
    return guarded


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


def install(scratch: bool = True) -> list[Patch]:
    """Patch every writing / process / network entry point; returns the token :func:`uninstall` takes.
    With ``scratch``, the evaluation gets a fresh scratch folder (see the module docstring)."""
    VIOLATIONS.clear()
    patches: list[Patch] = []
    if scratch:
        fresh_scratch()
    guarded = _guarded_open(builtins.open)
    _patch(patches, builtins, "open", guarded)
    _patch(patches, io, "open", guarded)
    _patch(patches, os, "open", _guarded_os_open(os.open))
    for name in _OS_WRITES:
        _patch(patches, os, name, _file_writer(name, getattr(os, name, None)))
    # shutil, subprocess and socket are patched only if the process already imported them (importing
    # them costs milliseconds on every evaluation); shutil writes through the patched os and open anyway,
    # and the audit hook below refuses processes and connections of modules imported later.
    shutil = sys.modules.get("shutil")
    if shutil is not None:
        for name in _SHUTIL_WRITES:
            _patch(patches, shutil, name, _file_writer(name, getattr(shutil, name, None)))
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
    discard_scratch()


_TOKEN = os.urandom(4).hex()
_saved_tempdir: list = []


def _scratch_path(pid: int) -> str:
    tempfile = sys.modules.get("tempfile")
    base = _saved_tempdir[0][0] if _saved_tempdir else None
    if base is None:
        base = (tempfile.tempdir if tempfile is not None and tempfile.tempdir else None) or os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(os.path.realpath(base), f"mantis-eval-{_TOKEN}-{pid}")


def fresh_scratch() -> str:
    """Make a new, empty scratch folder this process's temporary folder (a forked evaluation calls it
    first, so that no evaluation sees another's files); returns its path."""
    global SCRATCH
    path = _scratch_path(os.getpid())
    if not _saved_tempdir:
        tempfile = sys.modules.get("tempfile")
        _saved_tempdir.append((tempfile.tempdir if tempfile is not None else None, os.environ.get("TMPDIR")))
    _remove_tree(path)  # left by an evaluation that was killed
    _ORIGINAL_OS["mkdir"](path, 0o700)
    SCRATCH = path
    os.environ["TMPDIR"] = path
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = path
    return path


def discard_scratch(pid: int | None = None) -> None:
    """Remove a scratch folder and everything in it: this process's (then the temporary folder is what it
    was before), or that of the forked evaluation ``pid``. Call it with the guard uninstalled, or for a
    child's folder from the parent (the removal uses the unpatched functions)."""
    global SCRATCH
    if pid is not None:
        _remove_tree(_scratch_path(pid))
        return
    if SCRATCH is None:
        return
    path, SCRATCH = SCRATCH, None
    tempdir, tmpdir_env = _saved_tempdir.pop() if _saved_tempdir else (None, None)
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = tempdir
    if tmpdir_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = tmpdir_env
    _remove_tree(path)


def _remove_tree(path: str) -> None:
    """Remove ``path`` bottom-up with the real os functions (the guard may be installed)."""
    remove, rmdir = _ORIGINAL_OS["unlink"], _ORIGINAL_OS["rmdir"]
    if not os.path.isdir(path):
        return
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                remove(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            full = os.path.join(root, name)
            try:
                (remove if os.path.islink(full) else rmdir)(full)
            except OSError:
                pass
    try:
        rmdir(path)
    except OSError:
        pass


_ORIGINAL_OS = {"unlink": os.unlink, "rmdir": os.rmdir, "mkdir": os.mkdir}
