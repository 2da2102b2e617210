"""A process family: two threads, a fork child and a spawn child (multiprocessing), and a Python program
started with subprocess; each spins in a function named after where it runs."""

import multiprocessing
import subprocess
import sys
import threading
import time


def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def in_thread():
    spin(0.4)


def in_fork_child():
    spin(0.4)


def in_spawn_child():
    spin(0.4)


def main():
    if sys.argv[1:] == ["--subprocess"]:
        spin(0.4)
        return
    thread = threading.Thread(target=in_thread)
    thread.start()
    forked = multiprocessing.get_context("fork").Process(target=in_fork_child)
    spawned = multiprocessing.get_context("spawn").Process(target=in_spawn_child)
    forked.start()
    spawned.start()
    subprocess.run([sys.executable, __file__, "--subprocess"], check=True)
    spin(0.2)
    for child in (forked, spawned):
        child.join()
    thread.join()
    print("family done", forked.exitcode, spawned.exitcode)


if __name__ == "__main__":
    main()
