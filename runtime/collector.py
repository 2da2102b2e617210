"""Process-wide state of the mantispy run-time: registrations, merging, and writing results.

`mantispy.runtime.counters` holds the hot-path API that instrumented code calls; this module keeps
everything that runs rarely: the table of registrations, the per-thread value stores, the exit,
signal, thread-start and fork hooks, the reading and writing of per-process *parts*, and the merge
into the flat ``{feature_id: value}`` result.

Standard library only, and nothing heavy at import time (``json`` is imported when results are
written; ``multiprocessing`` is never imported, only used when the program already loaded it).
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import signal
import sys
import threading

from .values import mean

TYPE_CHECKING = False
if TYPE_CHECKING:  # no run-time import of typing (start-up cost)
    from collections.abc import Callable
    from typing import Any

ENV_OUT = "MANTIS_FEATURES_OUT"
"""Environment variable naming the JSON file the root process writes at exit."""

ENV_ROOT = "MANTIS_ROOT_PID"
"""Environment variable holding the pid of the root process (set by its first ``register``)."""

PARTS_SUFFIX = ".parts"
"""Child processes write ``<MANTIS_FEATURES_OUT>.parts/<pid>.json``."""

PART_EXIT_PRIORITY = -50
"""``multiprocessing.util.Finalize`` priority of the part writer in multiprocessing fork children:
negative, so it runs after the child has joined its own children (pools use 15; the temp-dir
cleanup uses -100)."""

Number = int | float
Values = dict[str, list[list[Number]]]
"""Variable id -> one list of recorded versions per thread (of any process)."""


class Registration:
    """The run-time objects of one instrumented file (one call of ``register``).

    ``counters``, ``guards`` and ``rec`` are what generated code holds; ``stores`` keeps, per
    thread that ever recorded a value, the list of that thread's recorded versions per variable
    (stores survive their thread).  ``baseline`` is subtracted from the raw counts (fork children,
    ``reset``), since an ``itertools.count`` cannot be reset.
    """

    __slots__ = ("file", "counter_ids", "variable_ids", "k", "counters", "guards", "rec",
                 "local", "stores", "baseline", "derived", "groups", "group_guards")

    def __init__(self, file: str, counter_ids: tuple[str, ...], variable_ids: tuple[str, ...],
                 k: int, derived: tuple = (), groups: tuple = ()) -> None:
        self.file = file
        self.derived = derived  # ((feature_id, ((counter index, coefficient), ...)), ...): counts with no probe
        self.groups: tuple[tuple[int, ...], ...] = groups  # variable indexes recorded behind one guard
        self.group_guards: list[bool] = [k > 0] * len(groups)
        self.counter_ids = counter_ids
        self.variable_ids = variable_ids
        self.k = k
        self.counters: tuple[itertools.count, ...] = tuple(itertools.count(1) for _ in counter_ids)
        self.guards: list[bool] = [k > 0] * len(variable_ids)
        self.rec: Callable[[int, Any], Any] | None = None
        self.local = threading.local()
        self.stores: list[list[list[Number]]] = []
        self.baseline: list[int] = [0] * len(counter_ids)

    def new_store(self) -> list[list[Number]]:
        """Create, register and return the calling thread's value store (once per thread)."""
        store: list[list[Number]] = [[] for _ in self.variable_ids]
        with _lock:
            self.stores.append(store)
        self.local.store = store
        return store

    def raw_counts(self) -> list[int]:
        """Number of ticks of each counter since the process (or its forked parent) started."""
        return [int(repr(c)[6:-1]) - 1 for c in self.counters]

    def counts(self) -> list[int]:
        """Ticks of each counter in this process since the baseline."""
        return [n - b for n, b in zip(self.raw_counts(), self.baseline)]

    def derived_counts(self, counts: list[int]) -> list[tuple[str, int]]:
        """The counts with no probe, from this registration's ``counts``; never below 0."""
        return [(fid, max(0, sum(counts[i] * c for i, c in terms))) for fid, terms in self.derived]

    def enable_guards(self) -> None:
        """Let every variable record again (the same list object is kept: generated code holds it)."""
        if self.k > 0:
            self.guards[:] = [True] * len(self.guards)
            self.group_guards[:] = [True] * len(self.group_guards)

    def clear_values(self) -> None:
        """Empty every store in place (live threads keep using theirs)."""
        for store in list(self.stores):
            for lst in store:
                lst.clear()


