"""Run the ``sitecustomize`` a mantispy boot folder hides (standard library only).

``mantispy record`` and ``mantispy run --backend monitor`` put a folder of their own first on
``PYTHONPATH`` whose ``sitecustomize`` starts them in every Python process of the program. Once started,
that folder leaves ``sys.path`` again (the program sees the path it would see without mantispy) and the
next ``sitecustomize`` on the path (a distribution's or a virtual environment's) runs, as it would have.
"""

import importlib.machinery
import importlib.util
import os
import sys


def run_next_sitecustomize(boot_dir: str) -> None:
    """Take ``boot_dir`` off ``sys.path`` and execute the next ``sitecustomize`` found there, if any."""
    rest = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != boot_dir]
    sys.path[:] = rest
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)
