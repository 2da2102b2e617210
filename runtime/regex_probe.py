"""Which regular expressions a program compiles, and where (cheap content features, issue 18).

A program that tokenises or scans its input usually does it with its own regular expressions; the
number of matches of such a pattern in the input files is a content feature computed at C speed, a
stand-in for the program's own token or line counts (see :mod:`mantispy.runtime.content`). This probe
finds the patterns: it wraps :func:`re._compile` (which ``re.compile``, ``re.match``, ``re.sub`` and
friends all call) and keeps, once per (pattern, flags), the first place in the program's own files
that compiled it: the first frame outside the ``re`` package, when that frame's file lies under the
program's root; where that frame is a helper that compiles the pattern it was given (Whoosh's
``rcompile``), its caller in the program (``via`` names the helper's line). Patterns compiled by the
standard library or other packages for their own use (argparse, json) are left out.

Use: ``python -m mantispy.runtime.regex_probe SCRIPT|-m MODULE ARGS...`` with ``MANTIS_REGEX_OUT`` (a
folder: each process writes ``regex-PID.json`` there at exit) and ``MANTIS_REGEX_ROOT`` (the program's
root folder) in the environment, and optionally ``MANTIS_REGEX_PACKAGES``: installed packages (their
folders, or module files, separated by ``os.pathsep``) whose files count as the program's too, named from
the folder above them (``sqlparse/lexer.py``), as a campaign's ``include`` names them. Each file: ``{"format", "version", "root", "patterns": [{"pattern",
"bytes", "flags", "file", "line", "qualname", "via" (where a helper compiled it), "order" (when, among the
patterns this process noted: a lexer that compiles its rules in a list has them in the order it tries
them)}]}``; a bytes pattern is stored latin-1 decoded. Not recorded: processes that end through ``os._exit`` or a signal, child
processes. Standard library only.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import sys
import types

ENV_OUT = "MANTIS_REGEX_OUT"
"""Environment variable: the folder each probed process writes its patterns into."""

ENV_ROOT = "MANTIS_REGEX_ROOT"
"""Environment variable: the program's root folder (only patterns compiled from files under it count)."""

ENV_PACKAGES = "MANTIS_REGEX_PACKAGES"
"""Environment variable: installed packages (folders or module files, ``os.pathsep``-separated) that count too."""

FORMAT = "mantispy-regex-probe"
VERSION = 1

_RE_DIR = os.path.dirname(os.path.realpath(re.__file__))
_SKIPPED = (_RE_DIR + os.sep, os.path.realpath(__file__), os.path.realpath(os.path.join(_RE_DIR, "..", "functools.py")))


MAX_HELPERS = 4
"""How many helper functions (``rcompile(pattern)`` wrapping ``re.compile``) the probe looks through."""


def _passes_through(frame: types.FrameType, pattern: object) -> bool:
    """Whether ``frame``'s function received ``pattern`` itself as an argument: a helper that compiles what
    it is given, so the pattern belongs to its caller."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    if not count:
        return False
    values = frame.f_locals
    return any(values.get(name) is pattern for name in code.co_varnames[:count])


def _qualname(frame: types.FrameType) -> str:
    """The function's qualified name; for a method inherited by the receiver's class, with that class
    (``TaggingPlugin.__init__ (WildcardPlugin)``), since a base class often compiles its subclasses' patterns."""
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name)
    if code.co_argcount:
        receiver = frame.f_locals.get(code.co_varnames[0])
        cls = receiver if isinstance(receiver, type) else type(receiver)
        owner = name.rsplit(".", 1)[0] if "." in name else None
        if code.co_varnames[0] in ("self", "cls") and owner and cls.__qualname__ != owner:
            return f"{name} ({cls.__qualname__})"
    return name


