"""Three phases whose CPU time follows the arguments: load, crunch, report.

``python phased.py --records N --passes P``: load spends 0.03 s of CPU per record, crunch 0.03 s per
record and pass, report 0.3 s; each phase's function lives in ``phased_steps`` (so a preloaded module
can wrap one of them from outside).
"""

import argparse

import phased_steps as steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10)
    parser.add_argument("--passes", type=int, default=1)
    args = parser.parse_args()
    rows = steps.load(args.records)
    total = steps.crunch(rows, args.passes)
    steps.report(total)


if __name__ == "__main__":
    main()
