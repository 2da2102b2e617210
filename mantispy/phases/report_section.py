"""The build report's "Phases across runs" section, from a phase model (``mantispy report --phases``).

It shows every phase the campaign's runs went through, in their usual order: what it runs (its
distinctive functions), in how many training runs it appeared, what each of its models reads and their
held-out errors, and the run's duration as the sum of its phases beside the whole-run model.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .observe import METRIC_WORDS, PHASE_METRICS

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7")


def _pct(value: Any) -> str:
    return f"{value:.1%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"


def _bar(model: dict[str, Any], order: list[str]) -> str:
    """The phases in their usual order, one box each (hover for what it runs)."""
    width, x, parts = 900.0, 0.0, []
    step = width / max(len(order), 1)
    for n, label in enumerate(order):
        colour = PALETTE[n % len(PALETTE)]
        parts.append(f'<rect x="{x:.1f}" y="0" width="{step - 2:.1f}" height="26" fill="{colour}" data-phase="{escape(label)}">'
                     f"<title>{escape(label)}: {escape(str(model['phases'][label].get('name', '')))}</title></rect>"
                     f'<text x="{x + 6:.1f}" y="17" fill="#fff" font-size="12">{escape(label)}</text>')
        x += step
    return f'<svg viewBox="0 0 {width:.0f} 28" width="100%" role="img" aria-label="phases in their usual order">{"".join(parts)}</svg>'


def phases_section(model: dict[str, Any]) -> str:
    """The section's HTML (a phase model as written by ``mantispy phases --fit``)."""
    phases = model.get("phases", {})
    order = sorted(phases, key=lambda label: (float(phases[label].get("position", 0)), label))
    evaluation = model.get("evaluation", {}) if isinstance(model.get("evaluation"), dict) else {}
    errors = evaluation.get("phases", {}) if isinstance(evaluation.get("phases"), dict) else {}
    rows = []
    for label in order:
        phase = phases[label]
        cells = []
        for metric in PHASE_METRICS:
            fitted = phase.get("metrics", {}).get(metric)
            if fitted is None:
                cells.append("<td>–</td>")
                continue
            selection = fitted.get("model", {}).get("selection", {})
            held = errors.get(label, {}).get(metric, {}).get("median_rel_error")
            cells.append(f"<td>{_pct(held)}<br><small>{escape(str(selection.get('chosen', '')).split(' ')[-1])} of "
                         f"{escape(str(selection.get('uses', '')))}</small></td>")
        rows.append(f"<tr><td>{escape(label)}</td><td>{escape(str(phase.get('name', '')))}</td>"
                    f"<td>{int(phase.get('runs', 0))}</td>{''.join(cells)}</tr>")
    head = "".join(f"<th>{escape(METRIC_WORDS[m])}</th>" for m in PHASE_METRICS)
    table = (f"<table><thead><tr><th>phase</th><th>what it runs</th><th>runs</th>{head}</tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table>")
    total = evaluation.get("total_wall_s")
    summary = ""
    if isinstance(total, dict):
        summary = (f"<p>Run duration on {int(total.get('n', 0))} held-out run(s), median error: sum of the phases' "
                   f"models {_pct(total.get('sum_of_phases'))}, whole-run model {_pct(total.get('whole_run'))}.</p>")
    rare = model.get("rare", {})
    rare_text = ""
    if isinstance(rare, dict) and rare:
        items = "".join(f"<li>{escape(label)}: {escape(str(info.get('name', '')))} ({int(info.get('runs', 0))} run(s))</li>"
                        for label, info in rare.items() if isinstance(info, dict))
        rare_text = f"<p>Too rare to model (a check flags them only when they outlast every training run):</p><ul>{items}</ul>"
    training = model.get("training", {})
    intro = (f"<p>{int(training.get('runs', 0))} sampled runs of {int(training.get('inputs', 0))} inputs; "
             f"{len(order)} phase(s) modelled. Each cell: held-out median relative error, then the model's form and "
             "what it reads.</p>")
    return f'<div class="phases">{intro}{_bar(model, order)}{table}{summary}{rare_text}</div>'
