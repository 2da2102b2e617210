"""``mantispy report``: one self-contained HTML page describing a predictor build.

The page needs no server and no network: CSS is inline, every chart is an SVG drawn here, and the only
script is a little inline JavaScript (sortable tables, legend toggles, a render self-check). A
Content-Security-Policy in the page forbids every fetch and allows only those two scripts (by hash), so
even a string that slipped past escaping could not run. Every string that comes from the build
(program and file names, source code, feature ids, reasons) goes through :func:`html.escape`.

The input is ``build.json`` as ``mantispy build`` writes it (format ``mantispy-build``, version 1; the
contract is in ``docs/report.md``), read through the typed :class:`mantispy.build_record.BuildRecord`;
the sections render its JSON form, so that a build dict with parts missing or odd (no lambda path, no
black box, no cost-loop rounds, a string where a number belongs) still renders, with a short "not
available" note.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
from collections.abc import Callable, Iterable
from itertools import count
from pathlib import Path
from typing import Any

from mantispy.build_record import BUILD_FILE, BUILD_FORMAT, BUILD_VERSION, BuildRecord, BuildRecordError
from mantispy.core.version import VERSION as __version__
from mantispy.outputs import REPORT_MARK, OutputError, check_file, is_report

MODEL_COLOUR = "#2563eb"
BLACKBOX_COLOUR = "#ea580c"
MEAN_COLOUR = "#7c3aed"
TERMS_COLOUR = "#16a34a"
BUDGET_COLOUR = "#dc2626"


class ReportError(Exception):
    """build.json cannot be read as a build this mantispy reports on (a one-line message)."""


# ----------------------------------------------------------------------------------------------------
# reading and writing


def load_build(build_dir: Path) -> dict[str, Any]:
    """Read and check ``build_dir/build.json`` (``build_dir`` may also be the JSON file itself) through the
    typed build record (:class:`mantispy.build_record.BuildRecord`: wrong types, non-finite numbers and
    unknown formats or versions are refused); returns its JSON form, which the sections render."""
    build_dir = Path(build_dir)
    path = build_dir if build_dir.suffix == ".json" and not build_dir.is_dir() else build_dir / BUILD_FILE
    if path.is_dir():
        raise ReportError(f"{path}: is a folder, not a file; give the folder `mantispy build` wrote (it holds "
                          "build.json), or run mantispy build again")
    try:
        return BuildRecord.load(path).to_dict()
    except BuildRecordError as exc:
        raise ReportError(str(exc)) from None


def write_report(build_dir: Path, out: Path, phases: dict[str, Any] | None = None) -> Path:
    """Render ``build_dir/build.json`` into the HTML file ``out`` (written atomically); returns ``out``. An
    existing ``out`` is replaced only if it is an earlier mantispy report. ``phases``: a phase model
    (``mantispy phases --fit``) whose phases across runs the report shows too."""
    out = Path(out)
    try:
        check_file(out, is_report, "mantispy report", can_force=False)
    except OutputError as exc:
        raise ReportError(str(exc)) from None
    build = load_build(build_dir)
    page = render_report(build, phases)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(out)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write the report ({exc.strerror or exc}); choose another -o path") from None
    return out


# ----------------------------------------------------------------------------------------------------
# small helpers: escaping, reading untrusted structures, formatting numbers


def _e(value: Any) -> str:
    """HTML-escaped text (quotes too, so it is safe in attributes)."""
    return "" if value is None else html.escape(str(value), quote=True)


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _int(value: Any) -> int | None:
    v = _num(value)
    return int(v) if v is not None else None


def _d(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list:
    return value if isinstance(value, list) else []


def _sig(v: float, n: int = 3) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 10 ** n:
        return f"{v:,.0f}"
    return f"{v:.{n}g}"


def fmt_pct(value: Any) -> str:
    """A fraction as a percentage: 0.04 -> '4.0%'."""
    v = _num(value)
    if v is None:
        return "—"
    p = v * 100
    a = abs(p)
    if a == 0:
        return "0%"
    if a >= 100:
        return f"{p:,.0f}%"
    if a >= 1:
        return f"{p:.1f}%"
    if a >= 0.01:
        return f"{p:.2f}%"
    return f"{p:.1g}%"


def fmt_value(value: Any, unit: str | None) -> str:
    """A metric value with its unit, scaled to a readable prefix: 0.0123 s -> '12.3 ms'."""
    v = _num(value)
    if v is None:
        return "—"
    unit = unit or ""
    a = abs(v)
    if unit == "s":
        if a == 0 or a >= 1:
            return f"{_sig(v)} s"
        if a >= 1e-3:
            return f"{_sig(v * 1e3)} ms"
        if a >= 1e-6:
            return f"{_sig(v * 1e6)} µs"
        return f"{_sig(v)} s"
    if unit in ("KiB", "kB", "KB"):
        if a >= 1024 ** 2:
            return f"{_sig(v / 1024 ** 2)} GiB"
        if a >= 1024:
            return f"{_sig(v / 1024)} MiB"
        return f"{_sig(v)} KiB"
    return f"{_sig(v)} {unit}".strip()


def fmt_count(value: Any) -> str:
    v = _int(value)
    return "—" if v is None else f"{v:,}"


def _tick(v: float) -> str:
    return f"{v:,.0f}" if 1e4 <= abs(v) < 1e12 and v == round(v) else f"{v:g}"


def _coef(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:+,.0f}" if 1e4 <= abs(v) < 1e12 else f"{v:+.4g}"


def _pct_tick(v: float) -> str:
    return f"{round(v * 100, 6):g}%"


def _na(what: str) -> str:
    return f'<p class="na">{_e(what)}</p>'


def _rel_error(actual: float | None, predicted: float | None) -> float | None:
    if actual is None or predicted is None or actual == 0:
        return None
    return abs(predicted - actual) / abs(actual)


def _median(values: list[float]) -> float | None:
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


# ----------------------------------------------------------------------------------------------------
# SVG charts


def _log_ticks(lo: float, hi: float) -> list[float]:
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = [10.0 ** k for k in range(k0, k1 + 1) if lo <= 10.0 ** k <= hi]
    if len(decades) >= 3:
        step = max(1, math.ceil(len(decades) / 7))
        return decades[::step]
    steps = sorted(m * 10.0 ** k for k in range(k0, k1 + 1) for m in (1, 2, 5) if lo <= m * 10.0 ** k <= hi)
    if len(steps) > 8:
        steps = [t for t in steps if round(t / 10.0 ** math.floor(math.log10(t) + 1e-9)) in (1, 3, 5)] or steps
    return steps if len(steps) >= 2 else _lin_ticks(lo, hi)


def _lin_ticks(lo: float, hi: float, n: int = 5, min_step: float = 0.0) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if raw <= m * mag)
    step = max(step, min_step)
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def _domain(values: Iterable[float | None], log: bool, *, zero: bool = False, pad: float = 0.05) -> tuple[float, float]:
    vals = [v for v in values if v is not None and (v > 0 or not log)]
    if not vals:
        return (1.0, 10.0) if log else (0.0, 1.0)
    lo, hi = min(vals), max(vals)
    if log:
        if lo == hi:
            return lo / 1.5, hi * 1.5
        f = (hi / lo) ** pad
        return lo / f, hi * f
    if zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    if lo == hi:
        width = abs(lo) * 0.1 or 1.0
        return lo - width, hi + width
    width = (hi - lo) * pad
    return (lo if zero and lo == 0 else lo - width), (hi if zero and hi == 0 else hi + width)


class _Scale:
    def __init__(self, domain: tuple[float, float], log: bool, p0: float, p1: float, *,
                 ticks: list[float] | None = None, fmt: Callable[[float], str] = _tick):
        self.lo, self.hi = domain
        self.log = log
        self.a, self.b = (math.log10(self.lo), math.log10(self.hi)) if log else (self.lo, self.hi)
        self.p0, self.p1 = p0, p1
        self.fmt = fmt
        self._ticks = ticks

    def __call__(self, v: float) -> float:
        t = math.log10(v) if self.log else v
        frac = 0.5 if self.b == self.a else (t - self.a) / (self.b - self.a)
        return self.p0 + frac * (self.p1 - self.p0)

    def ticks(self) -> list[float]:
        if self._ticks is not None:
            return [t for t in self._ticks if self.lo <= t <= self.hi]
        return _log_ticks(self.lo, self.hi) if self.log else _lin_ticks(self.lo, self.hi)


_chart_ids = count(1)


class _Chart:
    """A minimal SVG plot: axes with ticks and grid, series of points or lines, a legend on top."""

    W, H = 460, 340
    LEFT, RIGHT, TOP, BOTTOM = 66, 22, 38, 50

    def __init__(self, label: str, x_dom, y_dom, *, x_log=False, y_log=False, x_label="", y_label="",
                 x_fmt=_tick, y_fmt=_tick, y_ticks=None, right: bool = False):
        if right:
            self.RIGHT = 58
        self.label = label
        self.cid = next(_chart_ids)
        self.x = _Scale(x_dom, x_log, self.LEFT, self.W - self.RIGHT, fmt=x_fmt)
        self.y = _Scale(y_dom, y_log, self.H - self.BOTTOM, self.TOP, fmt=y_fmt, ticks=y_ticks)
        self.x_label, self.y_label = x_label, y_label
        self.y2: _Scale | None = None
        self.y2_label = ""
        self.body: list[str] = []
        self.legend: list[tuple[str, str, str, str]] = []  # (series id, symbol, colour, text)
        self.n_series = 0

    def right_axis(self, dom, label: str, fmt=_tick, ticks=None) -> None:
        self.y2 = _Scale(dom, False, self.H - self.BOTTOM, self.TOP, fmt=fmt, ticks=ticks)
        self.y2_label = label

    def _series_id(self) -> str:
        self.n_series += 1
        return f"c{self.cid}s{self.n_series}"

    def points(self, pts, *, colour: str, legend: str, shape: str = "dot", axis: str = "left") -> None:
        """``pts``: (x, y, tooltip) triples; shape 'dot' (filled circle), 'ring' or 'triangle'."""
        ys = self.y2 if axis == "right" and self.y2 else self.y
        sid = self._series_id()
        out = [f'<g class="series pts {shape}" data-series="{sid}">']
        for x, y, tip in pts:
            cx, cy = self.x(x), ys(y)
            if shape == "ring":
                mark = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="none" stroke="{colour}" stroke-width="1.6">'
                end = "</circle>"
            elif shape == "triangle":
                mark = (f'<path d="M{cx:.1f},{cy - 4.6:.1f} L{cx + 4.2:.1f},{cy + 3:.1f} L{cx - 4.2:.1f},{cy + 3:.1f} Z" '
                        f'fill="{colour}" fill-opacity="0.8">')
                end = "</path>"
            else:
                mark = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.6" fill="{colour}" fill-opacity="0.75">'
                end = "</circle>"
            out.append(f"{mark}<title>{_e(tip)}</title>{end}")
        out.append("</g>")
        self.body.append("".join(out))
        self.legend.append((sid, shape, colour, legend))

    def line(self, pts, *, colour: str, legend: str | None, dashed: bool = False, axis: str = "left",
             markers: bool = True) -> None:
        ys = self.y2 if axis == "right" and self.y2 else self.y
        sid = self._series_id()
        coords = [(self.x(x), ys(y), tip) for x, y, tip in pts]
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y, _) in enumerate(coords))
        out = [f'<g class="series line" data-series="{sid}">']
        if path:
            out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        if markers:
            for x, y, tip in coords:
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.4" fill="{colour}"><title>{_e(tip)}</title></circle>')
        out.append("</g>")
        self.body.append("".join(out))
        if legend:
            self.legend.append((sid, "dash" if dashed else "line", colour, legend))

    def diagonal(self, lo: float, hi: float, legend: str = "y = x") -> None:
        sid = self._series_id()
        self.body.insert(0, f'<g class="series" data-series="{sid}"><line x1="{self.x(lo):.1f}" y1="{self.y(lo):.1f}" '
                            f'x2="{self.x(hi):.1f}" y2="{self.y(hi):.1f}" stroke="#6b7280" stroke-width="1.2" '
                            f'stroke-dasharray="5 4"/></g>')
        self.legend.append((sid, "dash", "#6b7280", legend))

    def vline(self, x: float, *, colour: str, text: str, dashed: bool = True) -> None:
        px = self.x(x)
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        anchor = "end" if px > (self.LEFT + self.W - self.RIGHT) / 2 else "start"
        dx = -4 if anchor == "end" else 4
        self.body.append(f'<g class="marker"><line x1="{px:.1f}" y1="{self.TOP}" x2="{px:.1f}" y2="{self.H - self.BOTTOM}" '
                         f'stroke="{colour}" stroke-width="1.4"{dash}/><text x="{px + dx:.1f}" y="{self.TOP + 12}" '
                         f'text-anchor="{anchor}" fill="{colour}" class="small">{_e(text)}</text></g>')

    def bars(self, bars, *, colour: str) -> None:
        """``bars``: (x0, x1, height, tooltip)."""
        out = ['<g class="bars">']
        base = self.y(self.y.lo)
        for x0, x1, h, tip in bars:
            px0, px1, top = self.x(x0), self.x(x1), self.y(h)
            out.append(f'<rect x="{px0 + 0.5:.1f}" y="{top:.1f}" width="{max(px1 - px0 - 1, 0.5):.1f}" '
                       f'height="{max(base - top, 0):.1f}" fill="{colour}" fill-opacity="0.8"><title>{_e(tip)}</title></rect>')
        out.append("</g>")
        self.body.append("".join(out))

    def _axes(self) -> str:
        x0, x1, y0, y1 = self.LEFT, self.W - self.RIGHT, self.H - self.BOTTOM, self.TOP
        out = [f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="#fff" stroke="#9ca3af"/>']
        for t in self.x.ticks():
            px = self.x(t)
            out.append(f'<line x1="{px:.1f}" y1="{y1}" x2="{px:.1f}" y2="{y0}" class="grid"/>'
                       f'<text x="{px:.1f}" y="{y0 + 16}" text-anchor="middle" class="tick">{_e(self.x.fmt(t))}</text>')
        for t in self.y.ticks():
            py = self.y(t)
            out.append(f'<line x1="{x0}" y1="{py:.1f}" x2="{x1}" y2="{py:.1f}" class="grid"/>'
                       f'<text x="{x0 - 6}" y="{py + 4:.1f}" text-anchor="end" class="tick">{_e(self.y.fmt(t))}</text>')
        if self.y2 is not None:
            for t in self.y2.ticks():
                py = self.y2(t)
                out.append(f'<text x="{x1 + 6}" y="{py + 4:.1f}" text-anchor="start" class="tick" '
                           f'fill="{TERMS_COLOUR}">{_e(self.y2.fmt(t))}</text>')
            out.append(f'<text transform="translate({self.W - 10},{(y0 + y1) / 2:.1f}) rotate(90)" text-anchor="middle" '
                       f'class="axis" fill="{TERMS_COLOUR}">{_e(self.y2_label)}</text>')
        out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{self.H - 12}" text-anchor="middle" class="axis">{_e(self.x_label)}</text>')
        out.append(f'<text transform="translate(16,{(y0 + y1) / 2:.1f}) rotate(-90)" text-anchor="middle" '
                   f'class="axis">{_e(self.y_label)}</text>')
        return "".join(out)

    def _legend(self) -> str:
        out, x, y = [], float(self.LEFT), 14.0
        for sid, shape, colour, text in self.legend:
            width = 26 + 6.4 * len(text)
            if x + width > self.W - 4 and x > self.LEFT:
                x, y = float(self.LEFT), y + 14
            if shape == "dot":
                sym = f'<circle cx="{x + 7:.1f}" cy="{y - 4:.1f}" r="4" fill="{colour}"/>'
            elif shape == "ring":
                sym = f'<circle cx="{x + 7:.1f}" cy="{y - 4:.1f}" r="4" fill="none" stroke="{colour}" stroke-width="1.6"/>'
            elif shape == "triangle":
                sym = f'<path d="M{x + 7:.1f},{y - 9:.1f} L{x + 11:.1f},{y - 1:.1f} L{x + 3:.1f},{y - 1:.1f} Z" fill="{colour}"/>'
            else:
                dash = ' stroke-dasharray="5 3"' if shape == "dash" else ""
                sym = f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 16:.1f}" y2="{y - 4:.1f}" stroke="{colour}" stroke-width="2"{dash}/>'
            out.append(f'<g class="lg" data-toggle="{sid}" tabindex="0" role="button" aria-pressed="true">'
                       f'<title>show or hide</title>{sym}<text x="{x + 20:.1f}" y="{y:.1f}" class="small">{_e(text)}</text></g>')
            x += width
        return "".join(out)

    def svg(self) -> str:
        legend = self._legend()
        return (f'<svg class="chart" viewBox="0 0 {self.W} {self.H}" xmlns="http://www.w3.org/2000/svg" role="img" '
                f'aria-label="{_e(self.label)}"><title>{_e(self.label)}</title>{self._axes()}'
                f'<g class="plot">{"".join(self.body)}</g>{legend}</svg>')


# ----------------------------------------------------------------------------------------------------
# the sections


def _metric_order(build: dict) -> list[str]:
    metrics = _d(build.get("metrics"))
    wanted = [m for m in _l(_d(build.get("options")).get("metrics")) if isinstance(m, str)]
    order = [m for m in wanted if m in metrics] + [m for m in metrics if m not in wanted]
    return order


def _section(anchor: str, title: str, body: str, intro: str = "") -> str:
    intro_html = f'<p class="intro">{intro}</p>' if intro else ""
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>{intro_html}{body}</section>'


def _header(build: dict) -> str:
    machine, options, campaign = _d(build.get("machine")), _d(build.get("options")), _d(build.get("campaign"))
    name = build.get("name") or "(unnamed program)"
    full_hash = str(build.get("source_hash") or "")
    rows = [
        ("Entry", f"<code>{_e(build.get('entry') or '—')}</code>"),
        ("Source", f"<code>{_e(build.get('source') or '—')}</code>"),
        ("Source hash", f'<code title="{_e(full_hash)}">{_e(full_hash[:16] + ("…" if len(full_hash) > 16 else "") or "—")}</code>'),
        ("Created", _e(build.get("created") or "—")),
    ]
    if machine:
        parts = [machine.get("cpu"), f"{fmt_count(machine.get('cores'))} cores" if machine.get("cores") is not None else None,
                 f"Python {machine['python']}" if machine.get("python") else None, machine.get("platform")]
        rows.append(("Machine", _e(", ".join(str(p) for p in parts if p))))
    else:
        rows.append(("Machine", '<span class="na">not recorded</span>'))
    if options:
        opts = []
        if _num(options.get("max_cost")) is not None:
            opts.append(f"evaluator budget {fmt_pct(options['max_cost'])} of run time")
        if _num(options.get("train_fraction")) is not None:
            opts.append(f"train fraction {fmt_pct(options['train_fraction'])}")
        if options.get("degree") is not None:
            opts.append(f"degree {options['degree']}")
        if options.get("seed") is not None:
            opts.append(f"seed {options['seed']}")
        rows.append(("Options", _e(", ".join(opts) or "—")))
    if campaign:
        bits = []
        if campaign.get("name"):
            bits.append(f"“{campaign['name']}”")
        if campaign.get("inputs") is not None:
            bits.append(f"{fmt_count(campaign['inputs'])} inputs")
        if campaign.get("runs") is not None:
            bits.append(f"{fmt_count(campaign['runs'])} runs")
        if campaign.get("raw_features") is not None:
            bits.append(f"{fmt_count(campaign['raw_features'])} raw features")
        if _num(campaign.get("median_wall_s")) is not None:
            bits.append(f"median run {fmt_value(campaign['median_wall_s'], 's')}")
        rows.append(("Campaign", _e(", ".join(bits) or "—")))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    return (f'<header><p class="kicker">mantispy predictor build</p><h1>{_e(name)}</h1>'
            f'<dl class="meta">{dl}</dl></header>')


def _counts(build: dict, metric: dict) -> tuple[int | None, int | None]:
    validation = _d(metric.get("validation"))
    training = _d(_d(metric.get("model")).get("training"))
    test = _int(validation.get("n"))
    if test is None:
        test = _int(_d(_d(_d(metric.get("model")).get("evaluation")).get("test")).get("n"))
    train = None
    if isinstance(training.get("train_inputs"), list):
        train = len(training["train_inputs"])
    elif _int(training.get("n_train_inputs")) is not None:
        train = _int(training.get("n_train_inputs"))
    else:
        inputs = _int(_d(build.get("campaign")).get("inputs"))
        if inputs is not None and test is not None and inputs >= test:
            train = inputs - test
    return train, test


def _summary(build: dict, order: list[str]) -> str:
    metrics = _d(build.get("metrics"))
    if not order:
        return _na("Not available: this build has no metrics.")
    evaluator = _d(build.get("evaluator"))
    ev_cell = fmt_pct(evaluator.get("median_fraction")) if evaluator else "—"
    rows, notes = [], []
    for i, name in enumerate(order):
        metric = _d(metrics.get(name))
        validation = _d(metric.get("validation"))
        box = _d(validation.get("blackbox"))
        unit = metric.get("unit") or ""
        model = _d(metric.get("model"))
        parts = [_d(m) for m in _l(model.get("members"))] if model.get("form") == "ensemble" else [model]
        terms = [t for part in parts for t in _l(part.get("terms"))]
        train, test = _counts(build, metric)
        if box.get("available"):
            bb_med, bb_mean = fmt_pct(box.get("median_rel_error")), fmt_pct(box.get("mean_rel_error"))
            bb = (f'<td class="num" data-v="{_e(_num(box.get("median_rel_error")))}">{_e(bb_med)}</td>'
                  f'<td class="num">{_e(bb_mean)}</td>')
        else:
            reason = box.get("reason") or "the build recorded no black-box baseline"
            bb = f'<td colspan="2" class="na" title="{_e(reason)}">not available</td>'
            notes.append(f"<li>Black box for <code>{_e(name)}</code> not available: {_e(reason)}</li>")
        ev = (f'<td class="num" rowspan="{len(order)}">{_e(ev_cell)}</td>' if i == 0 else "")
        rows.append(
            f"<tr><th scope=\"row\"><a href=\"#m-{i}\"><code>{_e(name)}</code></a></th><td>{_e(unit or '—')}</td>"
            f"<td class=\"num\">{len(terms) if metric.get('model') else '—'}</td>"
            f"<td class=\"num strong\">{_e(fmt_pct(validation.get('median_rel_error')))}</td>"
            f"<td class=\"num\">{_e(fmt_pct(validation.get('mean_rel_error')))}</td>{bb}"
            f"<td class=\"num\">{_e(fmt_pct(_noise_floor(build, name)))}</td>"
            f"<td class=\"num\">{_e(fmt_count(train))}</td><td class=\"num\">{_e(fmt_count(test))}</td>{ev}</tr>"
        )
    head = ("<thead><tr><th rowspan=\"2\">Metric</th><th rowspan=\"2\">Unit</th><th rowspan=\"2\">Terms</th>"
            "<th colspan=\"2\">Held-out relative error</th><th colspan=\"2\">Black box relative error</th>"
            "<th rowspan=\"2\">Noise floor<br><small>repeats of one input</small></th>"
            "<th colspan=\"2\">Inputs</th><th rowspan=\"2\">Evaluator cost<br><small>median % of run time</small></th></tr>"
            "<tr><th>median</th><th>mean</th><th>median</th><th>mean</th><th>train</th><th>test</th></tr></thead>")
    foot = ('<p class="note">Held-out errors are the built predictor (feature evaluators plus model) on inputs it never '
            'trained on; the black box is the same regression over input descriptors only (argument numbers, file '
            'sizes). One evaluator computes the features of every metric, so its cost is shared.</p>')
    if not evaluator:
        notes.append("<li>Evaluator cost not available: the build recorded no evaluator.</li>")
    note_html = f'<ul class="notes">{"".join(notes)}</ul>' if notes else ""
    said = _verdicts(build)
    verdict_html = (f'<h3>Verdicts</h3><ul class="verdicts">{"".join(f"<li>{_e(line)}</li>" for line in said)}</ul>'
                    if said else "")
    return f'<table class="summary">{head}<tbody>{"".join(rows)}</tbody></table>{foot}{verdict_html}{note_html}'


def _noise_floor(build: dict, metric: str) -> float | None:
    """The campaign's noise floor for ``metric`` (work_s is judged against CPU time), or None."""
    from mantispy.modeling.work import measured_metric

    found = _d(_d(_d(build.get("campaign")).get("noise")).get(measured_metric(metric)))
    floor = found.get("floor")
    return float(floor) if isinstance(floor, (int, float)) and not isinstance(floor, bool) else None


