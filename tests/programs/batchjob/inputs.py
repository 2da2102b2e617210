"""Inputs of the batch-job campaign: size, queries and mode vary independently."""

import random


def generate(count=24, seed=1):
    rng = random.Random(seed)
    for n in range(count):
        yield {"id": f"b{n:03d}", "argv": ["--size", str(rng.randint(20, 120)), "--queries", str(rng.randint(2, 30)),
                                          "--mode", rng.choice(("scan", "sum"))]}
