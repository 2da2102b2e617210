"""A package re-exporting names of its submodules."""
from .geometry import area_of, perimeter
from .square import Square

__all__ = ["Square", "area_of", "perimeter"]