def _verdicts(build: dict) -> list[str]:
    """The verdicts in words (mantispy.verdicts); none for a build record too sparse or odd to judge."""
    from mantispy.verdicts import build_verdicts

    try:
        return build_verdicts(BuildRecord.from_dict(build))
    except (BuildRecordError, TypeError, KeyError, AttributeError, ValueError):
        return []


def _scatter(name: str, metric: dict) -> str:
    unit = metric.get("unit") or ""
    validation = _d(metric.get("validation"))
    box = _d(validation.get("blackbox"))
    pts = []
    for p in _l(validation.get("points")):
        p = _d(p)
        actual, predicted = _num(p.get("actual")), _num(p.get("predicted"))
        if actual is None:
            continue
        pts.append((actual, predicted, _num(p.get("blackbox")), str(p.get("input_id", "?"))))
    if not pts:
        return _na(f"Predicted-vs-actual not available for {name}: the build recorded no validation points.")
    values = [v for a, p, b, _ in pts for v in (a, p, b) if v is not None]
    lo, hi = min(values), max(values)
    log = lo > 0 and hi / lo >= 10
    dom = _domain(values, log)
    scale = "log–log" if log else "linear"
    chart = _Chart(f"predicted vs actual {name} ({scale})", dom, dom, x_log=log, y_log=log,
                   x_label=f"actual {name}" + (f" ({unit})" if unit else ""),
                   y_label=f"predicted {name}" + (f" ({unit})" if unit else ""))
    chart.diagonal(dom[0], dom[1])
    bb_pts = [(a, b, f"{i}: actual {fmt_value(a, unit)}, black box {fmt_value(b, unit)} "
               f"({fmt_pct(_rel_error(a, b))} off)") for a, _, b, i in pts if b is not None]
    if bb_pts:
        chart.points(bb_pts, colour=BLACKBOX_COLOUR, legend=f"black box ({len(bb_pts)})", shape="ring")
    model_pts = [(a, p, f"{i}: actual {fmt_value(a, unit)}, predicted {fmt_value(p, unit)} "
                  f"({fmt_pct(_rel_error(a, p))} off)") for a, p, _, i in pts if p is not None]
    chart.points(model_pts, colour=MODEL_COLOUR, legend=f"model ({len(model_pts)})", shape="dot")
    notes = []
    if not box.get("available"):
        notes.append(f"black box not available: {box.get('reason') or 'not recorded'}")
    elif not bb_pts:
        notes.append("the build recorded no black-box predictions per input")
    note = f'<p class="note">{_e("; ".join(notes))}</p>' if notes else ""
    # the worst predictions, for a look at what the model misses
    worst = sorted(((_rel_error(a, p), a, p, b, i) for a, p, b, i in pts if _rel_error(a, p) is not None),
                   key=lambda t: -t[0])[:5]
    rows = "".join(
        f'<tr><td><code>{_e(i)}</code></td><td class="num" data-v="{a}">{_e(fmt_value(a, unit))}</td>'
        f'<td class="num" data-v="{p}">{_e(fmt_value(p, unit))}</td><td class="num" data-v="{err}">{_e(fmt_pct(err))}</td>'
        f'<td class="num" data-v="{"" if b is None else b}">{_e(fmt_value(b, unit))}</td></tr>'
        for err, a, p, b, i in worst
    )
    table = (f'<details><summary>worst {len(worst)} predictions</summary><table class="sortable compact"><thead><tr>'
             f'<th>input</th><th>actual</th><th>predicted</th><th>error</th><th>black box</th></tr></thead>'
             f'<tbody>{rows}</tbody></table></details>') if worst else ""
    return f'{chart.svg()}{note}{table}'


