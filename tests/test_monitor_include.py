"""Campaigns that count installed packages (issue 24): ``[instrument] backend = "monitor"`` with
``include = [...]``. The packages are counted where the interpreter imports them from, their features
named as in a copy at the top of the source; ``mantispy profile`` stores what the source backend stores
for such a copy, and ``mantispy build`` slices the package's features and ships their evaluators.

The package here, ``tallylib``, lives in a folder on PYTHONPATH outside the program's source (as a
site-packages package would): it reads the input's rows (a cheap loop) and then crunches every number
(the cost), so the only cheap feature that explains the cost is in the package."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.helpers import MANTISPY

LIBRARY = {
    "tallylib/__init__.py": "from .core import crunch, read\n",
    "tallylib/core.py": '''\
        """Read rows of numbers, then crunch each number."""
        import re

        NUMBER = re.compile(r"[0-9]+")


        def read(path):
            rows = []
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    rows.append([int(x) for x in NUMBER.findall(line)])
            return rows


        def crunch(rows):
            total = 0
            for row in rows:
                for x in row:
                    total += sum(range(x * 3000)) % 7
            return total
        ''',
}

PROGRAM = '''\
    import sys

    import tallylib

    rows = tallylib.read(sys.argv[1])
    print(tallylib.crunch(rows))
    '''

INPUTS = '''\
    import random
    from pathlib import Path


    def generate(count=16, seed=3):
        rng = random.Random(seed)
        folder = Path(__file__).resolve().parent / "data"
        folder.mkdir(exist_ok=True)
        for n in range(count):
            lines = rng.randint(20, 160)
            text = "".join(" ".join(str(rng.randint(20, 40)) for _ in range(5)) + "\\n" for _ in range(lines))
            path = folder / f"t{n:02d}.txt"
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
            yield {"id": f"t{n:02d}", "argv": [f"data/t{n:02d}.txt"], "files": [f"data/t{n:02d}.txt"]}
    '''

CAMPAIGN = '''\
    name = "tally"
    source = "app"
    entry = "job.py"
    timeout = 120
    [env]
    PYTHONHASHSEED = "0"
    [instrument]
    backend = "monitor"
    include = ["tallylib"]
    [inputs]
    generator = "inputs.py:generate"
    generator_args = {{ count = {count}, seed = 3 }}
    '''


def make_project(root: Path, count: int = 16) -> dict[str, str]:
    """The program in ``root/app``, its package in ``root/site`` (not in the source), the campaign; the
    environment that makes the package importable."""
    for rel, text in LIBRARY.items():
        path = root / "site" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "app").mkdir(parents=True)
    (root / "app" / "job.py").write_text(textwrap.dedent(PROGRAM))
    (root / "inputs.py").write_text(textwrap.dedent(INPUTS))
    (root / "campaign.toml").write_text(textwrap.dedent(CAMPAIGN.format(count=count)))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "site"), *filter(None, [os.environ.get("PYTHONPATH")])])}


def mantispy(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([*MANTISPY, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def stored_counts(store: Path, name: str) -> dict[str, dict[str, float]]:
    from mantispy.store import RunStore

    with RunStore(store) as runs:
        campaign = runs.campaign(name)
        by_run = {r["run_id"]: r["input_id"] for r in runs.runs(campaign, "instrumented")}
        counts: dict[str, dict[str, float]] = {}
        for run_id, feature, value in runs.features_of(campaign):
            counts.setdefault(by_run[run_id], {})[feature] = value
    return counts


def test_an_included_package_is_counted_as_a_copy_of_it_in_the_source_would_be(tmp_path):
    """The monitored campaign with ``include`` stores, run for run, the counters the source backend
    stores for the same campaign with the package copied into the program's folder; the package's own
    folder and the program's folder gain nothing."""
    monitored = tmp_path / "monitored"
    env = make_project(monitored, count=4)
    copied = tmp_path / "copied"
    make_project(copied, count=4)
    shutil.copytree(copied / "site" / "tallylib", copied / "app" / "tallylib")
    spec = copied / "campaign.toml"
    spec.write_text(spec.read_text().replace('backend = "monitor"\ninclude = ["tallylib"]',
                                             'only = ["loops", "branches", "calls", "exceptions"]'))
    plain = {**os.environ}
    for root, environment in ((monitored, env), (copied, plain)):
        proc = mantispy(["profile", "campaign.toml", "--store", "runs.db", "-q"], root, environment)
        assert proc.returncode == 0, proc.stderr
    counts = stored_counts(monitored / "runs.db", "tally")
    assert len(counts) == 4 and counts == stored_counts(copied / "runs.db", "tally")
    assert all(counts[i]["tallylib/core.py:read:loop:1"] >= 20 for i in counts)
    assert sorted(p.name for p in (monitored / "site" / "tallylib").iterdir()) in (
        ["__init__.py", "core.py"], ["__init__.py", "__pycache__", "core.py"])
    assert sorted(p.name for p in (monitored / "app").iterdir()) in (["job.py"], ["__pycache__", "job.py"])


