"""Plain function calls, recursion and builtins."""


def square(x):
    return x * x


def total(values):
    result = 0
    for v in values:
        result += square(v)
    return result


def countdown(n):
    if n > 0:
        countdown(n - 1)


def main():
    numbers = list(range(5))
    print(total(numbers), len(numbers))
    countdown(3)


main()
