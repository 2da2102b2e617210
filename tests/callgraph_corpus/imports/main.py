"""Imports across modules and packages: absolute, relative, aliases, package re-exports."""
import helpers
import shapes.geometry
import shapes.geometry as geo
from shapes import Square, area_of
from shapes.geometry import perimeter as perim
from tools.text import shout


def main():
    helpers.greet("x")
    shapes.geometry.perimeter(2)
    geo.perimeter(3)
    perim(4)
    area_of(Square(2))
    shout("hi")


main()