def _predicted_vs_actual(build: dict, order: list[str]) -> str:
    metrics = _d(build.get("metrics"))
    if not order:
        return _na("Not available: this build has no metrics.")
    panels = []
    for i, name in enumerate(order):
        metric = _d(metrics.get(name))
        validation = _d(metric.get("validation"))
        stats = (f"median {fmt_pct(validation.get('median_rel_error'))}, mean {fmt_pct(validation.get('mean_rel_error'))}"
                 f" over {fmt_count(validation.get('n'))} held-out inputs")
        panels.append(f'<figure class="panel" id="m-{i}"><figcaption><h3><code>{_e(name)}</code></h3>'
                      f'<span class="sub">{_e(stats)}</span></figcaption>{_scatter(name, metric)}</figure>')
    return f'<div class="grid">{"".join(panels)}</div>'


def _models(build: dict, order: list[str], anchors: dict[str, str]) -> str:
    metrics = _d(build.get("metrics"))
    if not order:
        return _na("Not available: this build has no metrics.")
    blocks = []
    for name in order:
        model = _d(_d(metrics.get(name)).get("model"))
        if not model:
            blocks.append(f'<div class="panel"><h3><code>{_e(name)}</code></h3>{_na("Model not available.")}</div>')
            continue
        members = [_d(m) for m in _l(model.get("members"))] if model.get("form") == "ensemble" else [model]
        tables, count = [], 0
        for member in members:
            table, terms = _term_table(member, anchors)
            count += terms
            if len(members) > 1:
                tables.append(f'<p class="note">{_e(member.get("label", "member"))} ({_e(member.get("form", ""))} form):</p>')
            tables.append(table)
        if len(members) > 1:
            tables.insert(0, f'<p class="note">The estimate is the geometric mean of these {len(members)} models\' '
                             'estimates (the candidates cross-validation ranked best).</p>')
        test = _d(_d(model.get("evaluation")).get("test"))
        fit_note = ""
        if test:
            fit_note = (f'<p class="note">At fit time: held-out median {_e(fmt_pct(test.get("median_rel_error")))}, '
                        f'mean {_e(fmt_pct(test.get("mean_rel_error")))} over {_e(fmt_count(test.get("n")))} runs.</p>')
        blocks.append(f'<div class="panel"><h3><code>{_e(name)}</code> <small>{count} term(s)</small></h3>'
                      f'{"".join(tables)}{fit_note}</div>')
    return f'<div class="grid">{"".join(blocks)}</div>'


