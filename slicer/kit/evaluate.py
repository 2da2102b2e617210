"""A mantispy feature evaluator: feature values, from a slice of the program (copied into each evaluator
as ``evaluate.py``; its features and entry are in ``_mantis_build.py`` beside it).

    python evaluate.py ARGS...          prints the feature's value for the input ARGS (several features:
                                        a JSON object {feature id: value})
    python evaluate.py '{"kw": 1}'      (a module:function entry: keyword arguments as one JSON object)
    python evaluate.py --mantis-json ARGS...    every feature as one JSON object, always; a failure is
                                        one stderr line "mantispy-evaluator-error: TYPE: MESSAGE", exit 3
    python evaluate.py --mantis-json-kwargs '{"kw": 1}'   the same for a module:function entry
    python evaluate.py --mantis-serve   a warm server on stdin/stdout (see serve)
    python evaluate.py --mantis-confinement   what confines an evaluation on this machine (JSON, then a line)
    evaluate(["ARG", ...]) / evaluate(kw=1)   from Python, with this folder on sys.path: the first feature
    evaluate_all(["ARG", ...])          every feature, as {feature id: value}

Only the statements the feature depends on run. The sliced program's stdout and stderr go to os.devnull,
and a write guard (_mantis_guard) makes any attempt to write files (outside the evaluation's own scratch
folder, its temporary folder, removed when it ends), start processes or open network connections fail
with PermissionError. From the command line (and so in every prediction and every check mantispy runs),
the evaluation also runs in a child process the kernel confines (_mantis_confine: Landlock keeps writes
inside a private folder, seccomp refuses sockets and new processes; MANTISPY_CONFINE=auto|require|off);
evaluate() and evaluate_all() called from Python run in the caller's process, under the guard only.
Standard library only (and ctypes); mantispy is not imported.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE in sys.path:
    from _mantis_build import COUNTS_ON_FAILURE, ENTRY, FEATURES, MODULES, PRELOAD, ROOT_PARTS
else:  # loaded by path: the kit's modules sit beside this file
    sys.path.insert(0, HERE)
    try:
        from _mantis_build import COUNTS_ON_FAILURE, ENTRY, FEATURES, MODULES, PRELOAD, ROOT_PARTS
    finally:
        sys.path.remove(HERE)

FEATURE_IDS = tuple(fid for fid, _, _ in FEATURES)
FEATURE = FEATURE_IDS[0]
ROOT = os.path.join(HERE, *ROOT_PARTS)  # the copy of the program's root folder
ERROR_PREFIX = "mantispy-evaluator-error: "


def evaluate(argv=None, **kwargs):
    """Run the sliced program on ``argv`` (``kwargs`` for a module:function entry); return the first
    feature's value."""
    return evaluate_all(argv, **kwargs)[FEATURE]


def evaluate_all(argv=None, **kwargs):
    """Run the sliced program once on ``argv`` (``kwargs`` for a module:function entry); return every
    feature's value as {feature id: float}."""
    saved_path = list(sys.path)
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import _mantis_eval
    import _mantis_guard

    saved_modules = {name: sys.modules.pop(name) for name in MODULES if name in sys.modules}
    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr, sys.dont_write_bytecode)
    _mantis_eval.reset()
    sink = open(os.devnull, "w")
    empty = open(os.devnull)  # profiled runs read /dev/null on stdin: so does the evaluation, not the caller's
    errors = _Tail()
    sys.dont_write_bytecode = True
    patches = _mantis_guard.install()
    _mantis_eval.install()
    try:
        sys.stdin, sys.stdout, sys.stderr = empty, sink, errors
        status = _run_to_status(list(argv or ()), kwargs)
    finally:
        _mantis_eval.uninstall()
        _mantis_guard.uninstall(patches)
        sys.argv, sys.stdin, sys.stdout, sys.stderr, sys.dont_write_bytecode = saved
        sys.path[:] = saved_path
        for name in MODULES:
            sys.modules.pop(name, None)
        sys.modules.update(saved_modules)
        sink.close()
        empty.close()
    return _outcome(status, errors)


def _run_to_status(argv, kwargs):
    """Run the entry; return its exit status. What the program raises propagates, except in an evaluator
    that keeps the counts of a failed run (COUNTS_ON_FAILURE): there it is the status 1 Python's top
    level would give, its last line on the (captured) stderr."""
    try:
        _run(argv, kwargs)
    except SystemExit as exc:
        return exc.code
    except Exception as exc:
        if not COUNTS_ON_FAILURE:
            raise
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        return 1
    return 0


