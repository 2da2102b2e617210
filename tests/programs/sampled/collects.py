"""Garbage collection beside pure-Python work: ``python collects.py SECONDS [REPORT.json]``.

Builds a heap of 200,000 small reference cycles that stay alive, then alternates a full collection
(``gc.collect()``, each one milliseconds of work on that heap) with ``spin`` for about as long, until
SECONDS of CPU have passed: about half the CPU time is garbage collection. REPORT.json gets the thread's
CPU seconds and the part of them its collections took (timed by a ``gc.callbacks`` entry of its own).
"""

import gc
import json
import sys
import time

from shares import spin  # this folder's: CPU spent in pure Python

COLLECTING = {"began": 0.0, "seconds": 0.0}


def timed(phase, info):
    if phase == "start":
        COLLECTING["began"] = time.thread_time()
    else:
        COLLECTING["seconds"] += time.thread_time() - COLLECTING["began"]


class Node:
    def __init__(self):
        self.me = self


def main():
    total = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    gc.callbacks.append(timed)
    heap = [Node() for _ in range(200_000)]
    began = time.process_time()
    while time.process_time() - began < total:
        t = time.process_time()
        gc.collect()
        spin(time.process_time() - t)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w", encoding="utf-8") as handle:
            json.dump({"cpu_s": time.thread_time(), "gc_s": COLLECTING["seconds"]}, handle)
    return len(heap)


if __name__ == "__main__":
    main()
