"""Generate the dataflow workloads' inputs (Parquet tables, text files, CSV chunks) into a folder, seeded."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

WORDS = 5000


def parquet_tables(out: Path, rows: int, parts: int, seed: int) -> None:
    """Orders (``orders/part-*.parquet``) and customers (``customers.parquet``) for the groupby/join job."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    (out / "orders").mkdir(parents=True, exist_ok=True)
    customers = 20_000
    for i in range(parts):
        n = rows // parts
        frame = pd.DataFrame({
            "customer": rng.integers(0, customers, n),
            "amount": rng.gamma(2.0, 30.0, n).round(2),
            "quantity": rng.integers(1, 20, n),
            "category": rng.choice([f"cat{c:02d}" for c in range(40)], n),
        })
        frame.to_parquet(out / "orders" / f"part-{i:03d}.parquet", index=False)
    pd.DataFrame({"customer": np.arange(customers), "region": rng.choice(["north", "south", "east", "west"], customers),
                  "segment": rng.integers(0, 8, customers)}).to_parquet(out / "customers.parquet", index=False)


def text_files(out: Path, files: int, lines: int, seed: int) -> None:
    """Zipf-distributed words over ``files`` text files of ``lines`` lines each."""
    rnd = random.Random(seed)
    vocabulary = [f"w{rnd.getrandbits(24):06x}" for _ in range(WORDS)]
    weights = [1.0 / (rank + 1) for rank in range(WORDS)]
    (out / "text").mkdir(parents=True, exist_ok=True)
    for i in range(files):
        with open(out / "text" / f"part-{i:03d}.txt", "w", encoding="utf-8") as fh:
            for _ in range(lines):
                fh.write(" ".join(rnd.choices(vocabulary, weights, k=rnd.randint(5, 25))) + "\n")


def csv_chunks(out: Path, files: int, rows: int, seed: int) -> None:
    """Sensor readings as CSV chunks for the delayed ETL job."""
    rnd = random.Random(seed)
    (out / "csv").mkdir(parents=True, exist_ok=True)
    for i in range(files):
        with open(out / "csv" / f"chunk-{i:03d}.csv", "w", encoding="utf-8") as fh:
            fh.write("sensor,time,value,status\n")
            for r in range(rows):
                status = "ok" if rnd.random() > 0.02 else "bad"
                fh.write(f"s{rnd.randint(0, 199):03d},{r},{rnd.gauss(20.0, 5.0):.4f},{status}\n")


def main() -> None:
    """Write every workload's inputs under ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    s = args.scale
    parquet_tables(args.out, int(2_000_000 * s), 16, args.seed)
    text_files(args.out, 12, int(40_000 * s), args.seed)
    csv_chunks(args.out, 16, int(60_000 * s), args.seed)


if __name__ == "__main__":
    main()
