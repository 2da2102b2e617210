from . import units


def perimeter(side):
    return units.scale(4 * side)


def area_of(shape):
    return shape.area()
