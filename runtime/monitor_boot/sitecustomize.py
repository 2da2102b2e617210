"""Start mantispy's bytecode backend in this Python process, then run the sitecustomize this one hides.

``mantispy run SRC --backend monitor`` copies this file and the run's ``plan.json`` into a folder of their
own and puts it first on ``PYTHONPATH``, so every Python process of the program (the program itself, spawned
multiprocessing workers, Python programs it starts with subprocess) counts its own features. This
folder is taken off ``sys.path`` again, so that the program sees the path it would see unmonitored.
Standard library only (and mantispy's run-time, installed or a standalone copy on the path).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _start() -> None:
    from mantispy.runtime import monitor

    monitor.install_from_file(os.path.join(_HERE, monitor.PLAN_NAME))


try:
    _start()
except Exception as exc:  # noqa: BLE001 - counting must never keep the program from running
    sys.stderr.write(f"mantispy: the bytecode backend did not start: {exc}\n")
try:
    from mantispy.runtime.site_chain import run_next_sitecustomize
except ImportError:  # mantispy not importable here: nothing of ours ran; leave the path as it is
    pass
else:
    run_next_sitecustomize(_HERE)
