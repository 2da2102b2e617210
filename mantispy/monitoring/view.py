"""The program as a campaign on the bytecode backend counts it: its source plus the installed packages
it includes (``[instrument] include``), in one folder.

The bytecode backend names an included package's features as if the package were copied to the top of
the program's folder (``sqlparse/sql.py:...``). The stages that read source rather than run it (the
build's manifest, the slicer and its evaluators) need that folder to exist, so :func:`program_view`
makes it: a copy of the program's ``.py`` files with each included package beside them, in mantispy's
own work area (``WORKDIR/.mantis/views/NAME``), refreshed whenever a file of either changes (an upgraded
package changes the campaign's source hash, as an edit of the program does). The program's and the
packages' own folders are only read.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from mantispy.campaign import CampaignSpec, SpecError
from mantispy.instrument.tree import replace_dir, walk_sources

from .plan import PlanError, locate_packages

STAMP_NAME = ".mantis-view.json"
"""The view's record of what it was copied from: {"digest": ..., "packages": {name: location}}."""


def included_packages(spec: CampaignSpec) -> list[str]:
    """The installed packages the campaign counts beside its source (``[instrument] include``)."""
    return list(spec.instrument.get("include", []))


def package_locations(spec: CampaignSpec) -> dict[str, Path]:
    """Where the campaign's interpreter imports each included package from; :class:`SpecError` (naming
    the spec and the field) when one cannot be found."""
    try:
        return locate_packages(included_packages(spec), sys.executable, option="[instrument] include")
    except PlanError as exc:
        raise SpecError(f"{spec.path}: {exc}") from None


def view_path(spec: CampaignSpec) -> Path:
    """Where the campaign's view lives (in mantispy's work area, beside its builds)."""
    return spec.workdir / ".mantis" / "views" / spec.name


def program_view(spec: CampaignSpec) -> Path:
    """The folder to read the program's source from: the campaign's source when it includes no package;
    otherwise its view (made or refreshed here). A single-file source is copied alone."""
    packages = package_locations(spec)
    if not packages:
        return spec.source
    members = _members(spec, packages)
    digest = hashlib.sha256()
    for rel, path in members:
        digest.update(f"{rel}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    stamp = {"digest": digest.hexdigest(), "packages": {name: str(where) for name, where in sorted(packages.items())}}
    view = view_path(spec)
    try:
        if json.loads((view / STAMP_NAME).read_text()) == stamp:
            return view
    except (OSError, ValueError):
        pass
    view.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{view.name}.", dir=view.parent))
    try:
        for rel, path in members:
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        (staging / STAMP_NAME).write_text(json.dumps(stamp))
        replace_dir(staging, view)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return view


def _members(spec: CampaignSpec, packages: dict[str, Path]) -> list[tuple[str, Path]]:
    """(path in the view, file to copy) for every ``.py`` file of the program and of each package; a
    package the program's folder already holds is refused (two files would claim one feature id)."""
    root = spec.source_root
    own = list(walk_sources(spec.source)) if spec.source.is_dir() else [spec.source]
    members = [(path.relative_to(root).as_posix(), path) for path in own if path.suffix == ".py"]
    taken = {rel.split("/", 1)[0] for rel, _ in members}
    for name, location in sorted(packages.items()):
        location = location.resolve()
        top = location.name
        if top in taken or f"{name}.py" in taken:
            raise SpecError(f"{spec.path}: [instrument] include {name}: the program's folder {root} already has "
                            f"{top}; count that copy (drop the include) or remove it")
        files = list(walk_sources(location)) if location.is_dir() else [location]
        members.extend((path.relative_to(location.parent).as_posix(), path) for path in files if path.suffix == ".py")
    return members
