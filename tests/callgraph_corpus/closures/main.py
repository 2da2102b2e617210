"""Closures and nested functions, returned and called later."""


def make_counter():
    count = 0

    def increment():
        nonlocal count
        count += 1
        return report(count)

    return increment


def report(value):
    return value


def outer(x):
    def middle(y):
        def inner(z):
            return helper(x + y + z)
        return inner(y)
    return middle(x)


def helper(v):
    return v


def make_adder(n):
    return lambda m: helper(m + n)


counter = make_counter()
counter()
outer(1)
add5 = make_adder(5)
add5(1)
