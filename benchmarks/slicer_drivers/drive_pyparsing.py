"""Driver for benchmarks/bench_slicer.py: parses each line of a file as an arithmetic expression with
infix_notation. The entry script a build of a program using pyparsing would analyse; never run by the
benchmark."""

import sys

import pyparsing as pp

integer = pp.pyparsing_common.number
ident = pp.pyparsing_common.identifier
operand = integer | ident
expr = pp.infix_notation(operand, [(pp.one_of("* /"), 2, pp.OpAssoc.LEFT), (pp.one_of("+ -"), 2, pp.OpAssoc.LEFT)])
count = 0
for line in open(sys.argv[1]):
    if line.strip():
        count += len(expr.parse_string(line, parse_all=True).as_list())
print(count)
