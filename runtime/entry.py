"""Run a ``module:function`` entry with keyword arguments, the way a scheduler's task calls it.

``python -m mantispy.runtime.entry MODULE:FUNCTION KWARGS_JSON`` imports MODULE (the instrumented copy,
found first on PYTHONPATH), calls FUNCTION(**kwargs) and exits 0; an exception propagates (traceback,
exit status 1), so a failing input is recorded as failed. A coroutine function is run with asyncio.
Standard library only.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys


def main(argv: list[str]) -> None:
    """Entry point: argv is [MODULE:FUNCTION, KWARGS_JSON]."""
    if len(argv) != 2 or ":" not in argv[0]:
        sys.exit("usage: python -m mantispy.runtime.entry MODULE:FUNCTION KWARGS_JSON")
    module_name, _, function_name = argv[0].partition(":")
    kwargs = json.loads(argv[1])
    function = getattr(importlib.import_module(module_name), function_name)
    result = function(**kwargs)
    if inspect.isawaitable(result):
        import asyncio

        async def _await():
            return await result

        asyncio.run(_await())


if __name__ == "__main__":
    main(sys.argv[1:])