# ---------------------------------------------------------------------------------------------
# Process-wide state
# ---------------------------------------------------------------------------------------------

_lock = threading.RLock()
"""Guards registration and store creation (never taken on the hot path). Replaced after fork."""

registry: dict[tuple, Registration] = {}
"""(file, counter_ids, variable_ids, k) -> its Registration."""

registrations: list[Registration] = []

_installed = False
_out_path: str | None = None
_root_pid = 0
_done_pid = 0          # pid of the process that already wrote its final results
_writing = False       # final results are being written (a SIGTERM then waits for the end)
_pending_sigterm = False
_mp_after_forker = False  # our after-forker is in multiprocessing's registry (inherited by fork)


class _MultiprocessingToken:
    """Weak-referenceable anchor for ``multiprocessing.util`` after-fork and finalizer hooks."""


_MP_TOKEN = _MultiprocessingToken()


def get_lock() -> threading.RLock:
    """The current registration lock (it is replaced in fork children)."""
    return _lock


def is_root() -> bool:
    """Whether this process is the root (its pid is ``MANTIS_ROOT_PID``)."""
    return os.getpid() == _root_pid


def out_path() -> str | None:
    """Absolute path of the output file, or None when ``MANTIS_FEATURES_OUT`` was not set."""
    return _out_path


def parts_dir() -> str | None:
    """Directory where child processes write their parts, or None without an output file."""
    return None if _out_path is None else _out_path + PARTS_SUFFIX


def add(reg: Registration) -> None:
    """Record a new registration (caller holds the lock)."""
    registry[(reg.file, reg.counter_ids, reg.variable_ids, reg.k)] = reg
    registrations.append(reg)


def enable_all_guards() -> None:
    """Re-enable the guards of every registration (a new thread records its own first k values)."""
    for reg in list(registrations):
        reg.enable_guards()


# ---------------------------------------------------------------------------------------------
# Installation (first register of a process)
# ---------------------------------------------------------------------------------------------

def ensure_installed() -> None:
    """Install the process hooks once per process lineage (caller holds the lock).

    Sets ``MANTIS_ROOT_PID`` when unset, wraps ``threading.Thread.start``, registers the fork hook,
    and, when ``MANTIS_FEATURES_OUT`` is set: the atexit writer, the SIGTERM handler (main thread,
    default disposition only) and, in the root, the (emptied) parts directory.
    """
    global _installed, _out_path, _root_pid
    if _installed:
        return
    _installed = True
    pid = os.getpid()
    root_env = os.environ.get(ENV_ROOT)
    became_root = False
    try:
        _root_pid = int(root_env) if root_env else 0
    except ValueError:
        _root_pid = 0
    if not _root_pid:
        _root_pid = pid
        became_root = True
        os.environ[ENV_ROOT] = str(pid)
    out = os.environ.get(ENV_OUT)
    if out:
        _out_path = os.path.abspath(out)
        if _out_path != out:
            os.environ[ENV_OUT] = _out_path   # children may run in another directory
    _wrap_thread_start()
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent,
                        after_in_child=_after_fork_child)
    if _out_path is None:
        return
    atexit.register(_at_exit)
    _install_sigterm_handler()
    if pid == _root_pid:
        _prepare_parts_dir(clear=became_root)
    else:
        _hook_multiprocessing()


def _wrap_thread_start() -> None:
    """Wrap ``threading.Thread.start`` so that starting a thread re-enables every guard."""
    original = threading.Thread.start
    if getattr(original, "_mantis_wrapped", False):
        return

    @functools.wraps(original)
    def start(self: threading.Thread) -> None:
        enable_all_guards()
        try:
            return original(self)
        finally:
            enable_all_guards()

    start._mantis_wrapped = True  # type: ignore[attr-defined]
    threading.Thread.start = start  # type: ignore[method-assign]


