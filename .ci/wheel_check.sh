#!/usr/bin/env bash
# The installable package, checked the way a user gets it: build the sdist and the wheel, install the
# wheel (not editable) into a fresh virtual environment, and from a folder outside the checkout run
# `mantispy --help` and a small `mantispy build` + `mantispy predict` end to end. An editable install
# (make test's) hides a subpackage or file the wheel leaves out; this does not.
# About a minute on 2 cores when the dependencies' wheels are cached. PYTHON picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wheel-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step() { echo "wheel check: $*"; }

# 1. Build from a copy of the checkout's files (tracked, plus untracked ones git does not ignore), so
#    that setuptools' build/ and *.egg-info neither land in the checkout nor leak stale files into the wheel.
mkdir -p "$tmp/src" "$tmp/dist" "$tmp/from-sdist"
git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done \
    | tar --null -T - -cf - | tar -x -C "$tmp/src"

step "building the wheel and the sdist"
"$python" -m venv "$tmp/tools"
"$tmp/tools/bin/python" -m pip install -q build
(cd "$tmp/src" && "$tmp/tools/bin/python" -m pip wheel -q --no-deps -w "$tmp/dist" .)
(cd "$tmp/src" && "$tmp/tools/bin/python" -m build --sdist -o "$tmp/dist" .) >"$tmp/sdist.log" 2>&1 \
    || { cat "$tmp/sdist.log"; echo "wheel check: building the sdist failed" >&2; exit 1; }
wheel=$(ls "$tmp"/dist/mantispy-*.whl)
sdist=$(ls "$tmp"/dist/mantispy-*.tar.gz)
# The sdist must carry what the wheel needs: a wheel built from it has the same files.
"$tmp/tools/bin/python" -m pip wheel -q --no-deps -w "$tmp/from-sdist" "$sdist"

"$tmp/tools/bin/python" - "$tmp/src" "$wheel" "$tmp"/from-sdist/mantispy-*.whl <<'PY'
import pathlib, sys, tomllib, zipfile

