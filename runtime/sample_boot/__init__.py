"""The bootstrap folder ``mantispy record`` puts first on ``PYTHONPATH``: its ``sitecustomize`` starts the
stack sampler (:mod:`mantispy.runtime.sampler`) in every Python process of the recorded program."""
