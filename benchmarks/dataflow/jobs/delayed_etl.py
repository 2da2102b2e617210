"""dask.delayed: parse CSV chunks in Python, clean, summarise per sensor, merge the summaries, write JSON."""

import csv
import json
import statistics
import sys
from pathlib import Path

from dask import compute, delayed
from distributed import Client


@delayed
def load(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@delayed
def clean(rows):
    return [(r["sensor"], float(r["value"])) for r in rows if r["status"] == "ok"]


@delayed
def summarise(pairs):
    by_sensor = {}
    for sensor, value in pairs:
        by_sensor.setdefault(sensor, []).append(value)
    return {s: (len(v), statistics.fmean(v), max(v)) for s, v in by_sensor.items()}


@delayed
def merge(summaries):
    merged = {}
    for summary in summaries:
        for sensor, (n, mean, peak) in summary.items():
            m = merged.setdefault(sensor, [0, 0.0, float("-inf")])
            m[0] += n
            m[1] += mean * n
            m[2] = max(m[2], peak)
    return {s: {"n": n, "mean": total / n, "max": peak} for s, (n, total, peak) in merged.items()}


def main(data: Path, out: Path) -> None:
    with Client():
        summaries = [summarise(clean(load(p))) for p in sorted((data / "csv").glob("*.csv"))]
        (result,) = compute(merge(summaries))
        (out / "sensors.json").write_text(json.dumps(result, sort_keys=True))
        print(len(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
