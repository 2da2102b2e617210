"""Lambdas: assigned, passed, stored in containers, called at once; calls inside them."""


def square(x):
    return x * x


def cube(x):
    return x * square(x)


def apply(fn, value):
    return fn(value)


def main():
    twice = lambda v: square(v) * 2
    twice(3)
    apply(lambda v: cube(v), 2)
    ops = [lambda v: v + 1, lambda v: square(v)]
    ops[1](2)
    return (lambda: cube(1))()


identity = lambda v: v
identity(main())