def _term_table(model: dict, anchors: dict[str, str]) -> tuple[str, int]:
    """One model's (or ensemble member's) terms as a table, largest coefficient first; (html, terms)."""
    rows = []
    terms = sorted((_d(t) for t in _l(model.get("terms"))), key=lambda t: -abs(_num(t.get("coefficient")) or 0))
    for term in terms:
        factors = []
        for f in _l(term.get("factors")):
            f = _d(f)
            fid = str(f.get("feature", "?"))
            power = _int(f.get("power")) or 1
            link = f'<a href="#{anchors[fid]}"><code>{_e(fid)}</code></a>' if fid in anchors else f"<code>{_e(fid)}</code>"
            factors.append(link + (f"<sup>{power}</sup>" if power != 1 else ""))
        coef = _num(term.get("coefficient"))
        rows.append(f'<tr><td class="num" data-v="{"" if coef is None else coef}">'
                    f'{_e(_coef(coef))}</td><td>{" × ".join(factors) or "1"}</td></tr>')
    intercept = _num(model.get("intercept"))
    html = (f'<table class="compact terms"><thead><tr><th>coefficient</th><th>term (features scaled to 0..1)</th></tr></thead>'
            f'<tbody><tr><td class="num">{_e(_coef(intercept))}</td>'
            f'<td><em>intercept</em></td></tr>{"".join(rows)}</tbody></table>')
    return html, len(terms)


