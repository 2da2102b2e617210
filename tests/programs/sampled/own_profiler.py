"""A program with its own SIGPROF handler and ITIMER_PROF timer: it counts its ticks, prints them, and
exits with status 3 (the sampler must change none of it)."""

import signal
import sys
import time

ticks = 0


def on_tick(signum, frame):
    global ticks
    ticks += 1


signal.signal(signal.SIGPROF, on_tick)
signal.setitimer(signal.ITIMER_PROF, 0.01, 0.01)
end = time.process_time() + 0.5
while time.process_time() < end:
    pass
signal.setitimer(signal.ITIMER_PROF, 0, 0)
print("ticked", ticks > 10)
sys.exit(3)
