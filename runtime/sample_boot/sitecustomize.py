"""Start mantispy's stack sampler in this Python process, then run the sitecustomize this one hides.

``mantispy record`` puts this file's folder first on ``PYTHONPATH`` and sets ``MANTIS_SAMPLE_DIR``, so
every Python process of the recorded program (the program itself, spawned multiprocessing workers,
Python programs it starts with subprocess) samples itself. The sampler is loaded from its file, not
through the mantispy package, and this folder is taken off ``sys.path`` again, so that the program sees
the path it would see unrecorded. Standard library only.
"""

import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, filename: str):
    """A module of the run-time, loaded from its file (not through the mantispy package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(_HERE), filename))
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _start() -> None:
    module = _load("_mantis_sampler", "sampler.py")
    if module is not None:
        module.start_from_environment()


try:
    _start()
except Exception:  # noqa: BLE001 - recording must never keep the program from running
    pass
_chain = _load("_mantis_site_chain", "site_chain.py")
if _chain is not None:
    _chain.run_next_sitecustomize(_HERE)
