"""dask.dataframe: read Parquet orders, join customers, groupby aggregates, write Parquet."""

import sys
from pathlib import Path

import dask.dataframe as dd
from distributed import Client


def main(data: Path, out: Path) -> None:
    with Client():
        orders = dd.read_parquet(data / "orders")
        customers = dd.read_parquet(data / "customers.parquet")
        orders = orders.assign(revenue=orders.amount * orders.quantity)
        by_category = orders.groupby("category").agg({"revenue": "sum", "quantity": "mean", "amount": "max"})
        joined = orders.merge(customers, on="customer", how="left")
        by_region = joined.groupby(["region", "segment"]).revenue.sum().reset_index()
        big = joined[joined.revenue > 500].groupby("customer").revenue.count()
        cat, reg, n_big = dd.compute(by_category, by_region, big.size)
        reg.to_parquet(out / "by_region.parquet")
        print(len(cat), len(reg), int(n_big))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