def _lambda_path(build: dict, order: list[str]) -> str:
    metrics = _d(build.get("metrics"))
    panels = []
    for name in order:
        evaluation = _d(_d(_d(metrics.get(name)).get("model")).get("evaluation"))
        rows = [dict(_d(r), **{"lambda": _num(_d(r).get("lambda"))}) for r in _l(evaluation.get("lambda_path"))]
        rows = sorted((r for r in rows if (r["lambda"] or 0) > 0), key=lambda r: r["lambda"])
        if not rows:
            body = _na("λ path not available (the model was fitted without the sensitivity sweep, or not by LASSO).")
        else:
            lambdas = [_num(r["lambda"]) for r in rows]
            errs = [v for r in rows for v in (_num(r.get("median_rel_error")), _num(r.get("mean_rel_error"))) if v is not None]
            terms = [_num(r.get("terms")) for r in rows if _num(r.get("terms")) is not None]
            y_dom = _domain(errs, False, zero=True)
            chart = _Chart(f"lambda path for {name}", _domain(lambdas, True), y_dom, x_log=True,
                           x_label="λ (log scale)", y_label="held-out relative error", y_fmt=_pct_tick, right=bool(terms))
            if terms:
                t_dom = _domain(terms, False, zero=True)
                chart.right_axis(t_dom, "terms", ticks=_lin_ticks(*t_dom, min_step=1.0))
            med = [(r["lambda"], _num(r.get("median_rel_error")), f"λ={r['lambda']:.3g}: median {fmt_pct(r.get('median_rel_error'))}, "
                    f"{fmt_count(r.get('terms'))} terms") for r in rows if _num(r.get("median_rel_error")) is not None]
            mean = [(r["lambda"], _num(r.get("mean_rel_error")), f"λ={r['lambda']:.3g}: mean {fmt_pct(r.get('mean_rel_error'))}")
                    for r in rows if _num(r.get("mean_rel_error")) is not None]
            chart.line(med, colour=MODEL_COLOUR, legend="median error")
            if mean:
                chart.line(mean, colour=MEAN_COLOUR, legend="mean error", dashed=True, markers=False)
            if terms:
                tp = [(r["lambda"], _num(r.get("terms")), f"λ={r['lambda']:.3g}: {fmt_count(r.get('terms'))} terms")
                      for r in rows if _num(r.get("terms")) is not None]
                chart.line(tp, colour=TERMS_COLOUR, legend="terms (right axis)", axis="right")
            chosen = [r for r in rows if r.get("chosen") is True]
            note = ""
            if chosen:
                c = chosen[0]
                chart.vline(c["lambda"], colour="#111827", text="chosen λ")
                chosen_lambda = f"{c['lambda']:.3g}"
                note = (f'<p class="note">Chosen λ = {_e(chosen_lambda)}: {_e(fmt_count(c.get("terms")))} terms, '
                        f'median {_e(fmt_pct(c.get("median_rel_error")))} held out.</p>')
            body = chart.svg() + note
        panels.append(f'<figure class="panel"><figcaption><h3><code>{_e(name)}</code></h3></figcaption>{body}</figure>')
    if not panels:
        return _na("Not available: this build has no metrics.")
    return f'<div class="grid">{"".join(panels)}</div>'


