"""Run a program unchanged under the bytecode backend: its plan, its boot folder, its environment."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from mantispy.core.launch import program_env
from mantispy.runtime.monitor import ENV_PLAN

from .plan import build_plan, locate_packages, plan_summary, write_plan


def boot_dir() -> Path:
    """The folder whose ``sitecustomize`` starts the backend in every Python process of the program."""
    from mantispy.runtime import monitor_boot

    return Path(monitor_boot.__file__).resolve().parent


class MonitoredLaunch:
    """The environment of one monitored run; :meth:`close` removes its temporary plan."""

    def __init__(self, src: Path, features_out: Path | None, python: str | None = None,
                 exclude: list[str] | None = None, include: list[str] | None = None) -> None:
        packages = locate_packages(include or [], python)  # PlanError before anything is made
        self._scratch = tempfile.TemporaryDirectory(prefix="mantis-monitor-")
        scratch = Path(self._scratch.name)
        self.plan = build_plan(src, exclude, packages)
        self.summary = plan_summary(self.plan)
        plan_path = scratch / "plan.json"
        write_plan(self.plan, plan_path)
        extra: list[Path] = []
        if python is not None:  # an interpreter without mantispy: a standalone copy of the run-time
            from mantispy.standalone_runtime import standalone_runtime_dir

            extra.append(standalone_runtime_dir(scratch / "pyroot"))
        root = Path(self.plan["root"])
        env = program_env(root, features_out, extra)
        env["PYTHONPATH"] = os.pathsep.join([str(boot_dir()), env["PYTHONPATH"]])
        env[ENV_PLAN] = str(plan_path)
        self.env = env

    def close(self) -> None:
        """Remove the plan and the standalone run-time."""
        self._scratch.cleanup()

    def __enter__(self) -> MonitoredLaunch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
