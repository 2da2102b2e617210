"""Calls into the standard library keep the dotted name of the definition."""
import json
import math
from collections import Counter


def stats(words):
    counts = Counter(words)
    top = counts.most_common(1)
    return json.dumps({"top": top, "root": math.sqrt(len(words))})


stats(["a", "b", "a"])
