"""Inputs of ``phased.py``: records and passes on a small grid."""


def generate(count=12, seed=0):
    for n in range(count):
        records = 10 + (n * 7 + seed) % 11
        passes = 1 + (n * 5 + seed) % 3
        yield {"id": f"r{records}-p{passes}-{n}", "argv": ["--records", str(records), "--passes", str(passes)]}
