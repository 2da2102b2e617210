"""Send a Dask job's computations to the scheduler ``mantispy dataflow record`` watches, unchanged.

A job that makes its own ``Client()`` reaches that scheduler through Dask's own ``DASK_SCHEDULER_ADDRESS``,
which the recorder sets. A job that never makes a client would run on Dask's local threads, out of the
recorder's sight; so, once the job imports ``dask``, this makes the watched scheduler its default (a client
connects on the first compute). A client the job makes itself still takes over, as it would.
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


class _LoaderAfterwards(importlib.abc.Loader):
    """Runs the real loader of ``dask``, then sets the default scheduler."""

    def __init__(self, loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        import dask.config

        if dask.config.get("scheduler", None) is None:
            dask.config.set(scheduler=_DistributedDefault(_ADDRESS))


class _WhenDaskImports(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "dask":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("dask")
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderAfterwards(spec.loader)
        return spec


if _ADDRESS and "dask" not in sys.modules:
    sys.meta_path.insert(0, _WhenDaskImports())
try:
    from mantispy.runtime.site_chain import run_next_sitecustomize
except ImportError:
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
else:
    run_next_sitecustomize(_HERE)
