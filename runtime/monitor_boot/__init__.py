"""Boot folder of the bytecode backend: its ``sitecustomize`` starts :mod:`mantispy.runtime.monitor`."""