def _install_sigterm_handler() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):
        pass


def _prepare_parts_dir(clear: bool) -> None:
    """Create the parts directory; a new root empties a stale one left by an earlier run."""
    parts = parts_dir()
    assert parts is not None
    if clear:
        _remove_dir(parts)
    try:
        os.mkdir(parts)
    except OSError:
        pass


def _remove_dir(path: str) -> None:
    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(path, name))
        except OSError:
            pass
    try:
        os.rmdir(path)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# Fork
# ---------------------------------------------------------------------------------------------

_fork_state = threading.local()


def _before_fork() -> None:
    """Block SIGTERM in the forking thread while our handler is installed.

    CPython clears the pending Python-level signals in the child right after ``fork()``
    (``PyOS_AfterFork_Child``), so a SIGTERM that reached the child before that (a pool being
    terminated while a worker is still starting) would be lost and the child would never die.
    Blocked, it stays pending in the kernel until ``_after_fork_child`` unblocks it.
    """
    _fork_state.blocked = False
    try:
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            _fork_state.blocked = signal.SIGTERM not in old
    except (ValueError, OSError):
        pass


def _unblock_after_fork() -> None:
    if getattr(_fork_state, "blocked", False):
        _fork_state.blocked = False
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        except (ValueError, OSError):
            pass


def _after_fork_parent() -> None:
    _unblock_after_fork()


def _after_fork_child() -> None:
    """In a fork child: fresh lock, count baseline, empty value stores, guards re-enabled.

    When ``multiprocessing`` is loaded, also hook its exit path (see ``_hook_multiprocessing``).
    Last, SIGTERM is unblocked again (see ``_before_fork``).
    """
    global _lock, _writing, _pending_sigterm
    _lock = threading.RLock()
    _writing = False
    _pending_sigterm = False
    for reg in registrations:
        reg.baseline = reg.raw_counts()
        own = getattr(reg.local, "store", None)
        reg.stores = [own] if own is not None else []
        reg.clear_values()
        reg.enable_guards()
    _hook_multiprocessing()
    _unblock_after_fork()


def _hook_multiprocessing() -> None:
    """In a child process that has ``multiprocessing`` loaded, make its exit path write our part.

    multiprocessing children (fork, and forkserver/spawn ones too) end with
    ``util._exit_function()``, which runs the ``Finalize`` registry; fork and forkserver children
    then leave through ``os._exit``, skipping atexit.  ``Process._bootstrap`` of a fork or forkserver
    child clears that registry and then runs the after-forkers, so the part writer is installed both
    now (this process is already inside ``run()``: the first register happened there) and by an
    after-forker (this process is about to bootstrap, or will fork children); a spawned child runs
    neither step (see ``_hook_spawn_bootstrap``).  ``finish`` writes once per process.
    """
    global _mp_after_forker
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is None or _out_path is None or os.getpid() == _root_pid:
        return
    try:
        if not _mp_after_forker:
            mp_util.register_after_fork(_MP_TOKEN, _mp_after_fork)
            _mp_after_forker = True
        _mp_after_fork(_MP_TOKEN)
        _hook_spawn_bootstrap()
    except Exception:
        pass


def _hook_spawn_bootstrap() -> None:
    """A spawned child never runs the after-forkers (``SpawnProcess._after_fork`` does nothing; its
    ``Finalize`` registry is not cleared either, so the part writer installed at the first register
    stays), yet its pool worker needs the patch of ``_patch_pool_worker_queue``. ``Process._bootstrap``
    calls ``_after_fork`` once the process object is current, so this wraps that method of the spawn
    process class to apply the patch there."""
    context = sys.modules.get("multiprocessing.context")
    spawn = getattr(context, "SpawnProcess", None)
    if spawn is None or getattr(spawn._after_fork, "_mantis_wrapped", False):
        return
    original = spawn._after_fork

    def after_spawn() -> None:
        original()
        _patch_pool_worker_queue()

    after_spawn._mantis_wrapped = True  # type: ignore[attr-defined]
    spawn._after_fork = staticmethod(after_spawn)


