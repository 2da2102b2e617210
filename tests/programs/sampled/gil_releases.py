"""Additions in add(), then a 4 KB hashlib update (which releases the GIL) in its caller work(), for
argv[1] seconds of CPU; writes the CPU share add() really had (timed around each call) to argv[2]."""

import hashlib
import json
import sys
import time


def add(n):
    total = 0
    for i in range(n):
        total += i
    return total


def work(seconds):
    data = b"x" * 4096
    digest = hashlib.sha256()
    in_add = 0
    start = time.thread_time_ns()
    end = start + seconds * 1e9
    while time.thread_time_ns() < end:
        for _ in range(20):
            before = time.thread_time_ns()
            add(2000)
            in_add += time.thread_time_ns() - before
            digest.update(data)
    return in_add / (time.thread_time_ns() - start)


share = work(float(sys.argv[1]))
with open(sys.argv[2], "w", encoding="utf-8") as handle:
    json.dump({"add_share": share}, handle)
