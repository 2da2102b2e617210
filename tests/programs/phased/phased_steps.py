"""The phases of ``phased.py``: each spins the CPU for a time that follows its arguments."""

import time


def spin(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1
    return x


def parse(record):
    return spin(0.03) + record


def mix(row):
    return spin(0.03) + row


def load(records):
    return [parse(n) for n in range(records)]


def crunch(rows, passes):
    total = 0
    for _ in range(passes):
        for row in rows:
            total += mix(row)
    return total


def report(total):
    spin(0.3)
    print("total", total > 0)
