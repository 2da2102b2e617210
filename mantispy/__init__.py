"""mantispy: predict a Python program's cost on an input before running it (the Mantis system for Python)."""

from mantispy.core.version import VERSION as __version__

__all__ = ["__version__"]