class InputRejected(Exception):
    """The sliced program exited with a non-zero status: the input is not one the program accepts."""


def _outcome(status, errors):
    """The values of one evaluation, or why there are none (a refused write, a rejected input)."""
    import _mantis_eval
    import _mantis_guard

    if _mantis_guard.VIOLATIONS:
        raise PermissionError(_mantis_guard.VIOLATIONS[0])
    if status not in (None, 0) and not COUNTS_ON_FAILURE:
        said = errors.last_line()
        raise InputRejected(f"the program rejects this input (exit status {status})" + (f": {said}" if said else ""))
    return {fid: float(v) for fid, v in _mantis_eval.values().items()}


def serve(requests=None, replies=None):
    """A warm evaluator: import the sliced program's modules once (their top levels do not depend on the
    input), then answer each request line ``{"argv": [...], "kwargs": {...}, "cwd": "..."}`` by running
    the entry in a forked child of this pre-initialised process, with one reply line: ``{"values": {...}}``
    or ``{"error": "..."}``. Counts the module top levels made are inherited by every child, exactly as
    each run of the program makes them once. ``python evaluate.py --mantis-serve`` runs it on stdin/stdout.
    """
    import json

    requests = requests or sys.stdin
    replies = replies or sys.stdout
    fork = os.fork  # the guard refuses os.fork to the sliced program, not to this server
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import _mantis_eval
    import _mantis_guard

    entry = ENTRY.strip()
    if not entry.startswith("-m ") and not (":" in entry and not entry.endswith(".py")):
        sys.path.insert(0, os.path.dirname(os.path.join(ROOT, *entry.split("/"))))
    global _SINK, _KNOWN_PATTERNS, _KNOWN_MODULES
    sink = _SINK = open(os.devnull, "w")
    saved = (sys.stdout, sys.stderr)
    sys.dont_write_bytecode = True
    _mantis_guard.install(scratch=False)  # each forked evaluation makes its own scratch folder
    _mantis_eval.install()
    preload_error = None
    try:
        sys.stdout = sys.stderr = sink
        for name in PRELOAD:
            try:
                __import__(name)
            except ImportError:  # an optional import of the entry: it runs (and fails) per input
                pass
    except BaseException as exc:  # the import fails the same way for every input: say so per request
        preload_error = f"{type(exc).__name__}: {exc}"
    finally:
        sys.stdout, sys.stderr = saved
    if not entry.startswith("-m ") and not (":" in entry and not entry.endswith(".py")):
        script = os.path.join(ROOT, *entry.split("/"))
        with open(script, "rb") as handle:
            _CODE[script] = compile(handle.read(), script, "exec", dont_inherit=True)
    _warm_standard_library()
    import gc

    _KNOWN_PATTERNS = frozenset(_pattern_keys())
    _KNOWN_MODULES = frozenset(sys.modules)
    gc.freeze()  # the children's collections leave the inherited objects (and their pages) alone
    waiting = _fork_evaluation(fork)  # each evaluation is forked before its request comes
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    try:
        while True:
            line = requests.readline()
            if not line:
                return
            try:
                json.loads(line)
            except ValueError:
                replies.write(json.dumps({"error": "not a JSON request"}) + "\n")
                replies.flush()
                continue
            if preload_error is not None:
                replies.write(json.dumps({"error": preload_error}) + "\n")
                replies.flush()
                continue
            child, waiting = waiting, None
            reply = child.answer(line.encode())
            replies.write((reply.decode() or json.dumps({"error": "the evaluation died without a reply"})) + "\n")
            replies.flush()
            learned = child.rest()  # after the reply: the client need not wait for what the server learns,
            child.reap()  # nor for the child's exit and cleanup
            _learn(learned)
            waiting = _fork_evaluation(fork)
    finally:
        if waiting is not None:
            waiting.abandon()


