"""dask.array: random matrix, rechunk, reductions along both axes, a matrix product, a standardisation."""

import sys

import dask.array as da
from distributed import Client


def main(n: int) -> None:
    with Client():
        x = da.random.default_rng(3).standard_normal((n, n), chunks=(n // 8, n))
        y = x.rechunk((n // 4, n // 4))
        z = (y - y.mean(axis=0)) / y.std(axis=0)
        gram = (z[:, : n // 4].T @ z[:, : n // 4])
        col, row, tr = da.compute(z.max(axis=0).sum(), abs(z).mean(axis=1).std(), da.trace(gram))
        print(round(float(col), 3), round(float(row), 5), round(float(tr), 1))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
