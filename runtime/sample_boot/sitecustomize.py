"""Start mantispy's stack sampler in this Python process, then run the sitecustomize this one hides.

``mantispy record`` puts this file's folder first on ``PYTHONPATH`` and sets ``MANTIS_SAMPLE_DIR``, so
every Python process of the recorded program (the program itself, spawned multiprocessing workers,
Python programs it starts with subprocess) samples itself. The sampler is loaded from its file, not
through the mantispy package, and this folder is taken off ``sys.path`` again, so that the program sees
the path it would see unrecorded. Standard library only.
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _start() -> None:
    path = os.path.join(os.path.dirname(_HERE), "sampler.py")
    spec = importlib.util.spec_from_file_location("_mantis_sampler", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_mantis_sampler"] = module
    spec.loader.exec_module(module)
    module.start_from_environment()


def _chain() -> None:
    """Run the next ``sitecustomize`` on the path (a distribution's or a virtual environment's)."""
    rest = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
    sys.path[:] = rest
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _start()
except Exception:  # noqa: BLE001 - recording must never keep the program from running
    pass
_chain()
