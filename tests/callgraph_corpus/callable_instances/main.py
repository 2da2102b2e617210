"""__call__ on instances, directly and through a parameter."""


class Multiplier:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, value):
        return self.apply(value)

    def apply(self, value):
        return value * self.factor


class Doubler(Multiplier):
    def __init__(self):
        super().__init__(2)


def run(fn, value):
    return fn(value)


def main():
    triple = Multiplier(3)
    triple(1)
    Doubler()(2)
    run(triple, 4)


main()
