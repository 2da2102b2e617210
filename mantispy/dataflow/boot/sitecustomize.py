"""Send a Dask job's computations to the scheduler ``mantispy dataflow record`` watches, unchanged.

A job that makes its own ``Client()`` reaches that scheduler through Dask's own ``DASK_SCHEDULER_ADDRESS``,
which the recorder sets. A job that never makes a client would run on Dask's local threads, out of the
recorder's sight; so, once the job imports ``dask``, this makes the watched scheduler its default (a client
connects on the first compute). A client the job makes itself still takes over, as it would. A client
the job asks to start a cluster (``Client(n_workers=4)``: keywords that are LocalCluster's) starts it, as it
would without the recorder (the address would otherwise make Dask refuse those keywords); the scheduler
preload records that cluster.
Only the standard library at start; ``dask`` and ``distributed`` are the job's own, imported once it uses them.
"""

import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_ADDRESS = os.environ.get("DASK_SCHEDULER_ADDRESS", "")


class _DistributedDefault:
    """A Dask ``get`` that runs graphs on the watched scheduler through one client made on first use."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.client = None

    def __call__(self, dsk, keys, **kwargs):
        from distributed import Client

        if self.client is None or self.client.status in ("closed", "closing"):
            self.client = Client(self.address, set_as_default=False)
        return self.client.get(dsk, keys, **kwargs)


def _after_dask(module) -> None:
    """Make the watched scheduler Dask's default, unless the job chose one."""
    import dask.config

    if dask.config.get("scheduler", None) is None:
        dask.config.set(scheduler=_DistributedDefault(_ADDRESS))


def _after_distributed(module) -> None:
    """Let a client that is asked to start a cluster start it (see the module docstring)."""
    import functools
    import inspect

    import dask.config

    client = getattr(module, "Client", None)
    if client is None:
        return
    original = client.__init__
    own = set(inspect.signature(original).parameters)

    @functools.wraps(original)
    def __init__(self, address=None, *args, **kwargs):
        if address is None and kwargs.keys() - own:
            with dask.config.set({"scheduler-address": None}):
                return original(self, address, *args, **kwargs)
        return original(self, address, *args, **kwargs)

    client.__init__ = __init__


class _LoaderAfterwards(importlib.abc.Loader):
    """Runs the real loader of a module, then ``then(module)``."""

    def __init__(self, loader, then) -> None:
        self.loader = loader
        self.then = then

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.then(module)


class _WhenImported(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` once the module ``name`` has been imported (the first time)."""

    def __init__(self, name: str, then) -> None:
        self.name = name
        self.then = then

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderAfterwards(spec.loader, self.then)
        return spec


if _ADDRESS:
    for _name, _then in (("dask", _after_dask), ("distributed", _after_distributed)):
        if _name not in sys.modules:
            sys.meta_path.insert(0, _WhenImported(_name, _then))
try:
    from mantispy.runtime.site_chain import run_next_sitecustomize
except ImportError:
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
else:
    run_next_sitecustomize(_HERE)