class _ForkedEvaluation:
    """The server's side of one forked evaluation: its process and its two pipes."""

    def __init__(self, pid, request_fd, reply_fd):
        self.pid = pid
        self.request_fd = request_fd
        self.reply_fd = reply_fd
        self.pending = b""  # what the child wrote after its reply line

    def answer(self, request):
        """Hand the child its request line; return its reply line (empty if it died without one)."""
        try:
            while request:
                request = request[os.write(self.request_fd, request):]
        except OSError:  # the child died before its request: its reply is empty
            pass
        os.close(self.request_fd)
        received = b""
        while b"\n" not in received:
            chunk = os.read(self.reply_fd, 65536)
            if not chunk:
                break
            received += chunk
        reply, _, self.pending = received.partition(b"\n")
        return reply

    def rest(self):
        """What the child wrote after its reply line (what the server learns from it), to its end."""
        import _mantis_confine

        return self.pending + _mantis_confine.read_to_end(self.reply_fd)

    def reap(self):
        """Wait for the child's end and remove its scratch folder."""
        import _mantis_guard

        os.waitpid(self.pid, 0)
        _mantis_guard.discard_scratch(self.pid)

    def abandon(self):
        """End a child that got no request (the server is stopping)."""
        import signal

        for fd in (self.request_fd, self.reply_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.reap()


def _fork_evaluation(fork):
    """Fork the next evaluation now, so that its set-up (the fork, its confinement, its scratch folder)
    is done before its request comes; returns the server's handle on it. The child waits for one request line
    on its own pipe, answers through the other and leaves without cleanup."""
    import signal

    server = os.getpid()
    request_read, request_write = os.pipe()
    reply_read, reply_write = os.pipe()
    pid = fork()
    if pid:
        os.close(request_read)
        os.close(reply_write)
        return _ForkedEvaluation(pid, request_write, reply_read)
    os.close(request_write)
    os.close(reply_read)
    import json

    try:
        import _mantis_confine
        import _mantis_guard

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _mantis_confine.die_with(server)
        _mantis_confine.forbid_processes()
        _mantis_guard.fresh_scratch()
        _stdin_from_devnull()
        request = json.loads(_mantis_confine.read_to_end(request_read))
        if request.get("cwd"):
            os.chdir(request["cwd"])
        reply = {"values": _evaluate_here(request.get("argv") or [], request.get("kwargs") or {})}
    except BaseException as exc:
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    data = (json.dumps(reply) + "\n").encode()
    while data:
        data = data[os.write(reply_write, data):]
    try:  # then, while the client reads its reply, what the server learns (an optimisation only)
        data = (json.dumps({"patterns": _new_patterns(), "modules": _new_standard_modules()}) + "\n").encode()
    except Exception:
        data = b""
    while data:
        data = data[os.write(reply_write, data):]
    os.close(reply_write)  # the reply is complete: the server goes on while this process exits
    os._exit(0)


_KNOWN_PATTERNS = frozenset()  # re's cache keys in the server when it forked the evaluation
_LEARNED_LIMIT = 512  # patterns the server compiles for its children at most (re's own cache size)
_learned_count = 0
_KNOWN_MODULES = frozenset()  # sys.modules of the server when it forked the evaluation
_MODULES_LIMIT = 512  # standard-library modules the server imports for its children at most
_NEVER_LEARNED = frozenset({"__main__", "this", "antigravity", "__hello__", "__phello__", "idlelib", "tkinter",
                            "turtle", "turtledemo", "readline", "rlcompleter", "pdb", "webbrowser"})
_imported_count = 0


def _learn(line):
    """What the server takes from an evaluation's last line (see the child's side in _fork_evaluation):
    the patterns it compiled and the standard-library modules it imported."""
    import json

    try:
        learned = json.loads(line) if line.strip() else {}
    except ValueError:
        return
    if isinstance(learned, dict):
        _learn_patterns(learned.get("patterns"))
        _learn_modules(learned.get("modules"))


def _standard_library_folders():
    """The folders of this interpreter's standard library (the one ``os`` comes from, and its compiled
    extensions), without the third-party packages some installs keep below them."""
    base = os.path.dirname(os.path.abspath(os.__file__))
    return (base + os.sep, os.path.join(base, "lib-dynload") + os.sep)


def _new_standard_modules():
    """The standard-library modules this evaluation imported that the server had not, in import order
    (at most 256): those built into the interpreter, frozen, or loaded from the standard library's folders."""
    folders = _standard_library_folders()
    found = []
    for name, module in list(sys.modules.items()):
        if name in _KNOWN_MODULES or name.split(".")[0] in _NEVER_LEARNED or module is None:
            continue
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None) or ""
        standard = origin in ("built-in", "frozen") or (
            origin.startswith(folders) and "site-packages" not in origin and "dist-packages" not in origin)
        if standard:
            found.append(name)
            if len(found) >= 256:
                break
    return found


