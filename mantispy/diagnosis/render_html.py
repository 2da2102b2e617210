"""The diagnosis as one self-contained HTML page (no script, no external file): the verdict, the touched
functions with their flagged share, counter, effect and the features' shares of the error drawn as bars,
the clusters and the total-CPU comparison."""

from __future__ import annotations

from html import escape

from mantispy.diagnosis.render_text import count_effect, headline
from mantispy.diagnosis.types import COUNT_KINDS, Diagnosis, Finding

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.3em; } .verdict { font-size: 1.15em; padding: .6em .8em; border-radius: 4px; }
.regression { background: #fde2e1; } .improvement { background: #e1f5e4; } .none { background: #eef1f5; }
table { border-collapse: collapse; margin: 1em 0; } td, th { padding: .25em .6em; border-bottom: 1px solid #ddd;
text-align: left; vertical-align: top; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; height: .8em; background: #d9534f; margin-right: .3em; vertical-align: middle; }
code { font-size: .92em; }
"""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{(value - 1) * 100:+.1f} %"


def _shares(finding: Finding) -> str:
    parts = []
    for feature, share in sorted(finding.counter_shares.items(), key=lambda item: -item[1]):
        parts.append(f"<div><span class='bar' style='width:{share * 120:.0f}px'></span>{escape(feature)} "
                     f"{share:.0%}</div>")
    return "".join(parts) or "-"


def render(diagnosis: Diagnosis, title: str = "mantispy diagnose") -> str:
    """The page."""
    kind = diagnosis.verdict if diagnosis.verdict in ("regression", "improvement") else "none"
    rows = []
    for f in diagnosis.findings:
        state = "regressed" if f.regressed else "improved" if f.improved else ""
        p = "-" if f.p_value is None else f"{f.p_value:.3f}"
        rows.append(f"<tr><td>{escape(state)}</td><td><code>{escape(f.function)}</code>"
                    f"{'' if f.baseline_function == f.function else ' (was <code>' + escape(f.baseline_function) + '</code>)'}"
                    f"</td><td>{'changed' if f.code_changed else 'caller'}</td>"
                    f"<td class='num'>{f.flagged}/{f.samples}</td><td>{escape(f.counter or '-')}</td>"
                    f"<td class='num'>{escape(_pct(f.effect))}</td><td class='num'>{p}</td><td>{_shares(f)}</td>"
                    f"<td>{escape(f.note)}</td></tr>")
    counts = "".join(
        f"<tr><td>{'more' if c.regressed else 'less'}</td><td><code>{escape(c.function)}</code></td>"
        f"<td>{escape(COUNT_KINDS[c.kind])}</td><td class='num'>{escape(count_effect(c))}</td>"
        f"<td class='num'>{c.baseline:.0f}</td><td class='num'>{c.candidate:.0f}</td>"
        f"<td class='num'>{c.moved}/{c.inputs}</td><td><code>{escape(c.cause)}</code></td></tr>"
        for c in diagnosis.count_changes)
    clusters = "".join(f"<li>{c.size} flagged runs: <code>{escape(c.function)}</code>, {escape(c.counter)}</li>"
                       for c in diagnosis.clusters) or "<li>none</li>"
    changes = diagnosis.changes
    change_items = []
    for key in ("changed", "added", "removed", "callers", "module_code_changed"):
        if changes.get(key):
            change_items.append(f"<li>{escape(key.replace('_', ' '))}: "
                                + ", ".join(f"<code>{escape(n)}</code>" for n in changes[key]) + "</li>")
    for old, new in changes.get("renamed", {}).items():
        change_items.append(f"<li>renamed: <code>{escape(old)}</code> to <code>{escape(new)}</code></li>")
    cpu = diagnosis.cpu_total
    cpu_p = "-" if cpu.p_value is None else f"{cpu.p_value:.3f}"
    floor = "-" if diagnosis.noise_floor is None else f"{diagnosis.noise_floor:.1%}"
    failed = "".join(f"<li>{escape(x['version'])} on {escape(x['input'])}: {escape(x['message'])}</li>"
                     for x in diagnosis.runs.get("failed", []))
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>{escape(title)}</h1>\n"
        f"<p class='verdict {kind}'>{escape(headline(diagnosis))}</p>\n"
        f"<p>{diagnosis.runs.get('baseline', 0)} baseline and {diagnosis.runs.get('candidate', 0)} candidate runs over "
        f"{diagnosis.runs.get('inputs', 0)} inputs; CPU noise floor {floor}; threshold mean + "
        f"{diagnosis.settings.k:g} sigma of the baseline's out-of-fold reconstruction errors.</p>\n"
        "<h2>Functions</h2><table><tr><th></th><th>function</th><th>role</th><th>flagged</th><th>counter</th>"
        "<th>effect (median input)</th><th>p (one-sided)</th><th>share of the flagged error</th><th>note</th></tr>"
        + "".join(rows) + "</table>\n"
        + ("<h2>Program counts that moved</h2><p>Exact counts of an instrumented copy, one run per version and "
           "input; the baseline and candidate columns are the median input's.</p><table><tr><th></th><th>function"
           "</th><th>count</th><th>effect (median input)</th><th>baseline</th><th>candidate</th><th>inputs moved"
           "</th><th>put down to</th></tr>" + counts + "</table>\n" if counts else "")
        + f"<h2>Flagged runs, clustered</h2><ul>{clusters}</ul>\n"
        f"<h2>Whole-process CPU</h2><p>{escape(_pct(cpu.ratio))} (p {cpu_p}): {escape(cpu.verdict)}</p>\n"
        f"<h2>Changes</h2><ul>{''.join(change_items) or '<li>none</li>'}</ul>\n"
        + (f"<h2>Failed runs</h2><ul>{failed}</ul>\n" if failed else "")
        + "</body></html>\n")