def _mp_after_fork(token: _MultiprocessingToken) -> None:
    """multiprocessing after-forker: install the part writer as a finalizer; patch pool workers."""
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is None:
        return
    mp_util.Finalize(token, finish, exitpriority=PART_EXIT_PRIORITY)
    _patch_pool_worker_queue()


POOL_POLL_SECONDS = 0.2
"""How often an idle pool worker wakes up (see ``_patch_pool_worker_queue``)."""


def _patch_pool_worker_queue() -> None:
    """Make an idle ``multiprocessing.pool`` worker wake up now and then while waiting for tasks.

    A Python-level SIGTERM handler only runs between bytecodes or when a blocking call fails with
    EINTR; a SIGTERM that lands just before the worker blocks in ``SimpleQueue.get`` (exactly what
    ``Pool.terminate`` right after the last result tends to hit) would wait forever and hang the
    pool's ``join``.  This process's pool worker therefore gets an equivalent ``get`` that waits
    with timeouts, giving the pending handler its chance.  Only when our handler is installed,
    and only before ``worker()`` binds ``inqueue.get`` (i.e. from the after-forker).
    """
    pool = sys.modules.get("multiprocessing.pool")
    process = sys.modules.get("multiprocessing.process")
    queues = sys.modules.get("multiprocessing.queues")
    if pool is None or process is None or queues is None:
        return
    if signal.getsignal(signal.SIGTERM) is not _on_sigterm:
        return
    current = process.current_process()
    args = getattr(current, "_args", None)
    if getattr(current, "_target", None) is not getattr(pool, "worker", None) or not args:
        return
    inqueue = args[0]
    rlock = getattr(inqueue, "_rlock", None)
    reader = getattr(inqueue, "_reader", None)
    pickler = getattr(queues, "_ForkingPickler", None)
    if rlock is None or reader is None or pickler is None or "get" in vars(inqueue):
        return
    loads = pickler.loads

    def get() -> Any:
        while not rlock.acquire(timeout=POOL_POLL_SECONDS):
            pass
        try:
            while not reader.poll(POOL_POLL_SECONDS):
                pass
            res = reader.recv_bytes()
        finally:
            rlock.release()
        return loads(res)

    inqueue.get = get


# ---------------------------------------------------------------------------------------------
# Exit and SIGTERM
# ---------------------------------------------------------------------------------------------

def _at_exit() -> None:
    """atexit hook: the root merges and writes the output, a child writes its part."""
    if os.getpid() == _root_pid:
        # Let multiprocessing join its children first when its exit hook would run after ours
        # (multiprocessing imported before the first register); idempotent.
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None and getattr(mp_util, "_exiting", True) is False:
            try:
                mp_util._exit_function()
            except Exception:
                pass
    finish()


def finish() -> None:
    """Write this process's final results, once: the merged output in the root, a part in a child."""
    global _done_pid, _writing
    pid = os.getpid()
    if _out_path is None or _done_pid == pid:
        return
    _done_pid = pid
    _writing = True
    try:
        if pid == _root_pid:
            _write_root()
        else:
            _write_part()
    except BaseException as exc:  # never disturb the program's exit
        _warn(f"could not write features: {exc!r}")
    finally:
        _writing = False
        if _pending_sigterm:
            _die_by_sigterm()


def _on_sigterm(signum: int, frame: Any) -> None:
    """Write results, then die of SIGTERM as the default disposition would have."""
    global _pending_sigterm
    if _writing:          # interrupted our own writing: finish it, then die (see finish)
        _pending_sigterm = True
        return
    finish()
    _die_by_sigterm()


def _die_by_sigterm() -> None:
    """Restore the default SIGTERM disposition and send SIGTERM to this process again."""
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # not the main thread: our handler, in the main thread, will do it
        os.kill(os.getpid(), signal.SIGTERM)
        return
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    except (ValueError, OSError):
        pass
    os.kill(os.getpid(), signal.SIGTERM)
    os._exit(128 + signal.SIGTERM)  # only if the signal could not be delivered