class Probe:
    """The patterns compiled by the program's files, keyed by (pattern, flags)."""

    def __init__(self, root: str, packages: list[str] | None = None) -> None:
        self.root = os.path.realpath(root) + os.sep
        # (what a file's real path starts with, the folder its name is relative to)
        self.places = [(self.root, self.root)]
        for package in packages or ():
            real = os.path.realpath(package)
            self.places.append((real + os.sep if os.path.isdir(real) else real, os.path.dirname(real) + os.sep))
        self.found: dict[tuple, dict] = {}
        self.seen: set[tuple] = set()
        self._relative: dict[str, str | None] = {}

    def note(self, compiled: re.Pattern) -> None:
        """Keep ``compiled`` with the program place that asked for it (the first time it is seen)."""
        key = (type(compiled.pattern), compiled.pattern, compiled.flags)
        if key in self.seen:
            return
        self.seen.add(key)
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED):
            frame = frame.f_back
        if frame is None:
            return
        rel = self._rel(frame.f_code.co_filename)
        if rel is None:
            return
        via = None
        for _ in range(MAX_HELPERS):
            caller = frame.f_back
            if caller is None or not _passes_through(frame, compiled.pattern):
                break
            caller_rel = self._rel(caller.f_code.co_filename)
            if caller_rel is None:
                break
            via = via or f"{rel}:{frame.f_lineno}"
            frame, rel = caller, caller_rel
        is_bytes = isinstance(compiled.pattern, bytes)
        found = {
            "pattern": compiled.pattern.decode("latin-1") if is_bytes else compiled.pattern,
            "bytes": is_bytes, "flags": int(compiled.flags), "file": rel, "line": frame.f_lineno,
            "qualname": _qualname(frame), "order": len(self.found),
        }
        if via:
            found["via"] = via
        self.found[key] = found

    def _rel(self, filename: str) -> str | None:
        if filename not in self._relative:
            real = os.path.realpath(filename)
            self._relative[filename] = next((os.path.relpath(real, base).replace(os.sep, "/")
                                             for prefix, base in self.places if real.startswith(prefix) or real == prefix),
                                            None)
        return self._relative[filename]

    def document(self) -> dict:
        """What the process writes at exit."""
        return {"format": FORMAT, "version": VERSION, "root": self.root.rstrip(os.sep),
                "patterns": sorted(self.found.values(), key=lambda p: (p["file"], p["line"], p["pattern"]))}


def install(root: str, out_dir: str | None = None, packages: list[str] | None = None) -> Probe:
    """Wrap ``re._compile`` for the rest of the process; with ``out_dir``, write the patterns there at exit."""
    probe = Probe(root, packages)
    original = re._compile  # type: ignore[attr-defined]

    def _compile(pattern, flags=0):
        compiled = original(pattern, flags)
        try:
            probe.note(compiled)
        except Exception:  # noqa: BLE001 - the probe never changes what the program sees
            pass
        return compiled

    # Pickling a compiled pattern stores a reference to ``re._compile`` (copyreg): the wrapper answers to that
    # name, so the program's pickles stay what they were (Whoosh pickles its schema's patterns).
    _compile.__module__, _compile.__qualname__ = "re", "_compile"
    re._compile = _compile  # type: ignore[attr-defined]
    if out_dir:
        target = os.path.join(os.path.abspath(out_dir), f"regex-{os.getpid()}.json")

        def _write() -> None:
            try:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "w", encoding="utf-8") as handle:
                    json.dump(probe.document(), handle)
            except Exception as exc:  # noqa: BLE001 - an exit hook must not fail the program
                try:
                    sys.stderr.write(f"mantispy: regex probe: cannot write {target}: {exc}\n")
                except Exception:  # noqa: BLE001
                    pass

        atexit.register(_write)
    return probe


def main(argv: list[str]) -> None:
    """``python -m mantispy.runtime.regex_probe SCRIPT|-m MODULE ARGS...``: run the program as the
    interpreter would, with the probe installed."""
    import runpy

    if not argv or (argv[0] == "-m" and len(argv) < 2):
        sys.exit("usage: python -m mantispy.runtime.regex_probe SCRIPT|-m MODULE ARGS...")
    out = os.environ.get(ENV_OUT)
    packages = [p for p in os.environ.get(ENV_PACKAGES, "").split(os.pathsep) if p]
    if argv[0] == "-m":
        install(os.environ.get(ENV_ROOT) or os.getcwd(), out, packages)
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        script = os.path.abspath(argv[0])
        install(os.environ.get(ENV_ROOT) or os.path.dirname(script), out, packages)
        sys.argv = [argv[0], *argv[1:]]
        sys.path[0] = os.path.dirname(script)
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
