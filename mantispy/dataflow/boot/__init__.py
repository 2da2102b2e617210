"""The boot folder ``mantispy dataflow record`` puts first on a job's ``PYTHONPATH`` (its ``sitecustomize``).

Not part of ``mantispy.runtime``: it runs only in Dask jobs and uses the job's own ``dask`` and ``distributed``.
"""
