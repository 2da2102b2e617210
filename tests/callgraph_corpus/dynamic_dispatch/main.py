"""Dynamic dispatch over a class hierarchy: overridden methods called through base-typed variables.

report() has no caller, so its parameter stands for its declared type: a Shape or any subclass, and
shape.area() reaches every override (Shape.area included). largest() and main() get exactly the
instances that flow into them.
"""


class Shape:
    def area(self):
        raise NotImplementedError

    def describe(self):
        return f"{self.area():.1f}"


class Circle(Shape):
    def __init__(self, r):
        self.r = r

    def area(self):
        return 3.14 * self.r ** 2


class Square(Shape):
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side ** 2


class Unit(Square):
    def __init__(self):
        super().__init__(1)


def largest(shapes):
    return max(s.area() for s in shapes)


def report(shape: Shape) -> str:
    return shape.describe() + str(shape.area())


def pick(kind) -> Shape:
    if kind == "circle":
        return Circle(1.0)
    return Square(2.0)


def main(kind):
    largest([Circle(1), Unit()])
    s: Shape = pick(kind)
    s.area()


main(input())
