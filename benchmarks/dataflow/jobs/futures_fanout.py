"""futures: fan out Monte Carlo batches with Client.map, reduce them as they complete, then a second round."""

import sys

import numpy as np
from distributed import Client, as_completed


def simulate(seed, n=400_000):
    rng = np.random.default_rng(seed)
    walks = rng.standard_normal((n // 1000, 1000)).cumsum(axis=1)
    return float((walks.max(axis=1) > 40).mean())


def refine(estimate, seed):
    rng = np.random.default_rng(seed)
    return estimate + float(rng.standard_normal(200_000).std()) * 1e-6


def main(batches: int) -> None:
    with Client() as client:
        futures = client.map(simulate, range(batches))
        total = 0.0
        for future in as_completed(futures):
            total += future.result()
        second = client.map(refine, [total / batches] * (batches // 2), range(batches // 2))
        print(round(sum(client.gather(second)) / len(second), 6))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 48)