def _warn(message: str) -> None:
    try:
        sys.stderr.write(f"mantispy: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


# ---------------------------------------------------------------------------------------------
# Collecting, merging, writing
# ---------------------------------------------------------------------------------------------

def collect_own() -> tuple[dict[str, int], Values]:
    """This process's counts (non-zero) and per-thread value lists (non-empty)."""
    counts: dict[str, int] = {}
    values: Values = {}
    for reg in list(registrations):
        own = reg.counts()
        for cid, n in [*zip(reg.counter_ids, own), *reg.derived_counts(own)]:
            if n:
                counts[cid] = counts.get(cid, 0) + n
        for store in list(reg.stores):
            for vid, lst in zip(reg.variable_ids, store):
                versions = list(lst)
                if versions:
                    values.setdefault(vid, []).append(versions)
    return counts, values


def read_parts() -> list[tuple[dict[str, int], Values]]:
    """The parts that finished child processes wrote (malformed files are skipped)."""
    parts = parts_dir()
    if parts is None:
        return []
    try:
        names = sorted(os.listdir(parts))
    except OSError:
        return []
    import json

    result = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        try:
            with open(os.path.join(parts, name), encoding="utf-8") as f:
                data = json.load(f)
            counts = {str(k): int(v) for k, v in data["counts"].items()}
            values = {str(k): [list(t) for t in v] for k, v in data["values"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        result.append((counts, values))
    return result


def merge(sources: list[tuple[dict[str, int], Values]]) -> dict[str, Number]:
    """Flat ``{feature_id: value}``: counts summed; version i of a variable averaged over the
    threads (of all sources) that recorded it, as ``var#i``; zeros and unrecorded versions omitted."""
    counts: dict[str, int] = {}
    values: Values = {}
    for src_counts, src_values in sources:
        for cid, n in src_counts.items():
            counts[cid] = counts.get(cid, 0) + n
        for vid, threads in src_values.items():
            values.setdefault(vid, []).extend(threads)
    flat: dict[str, Number] = {cid: n for cid, n in counts.items() if n}
    for vid, threads in values.items():
        longest = max((len(t) for t in threads), default=0)
        for i in range(longest):
            averaged = mean([t[i] for t in threads if len(t) > i])
            if averaged is not None:
                flat[f"{vid}#{i + 1}"] = averaged
    return flat


def snapshot() -> dict[str, Number]:
    """Merged flat view of this process, plus (in the root) the parts of finished children."""
    sources = [collect_own()]
    if is_root():
        sources.extend(read_parts())
    return merge(sources)


def write_json_atomic(path: str, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` through a temporary file and ``os.replace``."""
    import json

    directory, base = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{base}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def peak_rss_kb() -> int | None:
    """This process's peak resident set size (VmHWM of its own address space), or None."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _write_root() -> None:
    assert _out_path is not None
    write_json_atomic(_out_path, snapshot())
    peak_out = os.environ.get("MANTIS_PEAK_OUT")
    if peak_out:  # the profiler samples peak RSS from outside; this catches a peak just before exit
        peak = peak_rss_kb()
        if peak is not None:
            write_json_atomic(peak_out, {"vm_hwm_kb": peak})
    parts = parts_dir()
    if parts is not None:
        _remove_dir(parts)


def _write_part() -> None:
    """Write this child's part into the parts directory; nothing if the root already finished."""
    parts = parts_dir()
    if parts is None or not os.path.isdir(parts):
        return
    counts, values = collect_own()
    if not counts and not values:
        return
    pid = os.getpid()
    path = os.path.join(parts, f"{pid}.json")
    n = 1
    while os.path.exists(path):  # the pid of an earlier, finished child was reused
        path = os.path.join(parts, f"{pid}.{n}.json")
        n += 1
    write_json_atomic(path, {"pid": pid, "counts": counts, "values": values})


def reset() -> None:
    """Zero every count (via the baseline), empty every value store, re-enable every guard."""
    with _lock:
        for reg in registrations:
            reg.baseline = reg.raw_counts()
            reg.clear_values()
            reg.enable_guards()