def test_a_build_slices_an_included_packages_feature_and_ships_its_evaluator(tmp_path):
    """``mantispy build`` on the monitored campaign: the model's cheap feature is the package's row loop,
    its evaluator (a slice of the package's copy in the campaign's view) agrees with the monitored runs
    on held-out inputs, and the predictor package predicts with it."""
    env = make_project(tmp_path)
    out = tmp_path / "predictor"
    proc = mantispy(["build", "campaign.toml", "-o", str(out), "--work", str(tmp_path / "work"), "--train-fraction",
                     "0.5", "--metric", "cpu", "--repeats", "3", "--static", "--jobs", "2", "--max-cost", "0.3",
                     "--no-input-features", "--no-content-features"], tmp_path, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads((out / "build.json").read_text())
    used = {f["id"] for f in record["features"]}
    assert any(f.startswith("tallylib/core.py:read:") for f in used), (used, proc.stdout[-3000:])
    fidelity = record["evaluator"]["fidelity"]
    assert fidelity["inputs"] > 0 and fidelity["mismatch_count"] == 0 and fidelity["agreed"] > 0, fidelity
    assert any(p.parts[-2:] == ("tallylib", "core.py") for p in (out / "evaluator").rglob("core.py"))
    predicted = mantispy(["predict", str(out), "--json", "--", "data/t00.txt"], tmp_path, env, timeout=300)
    assert predicted.returncode == 0, predicted.stderr
    assert json.loads(predicted.stdout)["cpu_s"]["estimate"] > 0


@pytest.mark.parametrize("case", ["source backend", "missing package", "package in the source", "not a name"])
def test_bad_includes_are_refused_in_one_line(tmp_path, case):
    """An include the campaign cannot honour: one line naming the spec and the field, exit 2, nothing run."""
    env = make_project(tmp_path, count=4)
    spec = tmp_path / "campaign.toml"
    text = spec.read_text()
    if case == "source backend":
        text = text.replace('backend = "monitor"', 'backend = "source"')
    elif case == "missing package":
        text = text.replace('include = ["tallylib"]', 'include = ["no_such_package_here"]')
    elif case == "package in the source":
        shutil.copytree(tmp_path / "site" / "tallylib", tmp_path / "app" / "tallylib")
    else:
        text = text.replace('include = ["tallylib"]', 'include = ["tally.lib"]')
    spec.write_text(text)
    proc = mantispy(["profile", "campaign.toml", "--store", "runs.db", "-q"], tmp_path, env, timeout=300)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "campaign.toml" in lines[0] and "include" in lines[0] and "Traceback" not in proc.stderr
    if (tmp_path / "runs.db").exists():
        from mantispy.store import RunStore

        with RunStore(tmp_path / "runs.db") as runs:
            assert runs.campaign("tally") is None


def test_the_view_follows_the_package_it_copies(tmp_path):
    """The campaign's view is made once, reused while nothing changed, and made again (with a new source
    hash for the store) when a file of the included package changes."""
    from mantispy.campaign import load_spec
    from mantispy.monitoring.view import program_view
    from mantispy.profiler import instrument_tree_hash

    env = make_project(tmp_path, count=4)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # the locator's interpreter finds the package as runs do
    try:
        spec = load_spec(tmp_path / "campaign.toml")
        view = program_view(spec)
        assert (view / "job.py").is_file() and (view / "tallylib" / "core.py").is_file()
        before = instrument_tree_hash(view)
        stamp = (view / ".mantis-view.json").stat().st_mtime_ns
        assert program_view(spec) == view and (view / ".mantis-view.json").stat().st_mtime_ns == stamp
        core = tmp_path / "site" / "tallylib" / "core.py"
        core.write_text(core.read_text().replace("% 7", "% 11"))
        assert "% 11" in (program_view(spec) / "tallylib" / "core.py").read_text()
        assert instrument_tree_hash(view) != before
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def test_the_content_probe_finds_an_included_packages_patterns(tmp_path, monkeypatch):
    """The build's content stage runs the program under the regex probe: a pattern the included package
    compiles is the program's own, named as in the view (``tallylib/core.py``), not left out as another
    package's."""
    from mantispy.campaign import load_spec
    from mantispy.content.discover import discover

    env = make_project(tmp_path, count=4)
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    spec = load_spec(tmp_path / "campaign.toml")
    found = discover(spec, [r.id for r in spec.inputs][:2])
    assert [(c.file, c.pattern, c.qualname) for c in found] == [("tallylib/core.py", "[0-9]+", "<module>")]


def test_the_plan_is_made_again_only_when_what_it_reads_changed(tmp_path, monkeypatch):
    """Planning every file of an included package (instrumenting it to place its features) took 70 s per
    profile of a campaign including Pygments, runs reused or not: the boot folder keeps its plan's key, and
    the plan is made again when a file of the program or of a package, or the exclusions, change."""
    from mantispy.campaign import load_spec
    from mantispy.monitoring.launch import KEY_NAME
    from mantispy.profiler import monitor_boot_path, prepare_build

    env = make_project(tmp_path, count=2)
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    said: list[str] = []
    spec = load_spec(tmp_path / "campaign.toml")
    prepare_build(spec, said.append)
    boot = monitor_boot_path(spec)
    plan = (boot / "plan.json").read_text()
    assert (boot / KEY_NAME).is_file() and not any("reusing the bytecode backend's plan" in s for s in said)
    prepare_build(load_spec(tmp_path / "campaign.toml"), said.append)
    assert said[-1] == f"reusing the bytecode backend's plan in {boot}" and (boot / "plan.json").read_text() == plan
    core = tmp_path / "site" / "tallylib" / "core.py"
    core.write_text(core.read_text() + "\n\ndef again(rows):\n    for row in rows:\n        print(row)\n")
    said.clear()
    prepare_build(load_spec(tmp_path / "campaign.toml"), said.append)
    assert not any("reusing the bytecode backend's plan" in s for s in said)
    assert "tallylib/core.py:again:loop:1" in (boot / "plan.json").read_text()
    (boot / "plan.json").unlink()  # a boot folder without its plan is made again
    prepare_build(load_spec(tmp_path / "campaign.toml"), said.append)
    assert (boot / "plan.json").is_file()


def test_observed_calls_cover_the_included_package_under_its_name_in_the_view(tmp_path):
    """``mantispy profile --observe-calls`` on the monitored campaign records the calls made in and to the
    included package (installed outside the source), its files named as in the campaign's view
    (``tallylib/core.py``) with the sha256 of the installed files, which the view's copies share: hybrid
    slicing of the package's features has observations to work with."""
    import hashlib

    env = make_project(tmp_path, count=3)
    proc = mantispy(["profile", "campaign.toml", "--store", "runs.db", "-q", "--observe-calls"], tmp_path, env,
                    timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "runs.db.tally.calls.json").read_text())
    core = hashlib.sha256((tmp_path / "site" / "tallylib" / "core.py").read_bytes()).hexdigest()
    assert data["files"].get("tallylib/core.py") == core, data["files"]
    callees = {(call[5], call[6]) for call in data["calls"]}
    assert {("tallylib/core.py", "read"), ("tallylib/core.py", "crunch")} <= callees, callees
    assert any(s[0] == "tallylib/core.py" for s in data["reached"])  # call sites inside the package ran
    assert not any(f.startswith(("site/", "/")) for f in data["files"])
