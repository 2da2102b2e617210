"""Dataflow jobs on Dask (Tian et al.): record a job's task graph and timings through a scheduler plugin,
show its operations and critical path, and predict its completion time on other cluster configurations.

Modules, one job each: ``types`` (the profile artefact and its reader), ``plugin`` (what runs inside the
scheduler), ``record`` (starting the cluster and the job), ``store`` (profiles in SQLite), ``operations``
(the operation DAG), ``transfer_model`` (what fetches between workers cost), ``whatif`` (the replay),
``code_features`` and ``classify`` (resource classes from code), ``render_text`` (text and JSON views),
``render_html`` (the page); ``boot/`` is the job's boot folder.
"""
