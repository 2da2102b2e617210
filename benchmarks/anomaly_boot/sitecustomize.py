"""Anomalies injected into a Python program from outside it (the anomaly benchmark and its tests).

Put this file's folder on ``PYTHONPATH`` and set one or more of:

* ``MANTIS_INJECT_DELAY=module:function:seconds[:busy]``: once ``module`` is imported, each call of
  its ``function`` (or ``Class.method``) first sleeps ``seconds``, or with ``busy`` spends that much CPU
  time (a slowed phase, as redundant work would slow it; the program's code is not touched). The
  wrapper's frame is marked as nobody's (a ``<...>`` file name), so samples see the wrapped function;
* ``MANTIS_INJECT_BALLOON=mib:at_s:hold_s``: a thread allocates and touches ``mib`` MiB ``at_s``
  seconds after start, holds it ``hold_s`` seconds, then frees it (a memory balloon);
* ``MANTIS_INJECT_IO_STALL=suffix:seconds``: each ``open()`` of a file whose name ends with ``suffix``
  first sleeps ``seconds`` (a stalled disk).

Then the next ``sitecustomize`` on the path runs (mantispy's sampler boot chains the same way).
Standard library only.
"""

import builtins
import functools
import importlib.abc
import importlib.util
import io
import os
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))


def _delayed(function, seconds, busy):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if busy:
            end = time.process_time() + seconds
            while time.process_time() < end:
                pass
        else:
            time.sleep(seconds)
        return function(*args, **kwargs)

    # a file name in <...> marks the frame as no program's: samples and phases see the function it wraps
    wrapper.__code__ = wrapper.__code__.replace(co_filename="<injected delay>")
    return wrapper


class _WrapAfterImport(importlib.abc.MetaPathFinder):
    """Wraps ``module.function`` with a delay as soon as ``module`` has been executed."""

    def __init__(self, module, function, seconds, busy):
        self.module, self.function, self.seconds, self.busy = module, function, seconds, busy

    def find_spec(self, fullname, path, target=None):
        if fullname != self.module:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        loader, finder = spec.loader, self

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                finder.wrap(module)

        spec.loader = Loader()
        return spec

    def wrap(self, module):
        *path, name = self.function.split(".")
        owner = module
        for part in path:
            owner = getattr(owner, part, None)
        target = getattr(owner, name, None)
        if callable(target):
            setattr(owner, name, _delayed(target, self.seconds, self.busy))


def _delay(text):
    module, function, seconds, *mode = text.split(":")
    finder = _WrapAfterImport(module, function, float(seconds), mode == ["busy"])
    if module in sys.modules:
        finder.wrap(sys.modules[module])
    else:
        sys.meta_path.insert(0, finder)


def _balloon(text):
    mib, at_s, hold_s = (float(part) for part in text.split(":"))

    def inflate():
        time.sleep(at_s)
        block = bytearray(int(mib * 2**20))
        for offset in range(0, len(block), 4096):
            block[offset] = 1
        time.sleep(hold_s)
        del block

    threading.Thread(target=inflate, name="balloon", daemon=True).start()


def _io_stall(text):
    suffix, seconds = text.rsplit(":", 1)
    pause = float(seconds)
    original = builtins.open

    @functools.wraps(original)
    def stalled_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.fspath(file).endswith(suffix):
            time.sleep(pause)
        return original(file, *args, **kwargs)

    stalled_open.__code__ = stalled_open.__code__.replace(co_filename="<injected stall>")
    builtins.open = stalled_open
    io.open = stalled_open


def _chain():
    """Run the sitecustomize this one hides, with mantispy's run-time helper (loaded from its file)."""
    path = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "runtime", "site_chain.py")
    spec = importlib.util.spec_from_file_location("_mantis_site_chain", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.run_next_sitecustomize(_HERE)


for _name, _start in (("MANTIS_INJECT_DELAY", _delay), ("MANTIS_INJECT_BALLOON", _balloon),
                      ("MANTIS_INJECT_IO_STALL", _io_stall)):
    if os.environ.get(_name):
        _start(os.environ[_name])
_chain()
