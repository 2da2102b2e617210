"""Forks 200 short-lived children (``os.fork``), each spinning a little, and waits for them all."""

import os
import time


def child_work():
    end = time.process_time() + 0.005
    while time.process_time() < end:
        pass


children = []
for _ in range(200):
    pid = os.fork()
    if pid == 0:
        child_work()
        os._exit(0)
    children.append(pid)
failed = sum(os.waitpid(pid, 0)[1] != 0 for pid in children)
print("children", len(children), "failed", failed)
