"""Spins for as long as asked (``python slow.py SECONDS``), in a function named steady."""

import sys
import time


def steady(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


steady(float(sys.argv[1]))
