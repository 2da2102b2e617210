"""dask.bag: word count over text files, the 20 most frequent words and the vocabulary size."""

import sys
from pathlib import Path

import dask
import dask.bag as db
from distributed import Client


def main(data: Path) -> None:
    with Client():
        words = db.read_text(str(data / "text" / "*.txt"), blocksize="1MiB").map(str.split).flatten()
        counts = words.map(str.lower).frequencies()
        top, vocabulary, total = dask.compute(counts.topk(20, key=1), counts.count(), words.count())
        print(top[0], vocabulary, total)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
