"""mantispy: predict a Python program's cost on an input before running it (the Mantis system for Python)."""

__version__ = "0.1.0"