def _learn_modules(names):
    """Import in the server the standard-library modules an evaluation imported (what
    ``_new_standard_modules`` found), so that the next forks find them imported, as a long-running process
    of the program would: a program that imports a module at run time, in a function (Markdown reads its
    installed extensions through ``importlib.metadata``, which imports ``email``), otherwise pays the
    import in every forked evaluation, milliseconds each. No program code runs (standard library only,
    counted nowhere); a program that looked into ``sys.modules`` for them would see them there sooner.
    At most ``_MODULES_LIMIT`` in all."""
    global _KNOWN_MODULES, _imported_count

    if not names or not isinstance(names, list) or _imported_count >= _MODULES_LIMIT:
        return  # nothing new (the usual case): no work between two evaluations
    import gc

    saved = (sys.stdout, sys.stderr)
    try:
        sys.stdout = sys.stderr = _SINK
        for name in names[: _MODULES_LIMIT - _imported_count]:
            if not isinstance(name, str) or name in sys.modules or name.split(".")[0] in _NEVER_LEARNED:
                continue
            try:
                __import__(name)
            except Exception:  # a module this server cannot import stays the child's
                continue
            _imported_count += 1
    finally:
        sys.stdout, sys.stderr = saved
    _KNOWN_MODULES = frozenset(sys.modules)
    gc.freeze()


def _pattern_keys():
    """The (type, pattern, flags) keys of the re module's caches of compiled patterns (private to re,
    the same in Python 3.11-3.13; none where they are not found)."""
    regex = sys.modules.get("re")
    keys = set()
    for name in ("_cache", "_cache2"):
        cache = getattr(regex, name, None)
        if isinstance(cache, dict):
            keys.update(key for key in list(cache) if isinstance(key, tuple) and len(key) == 3)
    return keys


def _new_patterns():
    """What this evaluation compiled that the server had not: [pattern, flags, is bytes] (bytes as
    latin-1 text), at most 256."""
    found = []
    for kind, pattern, flags in _pattern_keys() - _KNOWN_PATTERNS:
        if kind is str and isinstance(pattern, str) and isinstance(flags, int):
            found.append([pattern, flags, False])
        elif kind is bytes and isinstance(pattern, bytes) and isinstance(flags, int):
            found.append([pattern.decode("latin-1"), flags, True])
        if len(found) >= 256:
            break
    return found


def _learn_patterns(patterns):
    """Compile in the server the patterns an evaluation compiled (what ``_new_patterns`` found), so
    that the next forks find them in re's cache, as a long-running process of the program would: the
    regexes a program builds per run (a lexer's table, a parser's rules) cost each forked evaluation
    milliseconds otherwise. Compiled patterns are immutable and the cache is re's own memo, so the program
    sees the same objects' behaviour; only the time changes. At most ``_LEARNED_LIMIT`` in all."""
    global _KNOWN_PATTERNS, _learned_count

    if not patterns or _learned_count >= _LEARNED_LIMIT or "re" not in sys.modules:
        return
    import gc

    compile_pattern = sys.modules["re"].compile
    for item in patterns[: _LEARNED_LIMIT - _learned_count] if isinstance(patterns, list) else ():
        try:
            pattern, flags, is_bytes = item
            compile_pattern(pattern.encode("latin-1") if is_bytes else pattern, flags)
        except Exception:  # a pattern this server cannot compile stays the child's
            continue
        _learned_count += 1
    _KNOWN_PATTERNS = frozenset(_pattern_keys())
    gc.freeze()


