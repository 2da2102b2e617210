"""The release of mantispy (pyproject.toml reads it from here)."""

VERSION = "0.1.0"