def _training_sizes(build: dict, order: list[str]) -> str:
    metrics = _d(build.get("metrics"))
    chosen_fraction = _num(_d(build.get("options")).get("train_fraction"))
    panels = []
    for name in order:
        evaluation = _d(_d(_d(metrics.get(name)).get("model")).get("evaluation"))
        rows = [dict(_d(r), fraction=_num(_d(r).get("fraction"))) for r in _l(evaluation.get("training_sizes"))]
        done = sorted((r for r in rows if not r.get("skipped") and r["fraction"] is not None
                       and _num(r.get("median_rel_error")) is not None), key=lambda r: r["fraction"])
        skipped = [r for r in rows if r.get("skipped")]
        if not done:
            body = _na("Training-size curve not available (the model was fitted without the sensitivity sweep).")
        else:
            xs = [_num(r["fraction"]) for r in done] + ([chosen_fraction] if chosen_fraction is not None else [])
            errs = [v for r in done for v in (_num(r.get("median_rel_error")), _num(r.get("mean_rel_error"))) if v is not None]
            chart = _Chart(f"training-size curve for {name}", _domain(xs, False, zero=True), _domain(errs, False, zero=True),
                           x_label="training fraction of the inputs", y_label="held-out relative error",
                           x_fmt=_pct_tick, y_fmt=_pct_tick)

            def tip(r, which):
                return (f"{fmt_pct(r['fraction'])} ({fmt_count(r.get('n_train_inputs'))} inputs): {which} "
                        f"{fmt_pct(r.get(which + '_rel_error'))}, {fmt_count(r.get('terms'))} terms")
            chart.line([(r["fraction"], _num(r["median_rel_error"]), tip(r, "median")) for r in done],
                       colour=MODEL_COLOUR, legend="median error")
            mean = [(r["fraction"], _num(r.get("mean_rel_error")), tip(r, "mean")) for r in done
                    if _num(r.get("mean_rel_error")) is not None]
            if mean:
                chart.line(mean, colour=MEAN_COLOUR, legend="mean error", dashed=True)
            if chosen_fraction is not None:
                chart.vline(chosen_fraction, colour="#111827", text="build's fraction")
            body = chart.svg()
        if skipped:
            items = "".join(f"<li>{_e(fmt_pct(r.get('fraction')))} ({_e(fmt_count(r.get('n_train_inputs')))} inputs): "
                            f"skipped, {_e(r.get('skipped'))}</li>" for r in skipped)
            body += f'<ul class="notes">{items}</ul>'
        panels.append(f'<figure class="panel"><figcaption><h3><code>{_e(name)}</code></h3></figcaption>{body}</figure>')
    if not panels:
        return _na("Not available: this build has no metrics.")
    return f'<div class="grid">{"".join(panels)}</div>'


def _source_listing(source: dict) -> str:
    lines = _l(source.get("lines"))
    first = _int(source.get("first_line"))
    if not lines or first is None:
        return ""
    hl = _l(source.get("highlight"))
    lo = _int(hl[0]) if len(hl) >= 1 else None
    hi = _int(hl[1]) if len(hl) >= 2 else lo
    out = []
    for n, text in enumerate(lines, first):
        mark = lo is not None and hi is not None and lo <= n <= hi
        out.append(f'<span class="srcline{" hl" if mark else ""}"><span class="ln">{n}</span>'
                   f'<span class="code">{_e(str(text).rstrip(chr(10)))}</span></span>')
    return f'<pre class="src">{"".join(out)}</pre>'


def _features(build: dict, anchors: dict[str, str]) -> str:
    features = [_d(f) for f in _l(build.get("features"))]
    if not features:
        return _na("Not available: this build recorded no chosen features.")
    overview, cards = [], []
    for f in features:
        fid = str(f.get("id", "?"))
        anchor = anchors.get(fid, "")
        where = f"{f.get('file') or '?'}:{f.get('line') if f.get('line') is not None else '?'}"
        metrics = ", ".join(str(m) for m in _l(f.get("metrics"))) or "—"
        cost_s, cost_fraction = _num(f.get("cost_s")), _num(f.get("cost_fraction"))
        overview.append(
            f'<tr><td><a href="#{anchor}"><code>{_e(fid)}</code></a></td><td>{_e(f.get("kind") or "—")}</td>'
            f'<td><code>{_e(where)}</code></td><td>{_e(metrics)}</td>'
            f'<td class="num" data-v="{"" if cost_s is None else cost_s}">{_e(fmt_value(cost_s, "s"))}</td>'
            f'<td class="num" data-v="{"" if cost_fraction is None else cost_fraction}">{_e(fmt_pct(cost_fraction))}</td></tr>'
        )
        meta = [
            ("kind", _e(f.get("kind") or "—") + (f" <small>({_e(f.get('detail'))})</small>" if f.get("detail") else "")),
            ("where", f"<code>{_e(where)}</code>" + (f" in <code>{_e(f.get('qualname'))}</code>" if f.get("qualname") else "")),
            ("metrics", _e(metrics)),
            ("evaluator cost", _e(f"{fmt_value(cost_s, 's')} per input, {fmt_pct(cost_fraction)} of run time"
                                  if cost_s is not None or cost_fraction is not None else "not measured")),
        ]
        listing = _source_listing(_d(f.get("source")))
        if not listing:
            snippet = f.get("snippet")
            listing = ((f'<pre class="src"><span class="srcline hl"><span class="ln">{_e(f.get("line") or "")}</span>'
                        f'<span class="code">{_e(snippet)}</span></span></pre>') if snippet else "")
            listing += _na("Source lines not available for this feature.")
        dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in meta)
        cards.append(f'<article class="feature" id="{anchor}"><h3><code>{_e(fid)}</code></h3>'
                     f'<dl class="meta">{dl}</dl>{listing}</article>')
    table = (f'<table class="sortable"><thead><tr><th>feature</th><th>kind</th><th>location</th><th>metrics</th>'
             f'<th>cost per input</th><th>cost / run time</th></tr></thead><tbody>{"".join(overview)}</tbody></table>')
    return table + "".join(cards)


def _feature_ref(fid: Any, anchors: dict[str, str]) -> str:
    fid = str(fid)
    return f'<a href="#{anchors[fid]}"><code>{_e(fid)}</code></a>' if fid in anchors else f"<code>{_e(fid)}</code>"


