"""The package list, computed so that no subpackage can be forgotten.

Everything else lives in pyproject.toml. Its [tool.setuptools] package-dir maps the top-level folders
(mantispy/, instrument/, slicer/, runtime/) to mantispy, mantispy.instrument, ...; setuptools'
packages.find cannot follow such a remapping of sibling folders, so this file walks each mapped folder
for __init__.py and names every package it finds under its mapped import name.
"""

import tomllib
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent


def packages() -> list[str]:
    config = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    found = []
    for name, folder in config["tool"]["setuptools"]["package-dir"].items():
        root = HERE / folder
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root).parts
            found.append(".".join((name, *rel)))
    return sorted(set(found))


setup(packages=packages())
