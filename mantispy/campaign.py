"""Campaign specs: what program to profile, on which inputs, how often, collecting what.

A spec is a TOML file; relative paths in it are relative to the file's folder::

    name = "minisearch"                 # campaign name in the store (default: the file's stem)
    source = "examples/minisearch"      # the program's source folder (or one .py file)
    entry = "search.py"                 # a script in source, "-m package.module", or "module:function"
    workdir = "."                       # where runs start (default: the spec's folder)
    repeats = 1                         # runs per input
    timeout = 60                        # seconds per run; a run past it is killed and stored as timeout
    metrics = ["wall_s", "cpu_s", "max_rss_kb"]   # default: all the profiler measures
    calibration_runs = 3                # inputs also run uninstrumented, to measure the overhead;
                                        #   "all": every run also runs uninstrumented, so models can
                                        #   learn the original program's metrics (mantispy build does)
    original_repeats = 3                # with "all": uninstrumented runs per input (the median is modelled)
    order_seed = 0                      # runs are interleaved and shuffled with this seed
    rerun_threshold = 0.25              # an input whose repeats differ by more ((max - min) / median of
    rerun_repeats = 2                   #   CPU time) runs this many more times, once
    build = ".mantis/builds/minisearch" # where the instrumented build goes (default under workdir)

    [env]                               # extra environment for every run
    PYTHONHASHSEED = "0"

    [instrument]                        # options of mantispy instrument
    k = 5
    only = ["loops", "branches", "calls", "exceptions", "values"]
    exclude = []
    backend = "source"                  # "monitor": run the program unchanged and count its loops,
                                        #   branches, calls and handlers from its bytecode (no values)
    include = []                        # with "monitor": installed packages counted too, their features
                                        #   named as if copied to the top of source ("sqlparse/sql.py:...")
    derive_arms = true                  # else arms whose count follows from other counts get no probe

    [inputs]
    generator = "inputs.py:generate"    # a function returning/yielding input records, called with
    generator_args = { count = 300 }    #   these keyword arguments; or an explicit list:
    [[inputs.list]]
    id = "small"                        # stable id (required, unique)
    argv = ["--docs", "100"]            # for script / -m entries
    files = ["queries/q1.txt"]          # input files the run reads (sizes are recorded)
    [[inputs.list]]
    id = "k3"
    kwargs = { n = 3 }                  # for module:function entries

An input record from a generator has the same keys as a list item.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mantispy.runtime.descriptors import argv_files

KNOWN_METRICS = ("wall_s", "cpu_s", "max_rss_kb")
CAMPAIGN_NAME = re.compile(r"[^./\\\x00-\x1f][^/\\\x00-\x1f]{0,127}")
"""What a campaign name may be: it names the store's campaign and the build's work folder."""
MAX_TIMEOUT_S = 7 * 24 * 3600.0
"""The longest timeout a run may have."""

TOP_KEYS = {"name", "source", "entry", "workdir", "repeats", "timeout", "metrics", "calibration_runs", "build",
            "env", "instrument", "inputs", "original_repeats", "order_seed", "rerun_threshold", "rerun_repeats"}
INSTRUMENT_KEYS = {"k", "only", "exclude", "backend", "include", "derive_arms"}
BACKENDS = ("source", "monitor")
INPUTS_KEYS = {"generator", "generator_args", "list"}
RECORD_KEYS = {"id", "argv", "kwargs", "files"}


class SpecError(Exception):
    """A spec that cannot be used; the message names the file and what to change."""


@dataclass
class Entry:
    """How a run starts the program."""

    kind: str  # "script", "module", "callable"
    target: str  # script path relative to source, module name, or "module:function"

    def invocation(self, argv: list[str]) -> list[str]:
        """The program invocation (what follows the interpreter) for script and module entries."""
        if self.kind == "script":
            return [self.target, *argv]
        if self.kind == "module":
            return ["-m", self.target, *argv]
        raise ValueError("callable entries take kwargs, not argv")


@dataclass
class InputRecord:
    """One sample input."""

    id: str
    argv: list[str] = field(default_factory=list)
    kwargs: dict[str, Any] | None = None
    files: list[str] = field(default_factory=list)

    def descriptor(self, workdir: Path) -> dict[str, Any]:
        """What the store keeps about the input (the black-box baseline's view): its arguments and the sizes
        of its input files, the listed ``files`` or else, as a predictor finds them, the arguments that name
        existing files (relative to ``workdir``)."""
        sizes = {}
        for name in self.files or argv_files(self.argv, str(workdir)):
            path = (workdir / name) if not Path(name).is_absolute() else Path(name)
            sizes[name] = path.stat().st_size
        data: dict[str, Any] = {"argv": self.argv, "file_sizes": sizes}
        if self.kwargs is not None:
            data["kwargs"] = self.kwargs
        return data


@dataclass
class CampaignSpec:
    """A parsed, validated spec."""

    path: Path
    name: str
    source: Path
    entry: Entry
    workdir: Path
    repeats: int
    timeout: float
    metrics: list[str]
    calibration_runs: int
    build: Path
    env: dict[str, str]
    instrument: dict[str, Any]
    inputs: list[InputRecord]
    raw: dict[str, Any]
    original_repeats: int = 3
    order_seed: int = 0
    rerun_threshold: float = 0.25
    rerun_repeats: int = 2

    @property
    def source_root(self) -> Path:
        """The folder imports resolve against."""
        return self.source if self.source.is_dir() else self.source.parent


def _fail(path: Path, message: str) -> SpecError:
    return SpecError(f"{path}: {message}")


def _check_include(path: Path, instrument: dict[str, Any]) -> None:
    """``[instrument] include``: top-level names of installed packages, counted by the bytecode backend only."""
    if "include" not in instrument:
        return
    include = instrument["include"]
    if not isinstance(include, list) or not all(isinstance(n, str) and n.isidentifier() for n in include):
        raise _fail(path, f"[instrument] include must be a list of top-level package names like [\"sqlparse\"], "
                          f"not {include!r}")
    if include and instrument.get("backend", "source") != "monitor":
        raise _fail(path, "[instrument] include counts installed packages where they are, which only the bytecode "
                          "backend can: add backend = \"monitor\", or copy the packages into the source folder")


def _check_keys(path: Path, table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _fail(path, f"unknown key {unknown[0]!r} in {where}; allowed: {', '.join(sorted(allowed))}")


def parse_entry(path: Path, text: str) -> Entry:
    """``script.py`` | ``-m module`` | ``module:function``."""
    text = text.strip()
    if text.startswith("-m "):
        return Entry("module", text[3:].strip())
    if ":" in text and not text.endswith(".py"):
        module, _, function = text.partition(":")
        if not module or not function.isidentifier():
            raise _fail(path, f"entry {text!r}: write module:function, e.g. 'pkg.tasks:run'")
        return Entry("callable", text)
    if not text:
        raise _fail(path, "entry is empty; give a script, '-m module' or 'module:function'")
    return Entry("script", text)


def check_entry(path: Path, entry: Entry, root: Path) -> None:
    """The entry exists in the source (checked statically: nothing of the target is imported)."""
    if entry.kind == "script":
        if not (root / entry.target).is_file():
            raise _fail(path, f"entry script {entry.target!r} not found in {root}; fix 'entry' or 'source'")
        return
    module = entry.target.partition(":")[0]
    base = root.joinpath(*module.split("."))
    candidates = [base.with_suffix(".py"), base / "__init__.py"]
    if entry.kind == "module":
        candidates = [base.with_suffix(".py"), base / "__main__.py"]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise _fail(path, f"entry module {module!r} not found in {root} (looked for {', '.join(c.name for c in candidates)})")
    if entry.kind == "callable":
        function = entry.target.partition(":")[2]
        tree = ast.parse(found.read_text(encoding="utf-8"), str(found))
        names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        names |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
        if function not in names:
            raise _fail(path, f"entry function {function!r} is not defined at the top level of {found}")


def _record(path: Path, raw: Any, entry: Entry, where: str) -> InputRecord:
    if not isinstance(raw, dict):
        raise _fail(path, f"{where}: an input record is a table with id and argv/kwargs, got {type(raw).__name__}")
    _check_keys(path, raw, RECORD_KEYS, where)
    if "id" not in raw or not str(raw["id"]).strip():
        raise _fail(path, f"{where}: input record without an id; every input needs a stable, unique id")
    argv, kwargs = raw.get("argv", []), raw.get("kwargs")
    if entry.kind == "callable" and argv:
        raise _fail(path, f"{where}: entry {entry.target} is a function: give kwargs, not argv")
    if entry.kind != "callable" and kwargs is not None:
        raise _fail(path, f"{where}: entry {entry.target} takes a command line: give argv, not kwargs")
    if not isinstance(argv, list) or not all(isinstance(a, (str, int, float)) for a in argv):
        raise _fail(path, f"{where}: argv must be a list of strings")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise _fail(path, f"{where}: kwargs must be a table")
    files = raw.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise _fail(path, f"{where}: files must be a list of paths")
    return InputRecord(str(raw["id"]), [str(a) for a in argv], kwargs, files)


def _generate(path: Path, spec_dir: Path, generator: str, args: dict[str, Any]) -> Iterable[Any]:
    file_part, _, function = generator.partition(":")
    file = (spec_dir / file_part).resolve()
    if not file.is_file() or not function:
        raise _fail(path, f"generator {generator!r}: write FILE.py:function with FILE relative to the spec")
    module_name = f"_mantis_inputs_{abs(hash(str(file)))}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.parent))
    before = set(sys.modules)
    try:
        spec.loader.exec_module(module)
        fn = getattr(module, function, None)
        if fn is None:
            raise _fail(path, f"generator {generator!r}: {file.name} has no function {function!r}")
        return list(fn(**args))
    except SpecError:
        raise
    except Exception as exc:
        raise _fail(path, f"generator {generator!r} raised {type(exc).__name__}: {exc}") from None
    finally:
        sys.path.remove(str(file.parent))
        # Helper modules the generator imported from its folder are forgotten: another spec's generator,
        # in the same process, may import a module of the same name from its own folder.
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if origin and Path(origin).resolve().is_relative_to(file.parent):
                del sys.modules[name]


CALIBRATE_ALL = -1
"""``calibration_runs = "all"``: every (input, repeat) also runs uninstrumented."""


def _calibration_runs(path: Path, raw: Any) -> int:
    if raw == "all":
        return CALIBRATE_ALL
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise _fail(path, f"calibration_runs must be a number >= 0 or \"all\", not {raw!r}")
    return raw


def _integer(path: Path, raw: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(path, f"{key} must be a whole number from {low} to {high}, not {value!r}")
    return value


def _fraction(path: Path, raw: dict[str, Any], key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) < 100:
        raise _fail(path, f"{key} must be a positive number below 100 (a ratio such as 0.25), not {value!r}")
    return float(value)


def load_spec(path: Path | str) -> CampaignSpec:
    """Read, validate and expand a spec file (runs the input generator)."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec ({exc.strerror}); check the path") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 (byte {exc.start}: {exc.reason}); TOML files are UTF-8, save it as "
                        "UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML ({exc}); fix the syntax") from None
    _check_keys(path, raw, TOP_KEYS, "the spec")
    spec_dir = path.resolve().parent
    for required in ("source", "entry", "inputs"):
        if required not in raw:
            raise _fail(path, f"missing {required!r}; see the worked example in the README")
    for key in ("source", "entry", "workdir", "build"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key] or "\x00" in raw[key]):
            raise _fail(path, f"{key} must be a path or entry as a non-empty string, not {raw[key]!r}")
    source = (spec_dir / raw["source"]).resolve()
    if not source.exists():
        raise _fail(path, f"source {raw['source']!r} does not exist (relative to {spec_dir})")
    entry = parse_entry(path, str(raw["entry"]))
    root = source if source.is_dir() else source.parent
    check_entry(path, entry, root)
    workdir = (spec_dir / raw.get("workdir", ".")).resolve()
    if not workdir.is_dir():
        raise _fail(path, f"workdir {raw.get('workdir')!r} is not a folder")
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not CAMPAIGN_NAME.fullmatch(name):
        raise _fail(path, f"name {name!r} names a folder of the work area: give 1-128 characters without '/', '\\' "
                          "or control characters, not starting with '.'")
    metrics = raw.get("metrics", KNOWN_METRICS)
    if not isinstance(metrics, (list, tuple)) or not all(isinstance(m, str) for m in metrics):
        raise _fail(path, f"metrics must be a list of names like [\"wall_s\", \"cpu_s\"], not {metrics!r}")
    metrics = list(metrics)
    bad = [m for m in metrics if m not in KNOWN_METRICS]
    if bad:
        raise _fail(path, f"unknown metric {bad[0]!r}; known: {', '.join(KNOWN_METRICS)}")
    instrument = raw.get("instrument", {})
    if not isinstance(instrument, dict):
        raise _fail(path, f"[instrument] must be a table, not {instrument!r}")
    instrument = dict(instrument)
    _check_keys(path, instrument, INSTRUMENT_KEYS, "[instrument]")
    if instrument.get("backend", "source") not in BACKENDS:
        raise _fail(path, f"[instrument] backend must be \"source\" or \"monitor\", not {instrument['backend']!r}")
    _check_include(path, instrument)
    if not isinstance(instrument.get("derive_arms", True), bool):
        raise _fail(path, f"[instrument] derive_arms must be true or false, not {instrument['derive_arms']!r}")
    env = raw.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                            for v in env.values()):
        raise _fail(path, "[env] must be a table of NAME = \"value\"")
    inputs_table = raw["inputs"]
    if not isinstance(inputs_table, dict):
        raise _fail(path, "[inputs] must be a table with 'generator' or 'list'")
    _check_keys(path, inputs_table, INPUTS_KEYS, "[inputs]")
    records: list[InputRecord] = []
    listed = inputs_table.get("list", [])
    if not isinstance(listed, list):
        raise _fail(path, f"inputs.list must be a list of tables ([[inputs.list]]), not {listed!r}")
    for n, item in enumerate(listed):
        records.append(_record(path, item, entry, f"inputs.list[{n}]"))
    if "generator" in inputs_table:
        generator_args = inputs_table.get("generator_args", {})
        if not isinstance(inputs_table["generator"], str) or not isinstance(generator_args, dict):
            raise _fail(path, "inputs.generator must be \"FILE.py:function\" and inputs.generator_args a table")
        generated = _generate(path, spec_dir, inputs_table["generator"], dict(generator_args))
        records += [_record(path, item, entry, f"generated input {n}") for n, item in enumerate(generated)]
    if not records:
        raise _fail(path, "no inputs: give [[inputs.list]] items or an inputs generator")
    seen: set[str] = set()
    for record in records:
        if record.id in seen:
            raise _fail(path, f"input id {record.id!r} appears twice; ids must be unique")
        seen.add(record.id)
        for file_name in record.files:
            try:
                with open(workdir / file_name, "rb"):
                    pass
            except OSError as exc:
                raise _fail(path, f"input {record.id!r}: cannot read file {file_name!r} ({exc.strerror}) in {workdir}") from None
    repeats, timeout = raw.get("repeats", 1), raw.get("timeout", 600)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 1000:
        raise _fail(path, f"repeats must be a whole number from 1 to 1000, not {repeats!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise _fail(path, f"timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (a week), "
                          f"not {timeout!r}")
    timeout = float(timeout)
    return CampaignSpec(
        path=path.resolve(),
        name=name,
        source=source,
        entry=entry,
        workdir=workdir,
        repeats=repeats,
        timeout=timeout,
        metrics=metrics,
        calibration_runs=_calibration_runs(path, raw.get("calibration_runs", 3)),
        build=(workdir / raw["build"]).resolve() if "build" in raw else workdir / ".mantis" / "builds" / name,
        env={str(k): str(v) for k, v in env.items()},
        instrument=instrument,
        inputs=records,
        raw=raw,
        original_repeats=_integer(path, raw, "original_repeats", 3, 1, 100),
        order_seed=_integer(path, raw, "order_seed", 0, 0, 2**31 - 1),
        rerun_threshold=_fraction(path, raw, "rerun_threshold", 0.25),
        rerun_repeats=_integer(path, raw, "rerun_repeats", 2, 0, 100),
    )