def _rounds(build: dict, anchors: dict[str, str]) -> str:
    rounds = [_d(r) for r in _l(build.get("rounds"))]
    if not rounds:
        return _na("Not available: this build recorded no cost-loop rounds.")
    rows = []
    for r in rounds:
        selected = "".join(f"<li>{_feature_ref(s, anchors)}</li>" for s in _l(r.get("selected"))) or "<li>—</li>"
        accepted = "".join(
            f"<li>{_feature_ref(_d(a).get('feature'), anchors)} <small>{_e(fmt_value(_d(a).get('cost_s'), 's'))}, "
            f"{_e(fmt_pct(_d(a).get('cost_fraction')))}</small></li>" for a in _l(r.get("accepted"))) or "<li>—</li>"
        rejected = []
        for x in _l(r.get("rejected")):
            x = _d(x)
            reason = str(x.get("reason") or "rejected")
            cls = {"too expensive": "cost", "unsliceable": "slice", "evaluator disagrees": "disagree"}.get(reason, "other")
            cost = ""
            if _num(x.get("cost_s")) is not None or _num(x.get("cost_fraction")) is not None:
                cost = f" <small>{_e(fmt_value(x.get('cost_s'), 's'))}, {_e(fmt_pct(x.get('cost_fraction')))}</small>"
            detail = f'<div class="detail">{_e(x.get("detail"))}</div>' if x.get("detail") else ""
            rejected.append(f'<li>{_feature_ref(x.get("feature"), anchors)} <span class="badge {cls}">{_e(reason)}</span>'
                            f'{cost}{detail}</li>')
        err = _num(r.get("median_rel_error"))
        rows.append(
            f'<tr><td class="num" data-v="{_e(_num(r.get("round")))}">{_e(r.get("round", "—"))}</td>'
            f'<td><code>{_e(r.get("metric") or "—")}</code></td><td><ul>{selected}</ul></td><td><ul>{accepted}</ul></td>'
            f'<td><ul>{"".join(rejected) or "<li>—</li>"}</ul></td>'
            f'<td class="num" data-v="{"" if err is None else err}">{_e(fmt_pct(err))}</td></tr>'
        )
    return ('<table class="sortable rounds"><thead><tr><th>round</th><th>metric</th><th>selected</th><th>accepted</th>'
            f'<th>rejected</th><th>held-out median error</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _evaluator(build: dict) -> str:
    ev = _d(build.get("evaluator"))
    if not ev:
        return _na("Not available: this build recorded no evaluator.")
    budget = _num(_d(build.get("options")).get("max_cost"))
    kept, total = _int(ev.get("statements_kept")), _int(ev.get("statements_total"))
    stmts = fmt_count(kept) + (f" of {fmt_count(total)} ({fmt_pct(kept / total)})" if kept is not None and total else "")
    facts = [("statements kept", stmts), ("files", fmt_count(ev.get("files"))),
             ("median cost", f"{fmt_pct(ev.get('median_fraction'))} of run time"),
             ("max cost", f"{fmt_pct(ev.get('max_fraction'))} of run time")]
    if budget is not None:
        facts.append(("budget", f"{fmt_pct(budget)} of run time"))
    dl = '<dl class="meta">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts) + "</dl>"
    costs = []
    for c in _l(ev.get("cost")):
        c = _d(c)
        fraction = _num(c.get("fraction"))
        if fraction is None and _num(c.get("evaluator_s")) is not None and _num(c.get("actual_s")):
            fraction = _num(c["evaluator_s"]) / _num(c["actual_s"])
        if fraction is not None:
            costs.append((fraction, c))
    if not costs:
        return dl + _na("Cost distribution not available: the build recorded no per-input evaluator costs.")
    values = [f for f, _ in costs]
    top = max(values + ([budget] if budget is not None else []))
    lo = min(0.0, min(values))
    hi = top * 1.05 if top > lo else lo + 0.01
    nbins = min(25, max(6, int(math.sqrt(len(values))) + 1))
    width = (hi - lo) / nbins
    counts = [0] * nbins
    for v in values:
        counts[min(int((v - lo) / width), nbins - 1)] += 1
    chart = _Chart("evaluator cost per input", (lo, hi), (0.0, max(counts) * 1.1 or 1.0),
                   x_label="evaluator time / program run time", y_label="inputs", x_fmt=_pct_tick,
                   y_ticks=_lin_ticks(0.0, max(counts) * 1.1 or 1.0, min_step=1.0))
    chart.bars([(lo + k * width, lo + (k + 1) * width, n,
                 f"{fmt_pct(lo + k * width)} – {fmt_pct(lo + (k + 1) * width)}: {n} input(s)")
                for k, n in enumerate(counts) if n], colour=MODEL_COLOUR)
    median = _num(ev.get("median_fraction"))
    if median is None:
        median = _median(values)
    if median is not None:
        chart.vline(median, colour="#111827", text=f"median {fmt_pct(median)}", dashed=False)
    if budget is not None:
        chart.vline(budget, colour=BUDGET_COLOUR, text=f"budget {fmt_pct(budget)}")
    costliest = sorted(costs, key=lambda t: -t[0])[:5]
    rows = "".join(
        f'<tr><td><code>{_e(c.get("input_id", "?"))}</code></td>'
        f'<td class="num" data-v="{_e(_num(c.get("evaluator_s")))}">{_e(fmt_value(c.get("evaluator_s"), "s"))}</td>'
        f'<td class="num" data-v="{_e(_num(c.get("actual_s")))}">{_e(fmt_value(c.get("actual_s"), "s"))}</td>'
        f'<td class="num" data-v="{f}">{_e(fmt_pct(f))}</td></tr>' for f, c in costliest)
    table = ('<table class="sortable compact"><thead><tr><th>input</th><th>evaluator</th><th>program run</th>'
             f'<th>fraction</th></tr></thead><tbody>{rows}</tbody></table>')
    return (f'{dl}<div class="grid"><figure class="panel">{chart.svg()}<figcaption class="sub">{len(values)} inputs'
            f'</figcaption></figure><div class="panel"><h3>Costliest inputs</h3>{table}</div></div>')


# ----------------------------------------------------------------------------------------------------
# page


_CSS = """
:root{--fg:#111827;--muted:#6b7280;--line:#e5e7eb;--bg:#f9fafb;--accent:#2563eb}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1320px;margin:0 auto;padding:0 24px 48px}
header{padding:20px 0 8px;border-bottom:1px solid var(--line)}
h1{margin:0 0 8px;font-size:26px;word-break:break-all}
h2{margin:32px 0 10px;font-size:20px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{margin:4px 0 6px;font-size:15px;word-break:break-all}
h3 small{color:var(--muted);font-weight:normal}
.kicker{margin:0;color:var(--muted);text-transform:uppercase;letter-spacing:.06em;font-size:12px}
nav{position:sticky;top:0;background:var(--bg);padding:8px 0;border-bottom:1px solid var(--line);z-index:2}
nav a{margin-right:14px;color:var(--accent);text-decoration:none;white-space:nowrap}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;word-break:break-all}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;background:#fff;margin:6px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
thead th{background:#f3f4f6;font-weight:600}
table.sortable thead th{cursor:pointer;user-select:none}
table.sortable thead th[aria-sort=ascending]::after{content:" ▲"}
table.sortable thead th[aria-sort=descending]::after{content:" ▼"}
td.num{text-align:right;white-space:nowrap}.strong{font-weight:600}
table.compact td,table.compact th{padding:2px 6px;font-size:12.5px}
td ul,ul.notes{margin:0;padding-left:18px}
.na{color:var(--muted);font-style:italic}
.note,.intro,.sub{color:var(--muted);font-size:13px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:16px}
.panel{margin:0;background:#fff;border:1px solid var(--line);border-radius:6px;padding:10px 12px;min-width:0;overflow-x:auto}
figcaption h3{display:inline;margin-right:8px}
svg.chart{width:100%;height:auto;display:block;font-family:system-ui,sans-serif}
svg .tick{font-size:11px;fill:#374151}svg .axis{font-size:12px;fill:#111827}svg .small{font-size:11px}
svg .grid{stroke:#eef0f3;stroke-width:1}
svg .pts circle:hover,svg .pts path:hover{stroke:#111827;stroke-width:2}
svg .lg{cursor:pointer}svg .lg.off{opacity:.35}svg .series.off{display:none}
article.feature{background:#fff;border:1px solid var(--line);border-radius:6px;padding:10px 12px;margin:12px 0}
pre.src{margin:6px 0 0;background:#f8fafc;border:1px solid var(--line);border-radius:4px;padding:6px 0;overflow-x:auto;
 font:12.5px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.srcline{display:block;padding:0 10px 0 0;white-space:pre}
.srcline.hl{background:#fef3c7;box-shadow:inset 3px 0 0 #f59e0b}
.ln{display:inline-block;min-width:3.5em;padding-right:12px;text-align:right;color:#9ca3af;user-select:none}
.badge{display:inline-block;border-radius:9px;padding:0 7px;font-size:11.5px;background:#e5e7eb}
.badge.cost{background:#fee2e2;color:#991b1b}.badge.slice{background:#ede9fe;color:#5b21b6}
.badge.disagree{background:#ffedd5;color:#9a3412}
.detail{color:var(--muted);font-size:12px}
details summary{cursor:pointer;color:var(--accent);margin-top:6px}
footer{margin-top:40px;color:var(--muted);font-size:12px}
@media print{nav{display:none}.panel,article.feature{break-inside:avoid}}
""".strip()

# Registered first, so that an error in any later script is recorded: ``data-script-errors`` on <html>.
_JS_ERRORS = """
(function () {
  var root = document.documentElement, errors = [];
  function record(message) {
    errors.push(String(message));
    root.setAttribute("data-script-errors", errors.join(" | "));
  }
  window.onerror = function (message, source, line) {
    record(message + (line ? " (line " + line + ")" : ""));
    return false;
  };
  window.addEventListener("unhandledrejection", function (event) {
    record("unhandled rejection: " + (event.reason && event.reason.message || event.reason));
  });
})();
""".strip()

# Sortable tables, legend toggles, and a self-check; the last statement marks the page rendered.
_JS_MAIN = """
(function () {
  "use strict";
  var root = document.documentElement;
  function each(list, fn) { Array.prototype.forEach.call(list, fn); }
  function key(cell) {
    var v = cell ? cell.getAttribute("data-v") : null;
    if (v !== null && v !== "" && !isNaN(Number(v))) { return Number(v); }
    return cell ? cell.textContent.trim().toLowerCase() : "";
  }
  each(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    var heads = table.tHead.rows[0].cells;
    each(heads, function (th, column) {
      th.tabIndex = 0;
      th.title = "sort by this column";
      function sort() {
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        rows.sort(function (a, b) {
          var x = key(a.cells[column]), y = key(b.cells[column]);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return x < y ? -dir : x > y ? dir : 0;
        });
        each(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        rows.forEach(function (row) { body.appendChild(row); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });
  each(document.querySelectorAll("svg .lg[data-toggle]"), function (entry) {
    function toggle() {
      var svg = entry.ownerSVGElement, id = entry.getAttribute("data-toggle");
      var off = entry.classList.toggle("off");
      entry.setAttribute("aria-pressed", off ? "false" : "true");
      each(svg.querySelectorAll('[data-series="' + id + '"]'), function (g) { g.classList.toggle("off", off); });
    }
    entry.addEventListener("click", toggle);
    entry.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); }
    });
  });
  var charts = document.querySelectorAll("svg.chart"), blank = 0;
  each(charts, function (svg) {
    var box = svg.getBoundingClientRect();
    if (box.width < 1 || box.height < 1) { blank += 1; }
  });
  root.setAttribute("data-svg-count", String(charts.length));
  root.setAttribute("data-svg-blank", String(blank));
  root.dataset.rendered = "ok";
})();
""".strip()


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


def render_report(build: dict, phases: dict[str, Any] | None = None) -> str:
    """The whole report page for a build dict (``build.json`` contents) as one HTML string, with a phase
    model's phases across runs when ``phases`` is given."""
    global _chart_ids
    if not isinstance(build, dict):
        raise ReportError(f"a build must be a JSON object, not {type(build).__name__}")
    _chart_ids = count(1)  # chart ids (legend toggles) start afresh: the same build gives the same page
    order = _metric_order(build)
    anchors = {}
    for n, f in enumerate(_l(build.get("features")), 1):
        fid = _d(f).get("id")
        if fid is not None and str(fid) not in anchors:
            anchors[str(fid)] = f"feat-{n}"
    sections = [
        ("summary", "Summary", _summary(build, order), ""),
        ("predicted", "Predicted vs actual", _predicted_vs_actual(build, order),
         "Each held-out input: the predictor's estimate (filled) and the black box's (rings) against the measured "
         "value; points on the dashed line are exact. Hover a point for its input; click a legend entry to hide it."),
        ("models", "Models", _models(build, order, anchors),
         "The polynomial per metric, largest terms first; each feature is min–max scaled to 0..1 before use."),
        ("lambda", "λ path", _lambda_path(build, order),
         "Held-out error and model size along the LASSO regularisation path; larger λ keeps fewer terms."),
        ("training", "Training-size curve", _training_sizes(build, order),
         "Held-out error when the model is fitted on a growing fraction of the inputs."),
        ("features", "Chosen features", _features(build, anchors),
         "The features the models use, with their source (the feature's lines highlighted) and what computing "
         "them in the evaluator costs."),
        ("rounds", "Cost-loop rounds", _rounds(build, anchors),
         "Each round selects features, slices an evaluator for them, and drops those that are too expensive, "
         "cannot be sliced, or whose evaluator disagrees with the instrumented program."),
        ("evaluator", "Evaluator cost", _evaluator(build),
         "Time the feature evaluator takes per input, as a fraction of the program's own run time."),
    ]
    if phases is not None:
        from mantispy.phases.report_section import phases_section

        sections.append(("phases", "Phases across runs", phases_section(phases),
                         "The phases the sampled runs went through (mantispy phases --fit), their per-phase models "
                         "and held-out errors."))
    nav = "".join(f'<a href="#{anchor}">{_e(title)}</a>' for anchor, title, _, _ in sections)
    body = "".join(_section(anchor, title, html_, intro) for anchor, title, html_, intro in sections)
    name = build.get("name") or "(unnamed program)"
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src {_csp_hash(_JS_ERRORS)} {_csp_hash(_JS_MAIN)}; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    footer = (f"<footer>Generated by mantispy {_e(__version__)} from a {_e(BUILD_FORMAT)} v{_e(build.get('version'))} "
              "build. Self-contained: no network, no server.</footer>")
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">{REPORT_MARK}'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>mantispy report: {_e(name)}</title>"
        f"<style>{_CSS}</style><script>{_JS_ERRORS}</script></head>\n"
        f"<body><main>{_header(build)}<nav>{nav}</nav>{body}{footer}</main>"
        f"<script>{_JS_MAIN}</script></body></html>\n"
    )


__all__ = ["BUILD_FORMAT", "BUILD_VERSION", "ReportError", "fmt_pct", "fmt_value", "load_build", "render_report",
           "write_report"]
