"""The boot folder ``mantispy dataflow record`` puts first on a job's ``PYTHONPATH`` (its ``sitecustomize``)."""
