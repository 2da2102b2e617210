"""Run a program unchanged under the bytecode backend: its plan, its boot folder, its environment."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from mantispy.core.launch import program_env
from mantispy.runtime.monitor import PLAN_NAME

from .plan import build_plan, locate_packages, plan_summary, write_plan

KEY_NAME = "plan-key.txt"
"""In a boot folder made by :func:`make_boot` with a key: the key its plan was made for."""


def _sitecustomize() -> Path:
    from mantispy.runtime import monitor_boot

    return Path(monitor_boot.__file__).resolve().parent / "sitecustomize.py"


def make_boot(folder: Path, plan: dict[str, Any], key: str | None = None) -> Path:
    """A boot folder: the backend's ``sitecustomize`` (which starts it in every Python process of the
    program) beside the plan it reads, and the plan's ``key`` (:func:`~.plan.plan_key`) when given.
    Returns ``folder``, the PYTHONPATH entry to put first."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    (folder / KEY_NAME).unlink(missing_ok=True)  # no key beside a half-written plan
    shutil.copyfile(_sitecustomize(), folder / "sitecustomize.py")
    write_plan(plan, folder / PLAN_NAME)
    if key is not None:
        (folder / KEY_NAME).write_text(key, encoding="utf-8")
    return folder


def boot_is_current(folder: Path, key: str) -> bool:
    """Whether ``folder`` holds a whole boot folder made for ``key`` by this mantispy's run-time."""
    try:
        return ((folder / KEY_NAME).read_text(encoding="utf-8") == key and (folder / PLAN_NAME).is_file()
                and (folder / "sitecustomize.py").read_bytes() == _sitecustomize().read_bytes())
    except OSError:
        return False


class MonitoredLaunch:
    """The environment of one monitored run; :meth:`close` removes its temporary plan."""

    def __init__(self, src: Path, features_out: Path | None, python: str | None = None,
                 exclude: list[str] | None = None, include: list[str] | None = None) -> None:
        packages = locate_packages(include or [], python)  # PlanError before anything is made
        self._scratch = tempfile.TemporaryDirectory(prefix="mantis-monitor-")
        scratch = Path(self._scratch.name)
        self.plan = build_plan(src, exclude, packages)
        self.summary = plan_summary(self.plan)
        boot = make_boot(scratch / "boot", self.plan)
        extra: list[Path] = []
        if python is not None:  # an interpreter without mantispy: a standalone copy of the run-time
            from mantispy.standalone_runtime import standalone_runtime_dir

            extra.append(standalone_runtime_dir(scratch / "pyroot"))
        root = Path(self.plan["root"])
        env = program_env(root, features_out, extra)
        env["PYTHONPATH"] = os.pathsep.join([str(boot), env["PYTHONPATH"]])
        self.env = env

    def close(self) -> None:
        """Remove the plan and the standalone run-time."""
        self._scratch.cleanup()

    def __enter__(self) -> MonitoredLaunch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
