"""Known shares of CPU time: each round runs a() for 0.6, b() for 0.3 and c() for 0.1 CPU seconds.

``python shares.py ROUNDS [SCALE]``: ROUNDS rounds, each function's time multiplied by SCALE.
"""

import sys
import time


def spin(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1
    return x


def a(scale):
    spin(0.6 * scale)


def b(scale):
    spin(0.3 * scale)


def c(scale):
    spin(0.1 * scale)


def main(argv):
    rounds = int(argv[0]) if argv else 1
    scale = float(argv[1]) if len(argv) > 1 else 1.0
    for _ in range(rounds):
        a(scale)
        b(scale)
        c(scale)
    print("done", rounds)


if __name__ == "__main__":
    main(sys.argv[1:])