src, wheel, wheel_from_sdist = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
names = set(zipfile.ZipFile(wheel).namelist())
# Every file under each package-dir folder (every package, module and data file) is in the wheel.
package_dir = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
missing = []
for package, folder in package_dir.items():
    prefix = package.replace(".", "/")
    for path in sorted((src / folder).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            want = f"{prefix}/{path.relative_to(src / folder).as_posix()}"
            if want not in names:
                missing.append(want)
if missing:
    sys.exit(f"wheel check: the wheel leaves out {len(missing)} file(s): " + ", ".join(missing[:20]))
other = set(zipfile.ZipFile(wheel_from_sdist).namelist())
if other != names:
    sys.exit("wheel check: a wheel built from the sdist differs from one built from the checkout: "
             f"only from the checkout {sorted(names - other)[:20]}, only from the sdist {sorted(other - names)[:20]}")
packages = sorted({n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")})
print(f"wheel check: {pathlib.Path(wheel).name}: {len(names)} files, packages {', '.join(packages)}; sdist complete")
PY

# 2. A fresh environment with the wheel installed (dependencies from the package index).
step "installing the wheel into a fresh virtual environment"
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q "$wheel"

# 3. From a folder outside the checkout, so that only the installed package can be imported.
mkdir -p "$tmp/run"
cd "$tmp/run"
unset PYTHONPATH
export PATH="$tmp/venv/bin:$PATH"
"$tmp/venv/bin/python" - "$tmp/venv" <<'PY'
import importlib, pathlib, sys

venv = pathlib.Path(sys.argv[1]).resolve()
for name in ("mantispy", "mantispy.modeling", "mantispy.instrument", "mantispy.slicer", "mantispy.runtime"):
    where = pathlib.Path(importlib.import_module(name).__file__).resolve()
    if venv not in where.parents:
        sys.exit(f"wheel check: {name} was imported from {where}, not from the installed wheel")
PY
mantispy --help >/dev/null

# A tiny program whose run time grows with its argument (the sum of the squares below N; 0.02-0.4 s).
# N is read in a statement of its own, so that a cheap evaluator (the value of n) can be sliced out.
mkdir app
cat > app/squares.py <<'EOF'
"""The sum of the squares below N (argv[1])."""
import sys


def size(argv):
    n = int(argv[1])
    return n


def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


if __name__ == "__main__":
    n = size(sys.argv)
    print(work(n))
EOF
{
    printf 'name = "squares"\nsource = "app"\nentry = "squares.py"\ntimeout = 60\n'
    for n in 200000 500000 800000 1100000 1400000 1700000 2000000 2400000 2800000 3200000 3600000 4000000; do
        printf '\n[[inputs.list]]\nid = "n%s"\nargv = ["%s"]\n' "$n" "$n"
    done
} > spec.toml

step "mantispy build (12 inputs, from the installed wheel, in $tmp/run)"
# --max-cost 0.5: this checks the installed package, not the evaluator's timing on a busy machine.
# --no-input-features: the argv number alone would explain this program (the black box's view wins the
# tie), and then no evaluator would be sliced out of the installed package and run.
mantispy build spec.toml -o pred --train-fraction 0.5 --jobs 2 --metric cpu --max-cost 0.5 --no-input-features
step "mantispy predict"
mantispy predict pred -- 3000000
mantispy predict --json pred -- 3000000 > estimate.json
"$tmp/venv/bin/python" - <<'PY'
import json, math, sys

record = json.load(open("pred/build.json"))
if not record["evaluator"]["features"]:  # then the installed slicer and evaluator emitter went unchecked
    sys.exit("wheel check: mantispy build selected no feature, so no evaluator was sliced out and run")
content = json.load(open(".mantis/build-work/squares/content.json"))  # the content stage ran from the wheel
if content.get("format") != "mantispy-content-features" or content.get("candidates") != []:
    sys.exit(f"wheel check: the content stage's table is not what squares.py (no regex) gives: {content}")
estimates = json.load(open("estimate.json"))  # {metric: {estimate, low, high, level}}
value = (estimates.get("cpu_s") or {}).get("estimate")
if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
    sys.exit(f"wheel check: mantispy predict gave no usable cpu_s estimate: {estimates}")
PY
step "mantispy record + flame (the sampler's bootstrap and the view's assets come from the wheel)"
mantispy record --store rec.db -- app/squares.py 3000000 >/dev/null
folded=$(mantispy flame last --store rec.db)
grep -q "work (squares.py" <<<"$folded" || { echo "wheel check: the recording has no sample of work()" >&2; exit 1; }
mantispy flame last --store rec.db --format html -o view.html
grep -q "recording-data" view.html && grep -q "brushTo" view.html \
    || { echo "wheel check: the recording's HTML view lacks its data or its script" >&2; exit 1; }
step "mantispy diagnose (the per-function counter profiler runs from the wheel)"
cp -r app slower
sed -i 's/total += i \* i/total += sum(range(3)) + i * i/' slower/squares.py
mantispy diagnose --baseline app --candidate slower spec.toml --inputs 4 --repeats 2 --candidate-repeats 1 \
    -o diagnosis.json > diagnosis.txt
"$tmp/venv/bin/python" - <<'PY'
import json, sys

document = json.load(open("diagnosis.json"))
if document["changes"]["changed"] != ["squares.py:work"] or document["runs"]["candidate"] != 4:
    sys.exit(f"wheel check: mantispy diagnose compared the wrong things: {document['changes']}, {document['runs']}")
if not any(f["function"] == "squares.py:work" and f["samples"] == 4 for f in document["findings"]):
    sys.exit("wheel check: mantispy diagnose has no profile of the changed function")
PY
step "mantispy run --backend monitor (the bytecode backend's boot folder and run-time come from the wheel)"
mantispy run app --backend monitor --features-out monitored.json -- squares.py 2000 >/dev/null
"$tmp/venv/bin/python" - <<'PY'
import json, sys

counts = json.load(open("monitored.json"))
if counts.get("squares.py:work:call") != 1 or counts.get("squares.py:work:loop:1") != 2000:
    sys.exit(f"wheel check: the bytecode backend counted {counts}")
PY
step "mantispy dataflow (without Dask: one line; with the cluster extra: the plugin, the boot folder and the page's assets come from the wheel)"
cat > daskjob.py <<'JOB'
import dask.array as da

x = da.ones((300, 300), chunks=(100, 100))
print(int((x + 1).sum().compute()))
JOB
set +e
missing=$(mantispy dataflow record --store flow.db -- daskjob.py 2>&1)
code=$?
set -e
if [ "$code" != 2 ] || ! grep -q "needs Dask" <<<"$missing"; then
    echo "wheel check: without Dask, mantispy dataflow record said (exit $code): $missing" >&2; exit 1
fi
"$tmp/venv/bin/python" -m pip install -q "$wheel[cluster]"
[ "$(mantispy dataflow record --store flow.db -o flow.json -- daskjob.py)" = 180000 ] \
    || { echo "wheel check: the recorded Dask job printed the wrong sum" >&2; exit 1; }
mantispy dataflow show flow.json | grep -q "code" \
    || { echo "wheel check: mantispy dataflow show printed no operations (is the classifier's corpus in the wheel?)" >&2; exit 1; }
mantispy dataflow show flow.json --html flow.html
grep -q "dataflow-data" flow.html && grep -q "drawGantt" flow.html \
    || { echo "wheel check: the dataflow page lacks its data or its script" >&2; exit 1; }
mantispy dataflow whatif last --store flow.db --workers 1 --threads 1 | grep -q "predicted:" \
    || { echo "wheel check: mantispy dataflow whatif predicted nothing" >&2; exit 1; }
cat > ownjob.py <<'JOB'
import dask.array as da
from distributed import Client, LocalCluster

if __name__ == "__main__":
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster):
        print(int(da.ones((200, 200), chunks=(100, 100)).sum().compute()))
JOB
[ "$(mantispy dataflow record --store flow.db -o own.json -- ownjob.py)" = 40000 ] \
    || { echo "wheel check: the Dask job with its own cluster printed the wrong sum" >&2; exit 1; }
mantispy dataflow show own.json | grep -q "the job's own cluster" \
    || { echo "wheel check: a job's own cluster was not recorded (is the scheduler preload in the wheel?)" >&2; exit 1; }
echo "wheel check: ok"
