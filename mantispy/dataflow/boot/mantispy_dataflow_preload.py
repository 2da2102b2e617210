"""Record a cluster the Dask job starts itself (a scheduler preload; ``mantispy dataflow record`` names it).

A job that makes its own ``LocalCluster`` (or ``Client(n_workers=...)``) runs its tasks on a scheduler
mantispy did not start. The recorder sets Dask's ``distributed.scheduler.preload`` to this module for the
job, so every scheduler the job starts runs :func:`dask_setup` (which adds mantispy's recorder plugin to
it, and to its workers the plugins that send a last heartbeat and report each fetch) and, when it closes,
:func:`dask_teardown` (which writes what the plugin holds, as JSON, into the folder ``MANTIS_DATAFLOW_OWN``
names). A job that ends without closing its cluster is written at exit.
Where the job's interpreter cannot import mantispy, a note says so instead, and the job runs unrecorded.
"""

import atexit
import json
import os
import time

_FOLDER = os.environ.get("MANTIS_DATAFLOW_OWN", "")
_INTERVAL = float(os.environ.get("MANTIS_DATAFLOW_INTERVAL", "0.25") or 0.25)
_PLUGIN = "mantispy-dataflow"  # mantispy.dataflow.plugin.PLUGIN_NAME, which this file cannot import at start


def _path(scheduler, suffix: str) -> str:
    return os.path.join(_FOLDER, f"cluster-{os.getpid()}-{id(scheduler):x}{suffix}")


def _write(scheduler, why: str) -> None:
    """What the recorder on ``scheduler`` holds, with the scheduler's address, written atomically."""
    try:
        from mantispy.dataflow.plugin import PLUGIN_NAME, snapshot
    except ImportError:
        return
    for _ in range(3):  # at exit the scheduler's own thread may still be changing what is read
        try:
            data = snapshot(scheduler, PLUGIN_NAME)
            break
        except RuntimeError:
            time.sleep(0.05)
    else:
        return
    if data is None:
        return
    data["address"] = str(getattr(scheduler, "address", "") or "")
    data["written"] = why
    target = _path(scheduler, ".json")
    with open(target + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(data, handle, default=str)
    os.replace(target + ".tmp", target)


async def dask_setup(scheduler) -> None:
    """Add mantispy's recorder to a scheduler the job starts, and to its workers the plugins that send a
    last heartbeat as they close and report each fetch (Dask calls this when the scheduler starts)."""
    if not _FOLDER:
        return
    try:
        from distributed.protocol.pickle import dumps

        from mantispy.dataflow.plugin import PLUGIN_NAME, DataflowRecorder, LastHeartbeat, TransferLog
    except ImportError as exc:
        with open(_path(scheduler, ".note"), "w", encoding="utf-8") as handle:
            handle.write(f"the job's own cluster was not recorded: its interpreter cannot import mantispy ({exc})")
        return
    scheduler.add_plugin(DataflowRecorder(_INTERVAL), name=PLUGIN_NAME)
    for plugin in (LastHeartbeat(), TransferLog()):
        try:
            await scheduler.register_worker_plugin(None, dumps(plugin), name=plugin.name, idempotent=True)
        except TypeError:  # a distributed before the keyword
            await scheduler.register_worker_plugin(None, dumps(plugin), name=plugin.name)
    atexit.register(_at_exit, scheduler)


def _at_exit(scheduler) -> None:
    if not os.path.exists(_path(scheduler, ".json")):
        _write(scheduler, "exit")


async def dask_teardown(scheduler) -> None:
    """Write what the recorder saw (Dask calls this when the scheduler starts closing; a LocalCluster has
    closed its workers by then, each after its last heartbeat)."""
    import asyncio

    if _FOLDER and _PLUGIN in getattr(scheduler, "plugins", {}):
        if scheduler.workers:  # closed without its workers first: wait for their next heartbeat
            await asyncio.sleep(min(1.0, _INTERVAL * 3))
        _write(scheduler, "close")