def _stdin_from_devnull():
    """Give the evaluation an empty stdin, as profiled runs have, rather than the server's (the client's
    request pipe, and what the server's reader has buffered of it)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = sys.__stdin__ = open(0, closefd=False)


_SINK = None  # serve()'s /dev/null, opened before the guard refuses writing opens


def _warm_standard_library():
    """Fill the standard library's lazy state once, here, rather than in every forked evaluation:
    argparse translates each of its messages through gettext, whose first lookups (locale aliases,
    message catalogues) cost a fresh child about 4 ms, most of a warm evaluation of a workload that
    only parses its arguments. Builds objects and throws them away: nothing the program sees."""
    saved = (sys.stdout, sys.stderr)
    try:
        sys.stdout = sys.stderr = _SINK
        import gettext

        gettext.gettext("usage: ")
        if "argparse" in sys.modules:
            parser = sys.modules["argparse"].ArgumentParser(prog="mantis-warm-up")
            parser.add_argument("names", nargs="*")
            parser.add_argument("--flag", action="store_true")
            parser.parse_args([])
            parser.format_help()
    except Exception:  # warming is an optimisation only
        pass
    finally:
        sys.stdout, sys.stderr = saved


def _evaluate_here(argv, kwargs):
    """One evaluation in a process whose modules are already imported (a forked child of serve)."""

    errors = _Tail()
    try:
        sys.stdout, sys.stderr = _SINK, errors
        status = _run_to_status(list(argv), kwargs)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return _outcome(status, errors)


class _Tail:
    """A stderr that keeps only its last 4000 characters (for the reason of a rejected input)."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self):
        self.text = ""

    def isatty(self):
        return False

    def write(self, text):
        self.text = (self.text + text)[-4000:]
        return len(text)

    def flush(self):
        pass

    def last_line(self):
        lines = [line for line in self.text.strip().splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""


def _run(argv, kwargs):
    entry = ENTRY.strip()
    if entry.startswith("-m "):
        import runpy

        module = entry[3:].strip()
        sys.argv = [module, *argv]
        sys.path.insert(0, HERE)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    elif ":" in entry and not entry.endswith(".py"):
        import importlib

        module, _, function = entry.partition(":")
        sys.argv = [entry, *argv]
        result = getattr(importlib.import_module(module), function)(**kwargs)
        if hasattr(type(result), "__await__"):  # inspect.isawaitable, without importing inspect
            import asyncio

            async def wait():
                return await result

            asyncio.run(wait())
    else:
        path = os.path.join(ROOT, *entry.split("/"))
        sys.argv = [path, *argv]
        sys.path.insert(0, os.path.dirname(path))
        _run_script(path)


_CODE = {}  # compiled entry scripts (serve() compiles before forking)


def _run_script(path):
    """``runpy.run_path(path, run_name="__main__")`` without importing runpy (milliseconds per evaluation)."""
    import types

    code = _CODE.get(path)
    if code is None:
        with open(path, "rb") as handle:
            code = _CODE[path] = compile(handle.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def main():
    """Command line: print the value(s) for the input in sys.argv[1:] (see the module docstring). Every
    evaluation runs in a child the kernel confines (_mantis_confine: Landlock and seccomp where the
    platform offers them; MANTISPY_CONFINE=auto|require|off)."""
    args = sys.argv[1:]
    import _mantis_confine

    if args == ["--mantis-confinement"]:
        import json

        report = _mantis_confine.probe()
        print(json.dumps(report))
        print(_mantis_confine.describe(report))
        return
    if args == ["--mantis-serve"]:
        sys.exit(_mantis_confine.run_confined(_serve_status, _serve_error))
    if args[:1] in (["--mantis-json"], ["--mantis-json-kwargs"]):
        sys.exit(_mantis_confine.run_confined(lambda: _print_json(args), _json_error))
    sys.exit(_mantis_confine.run_confined(lambda: _print_values(args), _plain_error))


def _serve_status():
    serve()
    return 0


def _serve_error(exc):
    import json

    sys.stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
    return 3


def _json_error(exc):
    sys.stderr.write(f"{ERROR_PREFIX}{type(exc).__name__}: {exc}\n")
    return 3


def _plain_error(exc):
    sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
    return 1


def _print_json(args):
    """``--mantis-json ARGS`` / ``--mantis-json-kwargs JSON``: every feature as one JSON object."""
    import json

    import _mantis_confine

    _mantis_confine.forbid_processes()
    _stdin_from_devnull()
    if args[0] == "--mantis-json-kwargs":
        values = evaluate_all(**json.loads(args[1] if len(args) > 1 else "{}"))
    else:
        values = evaluate_all(args[1:])
    print(json.dumps(values))
    return 0


def _print_values(args):
    """Plain command line: one feature's value, or a JSON object of several."""
    import json

    import _mantis_confine

    _mantis_confine.forbid_processes()
    _stdin_from_devnull()
    kwargs = {}
    if ":" in ENTRY and not ENTRY.strip().startswith("-m ") and len(args) == 1 and args[0].lstrip().startswith("{"):
        kwargs, args = json.loads(args[0]), []
    values = evaluate_all(args, **kwargs)
    if len(values) == 1:
        value = values[FEATURE]
        print(int(value) if value.is_integer() else repr(value))
    else:
        print(json.dumps(values))
    return 0


if __name__ == "__main__":
    main()
