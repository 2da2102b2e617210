"""mantispy report: the static HTML page of a predictor build (mantispy/report.py).

The fixture is built here (a realistic build.json: 3 metrics, 40 held-out inputs, 2 cost-loop rounds,
3 features, lambda path, training sizes) with hostile strings in every untrusted field; a second variant
drops every optional part. Unit tests check the HTML text; the browser tests open the written file in
headless Chromium and read back what the page's own script recorded (see docs/report.md).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mantispy import report
from mantispy.report import ReportError, fmt_pct, fmt_value, render_report, write_report

EVIL = "<script>alert(1)</script>"
EVIL_TEXTAREA = "</textarea><img src=x onerror=\"document.documentElement.dataset.pwned='1'\">"
EVIL_SCRIPT = "<script>document.documentElement.dataset.pwned='2'</script>"

F_INDEX = "minisearch/index.py:Index.add:loop:1"
F_RUN = "search.py:run:loop:2"
F_EVIL = f"evil/{EVIL}.py:<module>:branch:1"

SECTIONS = ["Summary", "Predicted vs actual", "Models", "λ path", "Training-size curve", "Chosen features",
            "Cost-loop rounds", "Evaluator cost"]


def _metric(rng: random.Random, ids: list[str], unit: str, scale: float, spread: float, *, evil_id: bool) -> dict:
    points = []
    for n, input_id in enumerate(ids):
        actual = scale * math.exp(spread * (n / (len(ids) - 1)))
        points.append({
            "input_id": EVIL if evil_id and n == 3 else input_id,
            "actual": actual,
            "predicted": actual * (1 + rng.gauss(0, 0.05)),
            "blackbox": actual * (1 + rng.gauss(0, 0.3)) if n % 7 else None,
        })
    lambda_path = []
    for k in range(12):
        lam = 10 ** (-k / 3)
        lambda_path.append({"lambda": lam, "terms": min(1 + k, 9), "median_rel_error": 0.6 / (1 + k) + 0.03,
                            "mean_rel_error": 0.8 / (1 + k) + 0.05, "chosen": k == 7})
    sizes = [{"fraction": 0.01, "n_train_inputs": 3, "skipped": "fewer than 4 training inputs"}]
    for fraction in (0.02, 0.05, 0.1, 0.2, 0.5):
        sizes.append({"fraction": fraction, "n_train_inputs": int(300 * fraction), "median_rel_error": 0.02 / fraction ** 0.5,
                      "mean_rel_error": 0.03 / fraction ** 0.5, "terms": 3})
    return {
        "unit": unit,
        "model": {
            "format": "mantispy-model", "version": 1, "metric": "?", "method": "lasso", "degree": 3,
            "intercept": scale * 0.1,
            "terms": [{"coefficient": scale * 1.8, "factors": [{"feature": F_INDEX, "power": 1}]},
                      {"coefficient": -scale * 0.2, "factors": [{"feature": F_RUN, "power": 2}, {"feature": F_EVIL, "power": 1}]}],
            "scaling": {F_INDEX: {"min": 0, "max": 100}, F_RUN: {"min": 1, "max": 50}, F_EVIL: {"min": 0, "max": 1}},
            "features": {F_INDEX: {"kind": "loop", "file": "minisearch/index.py", "line": 42, "qualname": "Index.add",
                                   "snippet": "for t in tokens:", "detail": "for"}},
            "training": {"train_inputs": ids[:30], "test_inputs": ids[30:]},
            "evaluation": {"test": {"median_rel_error": 0.041, "mean_rel_error": 0.052, "n": 270},
                           "lambda_path": lambda_path, "training_sizes": sizes},
        },
        "validation": {"median_rel_error": 0.04, "mean_rel_error": 0.05, "n": 270,
                       "blackbox": {"available": True, "median_rel_error": 0.2, "mean_rel_error": 0.3},
                       "points": points},
    }


def make_build() -> dict:
    """A realistic build.json with hostile strings in the untrusted fields."""
    rng = random.Random(7)
    ids = [f"q{n:04d}" for n in range(40)]
    features = [
        {"id": F_INDEX, "kind": "loop", "file": "minisearch/index.py", "line": 42, "qualname": "Index.add",
         "snippet": "for t in tokens:", "detail": "for", "metrics": ["wall_s", "cpu_s"], "cost_s": 0.001, "cost_fraction": 0.002,
         "source": {"first_line": 39, "highlight": [42, 42],
                    "lines": ["    def add(self, doc):", "        tokens = tokenize(doc.text)", "        self.size += 1",
                              "        for t in tokens:", "            self.postings[t].append(doc.id)"]}},
        {"id": F_RUN, "kind": "loop", "file": "search.py", "line": 88, "qualname": "run", "snippet": "for q in queries:",
         "detail": "for", "metrics": ["wall_s", "cpu_s", "max_rss_kb"], "cost_s": 0.0004, "cost_fraction": 0.0008,
         "source": {"first_line": 86, "highlight": [88, 89],
                    "lines": ["def run(args):", "    queries = load(args.queries)", "    for q in queries:",
                              "        results.append(search(q))", "    return results"]}},
        {"id": F_EVIL, "kind": "branch", "file": f"evil/{EVIL}.py", "line": 3, "qualname": EVIL,
         "snippet": f"if x == '{EVIL}': {EVIL_TEXTAREA}", "detail": EVIL_TEXTAREA, "metrics": ["max_rss_kb"],
         "cost_s": None, "cost_fraction": None,
         "source": {"first_line": 1, "highlight": [3, 3],
                    "lines": [f"# {EVIL_SCRIPT}", f"TEXT = '''{EVIL_TEXTAREA}'''", f"if x == '{EVIL}':", "    pass"]}},
    ]
    costs = []
    for n, input_id in enumerate(ids):
        actual = 0.2 + 0.05 * n
        fraction = 0.004 + 0.02 * rng.random()
        costs.append({"input_id": input_id, "evaluator_s": actual * fraction, "actual_s": actual, "fraction": fraction})
    metrics = {
        "wall_s": _metric(rng, ids, "s", 0.05, 4.6, evil_id=True),
        "cpu_s": _metric(rng, ids, "s", 0.04, 4.4, evil_id=False),
        "max_rss_kb": _metric(rng, ids, "KiB", 40_000, 0.3, evil_id=False),
    }
    metrics["max_rss_kb"]["validation"]["median_rel_error"] = 0.0042
    return {
        "format": "mantispy-build", "version": 1,
        "name": f"minisearch {EVIL}", "entry": "search.py", "source": f"/src/{EVIL_TEXTAREA}",
        "source_hash": "ab12cd34ef56ab12cd34ef56ab12cd34", "created": "2026-11-21T15:00:00Z",
        "machine": {"cpu": f"Test CPU {EVIL}", "cores": 2, "python": "3.11.7", "platform": "Linux-6.1-x86_64"},
        "options": {"max_cost": 0.05, "train_fraction": 0.1, "metrics": ["wall_s", "cpu_s", "max_rss_kb"], "degree": 3, "seed": 0},
        "campaign": {"name": "minisearch-bench", "inputs": 300, "runs": 300, "raw_features": 4123, "median_wall_s": 0.8,
                     "noise": {"cpu_s": {"floor": 0.0137}}},
        "metrics": metrics,
        "rounds": [
            {"round": 1, "metric": "wall_s", "selected": [F_INDEX, F_RUN, "x.py:f:loop:1"],
             "accepted": [{"feature": F_INDEX, "cost_s": 0.002, "cost_fraction": 0.003}],
             "rejected": [{"feature": "x.py:f:loop:1", "reason": "too expensive", "detail": EVIL_TEXTAREA,
                           "cost_s": 0.5, "cost_fraction": 0.6},
                          {"feature": F_RUN, "reason": "evaluator disagrees", "detail": "3 of 40 inputs differ",
                           "cost_s": 0.001, "cost_fraction": 0.001}],
             "median_rel_error": 0.09},
            {"round": 2, "metric": "wall_s", "selected": [F_INDEX, F_EVIL],
             "accepted": [{"feature": F_INDEX, "cost_s": 0.002, "cost_fraction": 0.003}],
             "rejected": [{"feature": F_EVIL, "reason": EVIL, "detail": "reads a C extension's state",
                           "cost_s": None, "cost_fraction": None}],
             "median_rel_error": 0.05},
        ],
        "features": features,
        "evaluator": {"statements_kept": 120, "statements_total": 900, "files": 4, "cost": costs,
                      "median_fraction": 0.01, "max_fraction": 0.03},
    }


def make_minimal_build() -> dict:
    """The same build with every optional part missing."""
    build = make_build()
    for metric in build["metrics"].values():
        evaluation = metric["model"]["evaluation"]
        evaluation.pop("lambda_path")
        evaluation.pop("training_sizes")
        metric["model"].pop("training")
        metric["validation"]["blackbox"] = {"available": False, "reason": f"no input descriptors {EVIL}"}
        for point in metric["validation"]["points"]:
            point["blackbox"] = None
    for feature in build["features"]:
        feature.pop("source")
    del build["rounds"]
    del build["evaluator"]
    del build["machine"]
    return build


@pytest.fixture(scope="module")
def page() -> str:
    return render_report(make_build())


@pytest.fixture(scope="module")
def minimal_page() -> str:
    return render_report(make_minimal_build())


# ----------------------------------------------------------------------------------------------------
# unit checks on the HTML text


@pytest.mark.parametrize("which", ["page", "minimal_page"])
def test_untrusted_strings_are_escaped(request, which):
    text = request.getfixturevalue(which)
    for raw in (EVIL, EVIL_TEXTAREA, EVIL_SCRIPT, "</textarea>", "<img", 'onerror="'):
        assert raw not in text, f"raw {raw!r} in the page"
    assert html.escape(EVIL) in text
    assert "&lt;/textarea&gt;" in text
    # the only <script> elements are the page's own two (the error recorder and the main script)
    assert text.count("<script") == 2 and text.count("</script>") == 2


def test_scripts_are_the_only_ones_the_csp_allows(page):
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    csp = html.unescape(csp)
    assert "default-src 'none'" in csp
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    assert len(scripts) == 2
    for script in scripts:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";")[0]


def test_self_contained(page):
    # every link is an in-page anchor; the only URL is the SVG namespace
    assert all(v.startswith("#") for v in re.findall(r'\b(?:href|src)="([^"]*)"', page))
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "<link" not in page and "@import" not in page


def test_every_section_present(page):
    for title in SECTIONS:
        assert f"<h2>{html.escape(title)}</h2>" in page
    assert "<h1>minisearch &lt;script&gt;alert(1)&lt;/script&gt;</h1>" in page
    for text in ("search.py", "ab12cd34ef56ab12", "2026-11-21T15:00:00Z", "2 cores", "Python 3.11.7", "4,123 raw features"):
        assert html.escape(text) in page


def test_charts(page):
    charts = re.findall(r'<svg class="chart"[^>]*aria-label="([^"]*)"', page)
    # per metric: predicted-vs-actual, lambda path, training sizes; plus the evaluator cost histogram
    assert len(charts) == 10
    assert "predicted vs actual wall_s (log–log)" in charts
    assert "predicted vs actual max_rss_kb (linear)" in charts  # 40k..54k KiB: too narrow for log axes
    assert {"lambda path for cpu_s", "training-size curve for max_rss_kb", "evaluator cost per input"} <= set(charts)
    assert "model (40)" in page and "black box (34)" in page and "y = x" in page
    assert "chosen λ" in page and "budget 5.0%" in page
    # every SVG coordinate is a finite number
    assert not re.search(r'="[^"]*(?:nan|inf)[^"]*"', page.split("<body>", 1)[1], flags=re.I)


def test_numbers_formatted(page):
    summary = page.split('<section id="summary">', 1)[1].split("</section>", 1)[0]
    for cell in ("4.0%", "5.0%", "20.0%", "30.0%", "0.42%", "1.0%", ">30<", ">270<"):
        assert cell in summary, cell
    assert "Noise floor" in summary and ">1.4%<" in summary  # beside every accuracy table (issue 17)
    assert "too expensive" in page and "500 ms, 60.0%" in page
    assert "120 of 900 (13.3%)" in page
    assert "1 ms per input, 0.20% of run time" in page


def test_formatters():
    assert fmt_pct(0.04) == "4.0%"
    assert fmt_pct(0.0042) == "0.42%"
    assert fmt_pct(12.5) == "1,250%"
    assert fmt_pct(None) == fmt_pct(float("nan")) == fmt_pct("x") == "—"
    assert fmt_value(0.0123, "s") == "12.3 ms"
    assert fmt_value(2.5, "s") == "2.5 s"
    assert fmt_value(3.2e-5, "s") == "32 µs"
    assert fmt_value(51234, "KiB") == "50 MiB"
    assert fmt_value(3 * 1024 ** 2, "KiB") == "3 GiB"
    assert fmt_value(7, "ops") == "7 ops"


def test_source_highlighted(page):
    features = page.split('<section id="features">', 1)[1].split("</section>", 1)[0]
    assert '<span class="srcline hl"><span class="ln">42</span><span class="code">        for t in tokens:</span></span>' in features
    assert '<span class="srcline"><span class="ln">41</span>' in features
    assert features.count('class="srcline hl"><span class="ln">8') == 2  # lines 88 and 89
    assert '<span class="ln">1</span><span class="code"># &lt;script&gt;' in features
    for what in ("loop", "<code>minisearch/index.py:42</code>", "Index.add", "wall_s, cpu_s", "id=\"feat-1\""):
        assert what in features
    # model terms link to the feature cards
    assert '<a href="#feat-2"><code>search.py:run:loop:2</code></a><sup>2</sup>' in page


def test_rounds_table(page):
    rounds = page.split('<section id="rounds">', 1)[1].split("</section>", 1)[0]
    assert rounds.count("<tr>") == 3  # header + 2 rounds
    assert '<span class="badge cost">too expensive</span>' in rounds
    assert '<span class="badge disagree">evaluator disagrees</span>' in rounds
    assert "&lt;/textarea&gt;" in rounds and "9.0%" in rounds


def test_an_averaged_model_shows_each_members_terms():
    build = make_build()
    name, metric = next(iter(build["metrics"].items()))
    single = {k: metric["model"][k] for k in ("method", "degree", "intercept", "terms", "scaling")}
    metric["model"] = dict(metric["model"], form="ensemble", method="geometric mean", intercept=0.0, terms=[],
                           members=[dict(single, label="program log-2", form="log"),
                                    dict(single, label=f"inputs {EVIL}", form="polynomial", terms=single["terms"][:1])])
    models = render_report(build).split('<section id="models">', 1)[1].split("</section>", 1)[0]
    panel = models.split(f"<code>{html.escape(name)}</code>", 1)[1].split('<div class="panel">', 1)[0]
    assert "geometric mean of these 2 models" in panel and "program log-2 (log form)" in panel
    assert f"inputs {html.escape(EVIL)}" in panel and EVIL not in panel
    assert "3 term(s)" in panel and panel.count("<em>intercept</em>") == 2


def test_missing_optional_parts(minimal_page):
    text = minimal_page
    for title in SECTIONS:
        assert f"<h2>{html.escape(title)}</h2>" in text
    assert text.count("λ path not available") == 3
    assert text.count("Training-size curve not available") == 3
    assert "Not available: this build recorded no cost-loop rounds." in text
    assert "Not available: this build recorded no evaluator." in text
    assert "Black box for <code>wall_s</code> not available: no input descriptors &lt;script&gt;" in text
    assert text.count("Source lines not available for this feature.") == 3
    assert "not recorded" in text  # machine
    assert len(re.findall(r'<svg class="chart"', text)) == 3  # the scatters only
    assert "black box (" not in text


@pytest.mark.parametrize("build", [
    {"format": "mantispy-build", "version": 1},
    {"format": "mantispy-build", "version": 1, "metrics": {"wall_s": {}}, "features": [{}], "rounds": [{}],
     "evaluator": {"cost": [{"input_id": "a"}]}},
    {"format": "mantispy-build", "version": 1, "metrics": {"wall_s": {"validation": {"points": [
        {"input_id": "a", "actual": 1.0, "predicted": -0.5, "blackbox": None},
        {"input_id": "b", "actual": 1.0, "predicted": 1.0, "blackbox": "oops"}]}}},
     "evaluator": {"cost": [{"input_id": "a", "evaluator_s": 0.01, "actual_s": 1.0}]}},
], ids=["bare", "empty-parts", "odd-values"])
def test_sparse_builds_never_crash(build):
    text = render_report(build)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    for title in SECTIONS:
        assert f"<h2>{html.escape(title)}</h2>" in text


# ----------------------------------------------------------------------------------------------------
# write_report and its errors


def _write_build(folder: Path, build) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "build.json").write_text(json.dumps(build), encoding="utf-8")
    return folder


def test_write_report(tmp_path):
    build_dir = _write_build(tmp_path / "build", make_build())
    out = write_report(build_dir, tmp_path / "deep" / "er" / "report.html")
    assert out == tmp_path / "deep" / "er" / "report.html"
    assert out.read_text(encoding="utf-8") == render_report(make_build())
    assert not list(out.parent.glob("*.tmp"))
    # the build.json path itself is accepted too
    assert write_report(build_dir / "build.json", tmp_path / "r2.html").exists()


@pytest.mark.parametrize("content, expected", [
    (None, "no such file"),
    ("{not json", "not JSON (line 1"),
    (json.dumps([1, 2]), "not a mantispy build"),
    (json.dumps({"format": "mantispy-model", "version": 1}), "not a mantispy build (format 'mantispy-model'"),
    (json.dumps({"format": "mantispy-build", "version": 2}), "version 2 is not supported (this mantispy reads version 1); upgrade mantispy"),
    (json.dumps({"format": "mantispy-build"}), "version None is not supported"),
], ids=["missing", "not-json", "not-object", "other-format", "newer", "no-version"])
def test_write_report_errors(tmp_path, content, expected):
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    if content is not None:
        (build_dir / "build.json").write_text(content, encoding="utf-8")
    with pytest.raises(ReportError) as info:
        write_report(build_dir, tmp_path / "report.html")
    message = str(info.value)
    assert expected in message
    assert str(build_dir / "build.json") in message
    assert "mantispy build" in message or "upgrade mantispy" in message  # the fix
    assert "\n" not in message
    assert not (tmp_path / "report.html").exists()


# ----------------------------------------------------------------------------------------------------
# headless Chromium: the page renders and its scripts run without an error


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _dump_dom(browser: str, page: Path, tmp_path: Path) -> tuple[str, str]:
    """Open ``page`` in headless Chromium; returns (serialised DOM after load, browser log)."""
    home = tmp_path / "browser-home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"))
    command = [
        browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-sync",
        "--disable-component-update", "--mute-audio", f"--user-data-dir={home / 'profile'}",
        "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri(),
    ]
    last = None
    for _attempt in range(2):  # a cold start on a loaded machine can be slow: one retry
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
        except subprocess.TimeoutExpired as exc:
            last = exc
            continue
        if "<html" in proc.stdout:
            return proc.stdout, proc.stderr
        last = proc
    if isinstance(last, subprocess.TimeoutExpired):
        pytest.fail(f"{browser} did not finish within 60 s (twice): {' '.join(command)}")
    pytest.fail(f"{browser} printed no DOM (exit {last.returncode}); its log ends:\n{last.stderr[-3000:]}")


def _root_attributes(dom: str) -> dict[str, str]:
    tag = re.search(r"<html\b([^>]*)>", dom)
    assert tag, dom[:500]
    return {k: html.unescape(v) for k, v in re.findall(r'([\w:-]+)="([^"]*)"', tag.group(1))}


def _need_browser() -> str:
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium, chromium-browser or google-chrome on PATH: install Debian's chromium "
                    "(apt-get install chromium; .ci/run does) to run the browser check")
    return browser


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["full", "minimal"])
def test_renders_in_headless_chromium(tmp_path, variant):
    browser = _need_browser()
    build = make_build() if variant == "full" else make_minimal_build()
    out = write_report(_write_build(tmp_path / "build", build), tmp_path / "out dir" / "report.html")
    dom, log = _dump_dom(browser, out, tmp_path)
    attrs = _root_attributes(dom)
    assert "data-script-errors" not in attrs, attrs["data-script-errors"]
    assert attrs.get("data-rendered") == "ok", attrs
    assert attrs.get("data-svg-count") == ("10" if variant == "full" else "3")
    assert attrs.get("data-svg-blank") == "0"  # every chart laid out with a size
    assert "data-pwned" not in dom  # no hostile string ran as markup or script
    assert "Uncaught" not in log, log[-3000:]
    assert "Refused to" not in log, log[-3000:]  # the CSP blocked nothing: our scripts are all allowed
    # the scripts ran: sortable headers got a tab stop
    assert 'title="sort by this column"' in dom


@pytest.mark.slow
def test_headless_check_catches_script_errors(tmp_path, monkeypatch):
    """Control: a page whose script throws is reported as such (so the test above can fail)."""
    browser = _need_browser()
    broken = report._JS_MAIN.replace('root.dataset.rendered = "ok";', 'noSuchFunction();\n  root.dataset.rendered = "ok";')
    assert broken != report._JS_MAIN
    monkeypatch.setattr(report, "_JS_MAIN", broken)
    out = tmp_path / "broken.html"
    out.write_text(render_report(make_build()), encoding="utf-8")
    dom, log = _dump_dom(browser, out, tmp_path)
    attrs = _root_attributes(dom)
    assert "noSuchFunction" in attrs.get("data-script-errors", "")
    assert "data-rendered" not in attrs
    assert "Uncaught" in log
