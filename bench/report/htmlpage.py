"""report.html: one self-contained, interactive page that opens from file:// with no
network. It leads with the answer (per workload, each machine's best configuration,
its throughput with a 95% interval, the ratio to the baseline with the ratio's
interval and the verdict in words; a geometric mean over workloads per machine), then
the views the results hold their data for, then every point with the command that
made it.

Made of: the tidy data (bench.report.tidy) as JSON, the Vega-Lite specs
(bench.report.views), Vega + Vega-Lite + vega-embed inlined from vl-convert, and a
small script (bench/report/page.js) for filters and sortable tables. A content
security policy forbids every request: nothing leaves the file. Text from result files
is escaped for HTML where Python writes it, set with textContent where the script
does, and the JSON it travels in escapes '<', '>', '&' and U+2028/2029, so no
'</script>' in a label can end the data's script element.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from importlib import resources
from typing import Any

from bench.report import real_data
from bench.report import views as vega_views
from bench.report.compare import Comparison
from bench.report.headline import BEST_NOTE, LIKE_HEADERS, LIKE_NOTE, best_table, like_table
from bench.report.machines import machine_colours
from bench.report.tidy import Tidy
from bench.report.views import View
from bench.report.words import ratio
from bench.util.text import visible

# Scripts and styles inline only; nothing fetched (no network, no fonts, no images).
CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data:"
)
STYLE = """
body{font-family:system-ui,sans-serif;max-width:1180px;margin:auto;padding:0 1em;color:#212529}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}
td,th{border:1px solid #dee2e6;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f1f3f5;cursor:pointer;user-select:none}
tr[data-verdict=faster] .c-sentence{color:#2b8a3e}tr[data-verdict=slower] .c-sentence{color:#c92a2a}
.c-command{font-family:monospace;font-size:.9em;max-width:34em;overflow-wrap:anywhere}
#filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #dee2e6;
z-index:2;display:flex;flex-wrap:wrap;gap:.4em 1em;align-items:center}
#filters select{max-width:22em}.note,.cap{color:#495057;font-size:.85em}
.chart{max-width:100%;overflow-x:auto}#failure{color:#c92a2a;white-space:pre-line}
details{margin:.5em 0}summary{cursor:pointer}
#filter-toggle{cursor:pointer}
@media (max-width:640px){
body{padding:0 .5em}table{display:block;overflow-x:auto;max-width:100%}
#answer table,#answer tbody,#answer tr,#answer td{display:block}#answer thead{display:none}
#answer tr{border:1px solid #dee2e6;margin:.5em 0;padding:.2em 0}
#answer td{border:0;padding:1px 6px}
#answer td::before{content:attr(data-label) ": ";font-weight:600}#answer td:empty{display:none}
#filters{position:static}#filters.folded label,#filters.folded #reset{display:none}
#filter-toggle::after{content:" ▾"}#filters.folded #filter-toggle::after{content:" ▸"}
.c-command{max-width:none}
}
"""
_UNSAFE_IN_SCRIPT = re.compile("[<>&\u2028\u2029\x7f-\x9f]")


@functools.cache
def page_script() -> str:
    """The page's own script, bench/report/page.js (shipped with the package): the filters,
    the sortable tables and the rows each Vega-Lite view draws. It draws no chart itself
    (vega-embed does) and writes text with textContent only: labels from result files never
    become markup."""
    return resources.files("bench.report").joinpath("page.js").read_text(encoding="utf-8")


def compact(value: Any) -> Any:
    """Floats to 5 significant digits (the page shows 3): a fleet's page stays small.
    Where those 5 digits end in a 5, a shorter rounding of them would be a tie the raw
    value is not (9.0949934 kept as 9.095 printed 9.10 where report.md printed 9.09):
    such a value keeps a digit more (9.09499), until its last is not a 5, so that every
    shorter rounding of it is the raw value's."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return value
        for kept in range(5, 17):  # almost always 5, else 6
            digits = f"{abs(value):.{kept - 1}e}".partition("e")[0].replace(".", "").rstrip("0")
            if not digits.endswith("5"):
                return float(f"{value:.{kept}g}")
        return value
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


def script_json(data: Any) -> str:
    """JSON to sit inside a <script> element: '<', '>', '&', U+2028/2029 and C1
    controls as \\uXXXX escapes, so that no text in it can close the element or open a
    comment; JSON.parse reads them back unchanged."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _UNSAFE_IN_SCRIPT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _h(text: Any) -> str:
    """Text for the page: HTML's specials as entities, control characters visible."""
    return html.escape(visible(str(text)))


def _table(table_id: str, headers: list[str], rows: list[list[str]]) -> str:
    """A table as the page first shows it (the script redraws it, sortable and filtered;
    without a script it stays readable)."""
    head = "".join(f"<th>{_h(h)}</th>" for h in headers)
    # Each cell names its column: a phone's screen shows a row as a card of them.
    body = "".join(
        "<tr>"
        + "".join(
            f'<td data-label="{_h(h)}">{_h(c)}</td>' for h, c in zip(headers, r, strict=False)
        )
        + "</tr>"
        for r in rows
    )
    return (
        f'<table id="table-{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        f'<p class="note" id="note-{table_id}"></p>'
    )


def _like_html(t: Tidy) -> str:
    return (
        "<h3>Like with like: on a configuration both ran</h3>"
        f"<p class='note'>{_h(LIKE_NOTE)}</p>" + _table("like", LIKE_HEADERS, like_table(t.like))
    )


def _headline_html(t: Tidy, several: bool) -> str:
    parts = [_table("headline", *best_table(t.headline, several))]
    if several:
        parts.insert(0, f"<h3>Each machine's best (tuned) configuration</h3><p class='note'>"
                        f"{_h(BEST_NOTE)}</p>")  # fmt: skip
        parts.insert(0, _like_html(t))
        means = [r for r in t.geomean if r["scope"] == "all"]
        parts.append(
            "<h3>Geometric mean over workloads</h3><p class='note'>Of each machine's "
            "best-to-baseline ratios over the workloads both measured, as pyperf's "
            "compare_to and OpenBenchmarking.org summarise. Its 95% interval takes each "
            "workload's ratio interval as normal in log space and the workloads as "
            "independent: half-widths added in quadrature, over the count of workloads. A "
            "machine with a workload of one run has none.</p>"
        )
        parts.append(
            _table(
                "geomean",
                [
                    "machine",
                    "workloads",
                    "geometric mean vs the baseline [95% interval]",
                    "verdict",
                ],
                [
                    [r["machine"], str(r["workloads"]), ratio(r), r.get("sentence", "")]
                    for r in means
                ],
            )
        )
    return "".join(parts)


# Who ran what, on what: each table's columns, (the tidy row's key a column sorts by, its
# heading, the key of the text it shows where not that one), for the page's script (which
# reads them from the page's data), its first drawing and report.md alike.
COVERAGE = (("workload", "workload"), ("machine", "machine"),
            ("ran", "configurations ran", "ran_text"),
            ("shared", "of them, the baseline ran", "shared_text"),
            ("configs", "which"))  # fmt: skip
INVENTORY = (("machine", "machine"), ("accelerator", "accelerator"), ("driver", "driver"),
             ("runtime", "CUDA / ROCm"), ("frameworks", "frameworks"),
             ("power_limit", "power limit"), ("image", "image"), ("cpu", "CPU"),
             ("results", "results"))  # fmt: skip
Table = tuple[list[str], list[list[str]]]


def who_ran_what(t: Tidy) -> tuple[Table, Table]:
    """The configurations each machine ran of each workload (and how many the baseline
    ran too), and each machine's software and settings: (headings, rows) each."""
    return _columns(COVERAGE, t.coverage), _columns(INVENTORY, t.inventory)


def _columns(columns: tuple[tuple[str, ...], ...], rows: list[dict[str, Any]]) -> Table:
    shown = [column[2] if len(column) > 2 else column[0] for column in columns]
    return [column[1] for column in columns], [[str(r.get(k, "")) for k in shown] for r in rows]


def _inventory_html(t: Tidy) -> str:
    """Who ran what, on what (who_ran_what), as the page's section."""
    if not t.inventory:
        return ""
    cover, machines = who_ran_what(t)
    return (
        "<section id='coverage'><h2>Who ran what, on what</h2><p class='note'>Each "
        "machine's configurations of each workload, and how many of them the baseline ran "
        "too: a ratio exists only there.</p>"
        + _table("coverage", *cover)
        + "<h3>The machines</h3>"
        + _table("inventory", *machines)
        + "</section>"
    )


REAL_DATA_HEADING = "Is each machine fed? Real data beside synthetic"


def _real_data_html(comparison: Comparison) -> str:
    """Each machine's configurations on real data beside the same on synthetic data
    (bench.report.real_data): a section where some machine ran both."""
    headers, rows = real_data.grid(comparison.real_data)
    if not rows:
        return ""
    caption = real_data.CAPTION[0].upper() + real_data.CAPTION[1:]
    return (
        f"<section id='real-data'><h2>{_h(REAL_DATA_HEADING)}</h2>"
        f"<p class='note'>{_h(caption)}.</p>" + _table("real-data", headers, rows) + "</section>"
    )


def _filters() -> str:
    selects = "".join(
        f'<label>{name} <select id="filter-{name}"><option value="">all</option></select></label>'
        for name in ("workload", "machine", "precision", "framework")
    )
    return (
        f'<nav id="filters"><strong id="filter-toggle">Filter</strong>{selects}'
        '<button id="reset" type="button">all</button></nav>'
    )


def _view_html(view: View) -> str:
    return (
        f'<section class="view" id="view-{view.id}"><h2>{_h(view.title)}</h2>'
        f'<p class="note">{_h(view.caption)}</p><p class="cap"></p><div class="chart"></div>'
        "</section>"
    )


def _notes_html(notes: list[tuple[str, list[str]]]) -> str:
    """Notes folded by reason: one line each, the details (file names) folded away."""
    parts = []
    for summary, lines in notes:
        if not lines:
            parts.append(f"<p class='note'>{_h(summary)}</p>")
            continue
        items = "".join(f"<li>{_h(line)}</li>" for line in lines)
        parts.append(f"<details><summary>{_h(summary)}</summary><ul>{items}</ul></details>")
    return "".join(parts)


def page(
    comparison: Comparison,
    t: Tidy,
    views: list[View],
    *,
    title: str,
    lead: str,
    notes: list[tuple[str, list[str]]],
    figures: list[str],
    tables: str = "",
    bundle: str | None = None,
) -> str:
    """The whole page as text; `tables`: report.md's tables as HTML (escaped), folded;
    `bundle`: Vega's script where it was made already (bench.report.vega.Renderers)."""
    several = len(comparison.machines) > 1
    if not any("tp" in r for r in t.points):
        answer = "<p>No result holds a measured point: there is nothing to compare.</p>"
    else:
        answer = _headline_html(t, several)
    if t.points and not several:
        answer = (
            "<p>One machine: its own figures, nothing to set them against (add the results "
            "of another machine to compare).</p>" + answer
        )
    heading = (
        "Which machine is faster at what, by how much, how sure"
        if several
        else "Each workload's fastest configuration"
    )
    data = {
        **compact(t.as_data()),
        "several": several,
        "colours": t.colours or machine_colours(t.machines),
        "palette": vega_views.MACHINE_COLOURS,
        "chart_width": vega_views.WIDTH,  # the script narrows charts to a narrow screen
        "columns": {"coverage": COVERAGE, "inventory": INVENTORY},
        "views": [
            {
                "id": v.id,
                "data": v.data,
                "cap": v.cap,
                "spec": v.spec,
                "needs": v.needs,
                "along": v.along,
                "panels": v.panels,
                "rank_by": v.rank_by,
            }
            for v in views
        ],
    }
    links = " ".join(
        f'<a href="{_h(name)}.svg">{_h(name)}</a> (<a href="{_h(name)}.png">PNG</a>)'
        for name in figures
    )
    static = (
        "<p class='note'>Figures for papers (the views above as first drawn, SVG and PNG "
        f"beside this page): {links}</p>"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_h(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{_h(title)}</h1><p>{_h(lead)}</p><p id='failure'></p>{_filters()}"
        f"<section id='answer'><h2>{_h(heading)}</h2>"
        f"{answer}</section>"
        + "".join(_view_html(v) for v in views)
        + _real_data_html(comparison)
        + _inventory_html(t)
        + "<section id='every-point'><h2>Every point, with the command that made it</h2>"
        "<p><label>search <input id='search' type='search'></label></p>"
        + _table("points", [], [])
        + "</section>"
        + (
            f"<details id='tables'><summary>The tables of report.md</summary>{tables}</details>"
            if tables
            else ""
        )
        + "<section id='notes'><h2>Notes</h2>"
        + _notes_html(notes)
        + (static if figures else "")
        + "</section>"
        f"<script type='application/json' id='bench-data'>{script_json(data)}</script>"
        f"<script>{bundle if bundle is not None else vega_views.bundle()}</script>"
        f"<script>{page_script()}</script></body></html>"
    )
