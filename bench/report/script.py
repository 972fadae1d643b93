"""The report page's own script (in a module, so that it ships with the package): the
filters, the sortable tables and the data each Vega-Lite view draws. It draws no chart
itself (vega-embed does) and writes text with textContent only: labels from result
files never become markup."""

from bench.report.script_charts import CHARTS
from bench.report.script_tables import TABLES

# The number formats, each row's texts and the filters' rows; the tables and the
# charts follow, in modules of their own.
_TEXTS = r"""
// bench report's page: filters, sortable tables and the data of the Vega-Lite views.
// It draws no chart itself (vega-embed does) and writes text with textContent only:
// labels from result files never become markup. Any value a result may hold (a NaN loss
// left out, a missing field) reads "n/a"; a part that fails anyway (a table, a chart, the
// texts of one table of data) says so on the page while the others draw.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("bench-data").textContent);
  const FILTERS = ["workload", "machine", "precision", "framework"];
  const chosen = { workload: "", machine: "", precision: "", framework: "" };
  const TABLE_ROWS = 500; // rows a table shows at most; its note says how many it holds
  const failures = [];

  // A part of the page that failed: named on the page (and in its own note), the rest
  // drawn. `where`: the element whose note says so, if any.
  function failed(part, error, where) {
    const line = "The page could not draw " + part + ": " + error;
    if (!failures.includes(line)) failures.push(line); // again at each filter: said once
    document.getElementById("failure").textContent = failures.join("\n");
    if (where) where.textContent = "Not drawn: " + error;
    console.error(error);
  }
  function guarded(part, make) {
    try {
      make();
    } catch (error) {
      failed(part, error);
    }
  }

  // A number to print: what JSON may carry for one is a finite number; the rest is n/a.
  function finite(v) { return typeof v === "number" && isFinite(v); }
  function missing(v) { return v === undefined || v === null; }
  function three(v) {
    v = Number(v.toPrecision(3));
    if (Math.abs(v) >= 100 || v === 0) return Math.round(v).toLocaleString("en-US");
    return v.toFixed(Math.max(0, 2 - Math.floor(Math.log10(Math.abs(v)))));
  }
  // bench.util.units.human: '5,437', '84.3 M', '0.0123'; past the prefixes or below 0.0001,
  // three digits in scientific notation ('8.00e-21', not 21 zeros).
  function human(v) {
    if (!finite(v)) return "n/a";
    if (v !== 0 && (Math.abs(v) < 1e-4 || Math.abs(v) >= 999.5e12)) return v.toExponential(2);
    if (Math.abs(v) >= 9995) {
      const x = Number(v.toPrecision(3));
      for (const [p, s] of [["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]]) {
        if (Math.abs(x) >= s) return three(x / s) + " " + p;
      }
    }
    if (Math.abs(v) >= 99.95) return Math.round(v).toLocaleString("en-US");
    return three(v);
  }
  function withInterval(v, lo, hi, unit) {
    if (missing(v)) return "";
    const ci = missing(lo) ? " (one run)" : " [" + human(lo) + "–" + human(hi) + "]";
    return human(v) + (unit ? " " + unit : "") + ci;
  }
  // Two decimals, or two significant digits below 0.1 (a CPU at 0.0036x of a GPU); a
  // digit more where the interval would print as a point (bench.util.units.ratio_with_interval).
  function times(v, extra = 0) {
    if (!finite(v)) return "n/a";
    return (v >= 0.1 ? v.toFixed(2 + extra) : v.toPrecision(2 + extra)) + "x";
  }
  function ratio(v, lo, hi) {
    if (missing(v)) return "";
    if (missing(lo) || missing(hi)) return times(v) + " (no interval)";
    let extra = 0;
    while (extra < 2 && times(lo, extra) === times(hi, extra)) extra += 1;
    return times(v, extra) + " [" + times(lo, extra) + "–" + times(hi, extra) + "]";
  }
  function fixed(v, digits) { return finite(v) ? v.toFixed(digits) : "n/a"; }
  function pct(v) { return missing(v) ? "" : finite(v) ? fixed(100 * v, 1) + "%" : "n/a"; }
  function gib(v) { return missing(v) ? "" : finite(v) ? fixed(v / 2 ** 30, 1) + " GiB" : "n/a"; }

  // Texts the tooltips and tables show, made once: each table of data on its own, so
  // that a failure in one leaves the others' charts and tables drawn.
  function text(v) { return missing(v) ? "" : String(v); }
  for (const name of ["points", "headline", "history", "like"]) {
    guarded("the texts of " + name, () => {
      for (const r of D[name]) {
        const made = r.point !== undefined ? D.points[r.point] : r; // a headline row: its point's
        const cmd = made === undefined ? undefined : made.cmd;
        r.command = cmd === undefined ? "" : text(D.commands[cmd]);
        r.tp_text = withInterval(r.tp, r.tp_lo, r.tp_hi, "samples/s") +
          (missing(r.unit_tp) ? "" : " · " + human(r.unit_tp) + " " + text(r.unit));
        r.rel_text = r.baseline ? "the baseline" : ratio(r.rel, r.rel_lo, r.rel_hi);
        r.base_text = withInterval(r.base_tp, r.base_lo, r.base_hi, "samples/s");
        // A tooltip's verdict: the baseline has none to give, but says what it is.
        r.verdict_text = !missing(r.sentence) ? text(r.sentence) : r.baseline ? "the baseline"
          : !missing(r.verdict) ? text(r.verdict) : "n/a";
      }
    });
  }
  guarded("the texts of points", () => {
    for (const r of D.points) {
      // A panel of lines over batch sizes: the row but its batch (devices, for scaling).
      r.panel = text(r.workload) + " · " + text(r.config).replace(/^bs \d+ /, "");
      r.scaling_panel = r.panel.replace(/ · \d+ devices?(?= · |$)/, "");
      if (finite(r.peak_mem)) r.peak_gib = r.peak_mem / 2 ** 30;
      r.epoch_text = missing(r.epoch_s) ? "" : human(r.epoch_s) + " s";
      const joules = !missing(r.energy_epoch_j) ? r.energy_epoch_j : r.energy_sample_j;
      r.energy_text = missing(joules) ? "" : human(joules) + " J";
      r.spj_text = human(r.spj);
      r.usd_text = missing(r.usd_per_m) ? "" : "$" + human(r.usd_per_m);
      r.usd_units_text = missing(r.usd_per_m_units) ? "" : "$" + human(r.usd_per_m_units);
      r.unit_text = missing(r.unit_per_device) ? "" : human(r.unit_per_device) + " " + text(r.unit);
      if (!missing(r.mfu)) r.mfu_text = pct(r.mfu); // else a tooltip's 'n/a', not a blank
      r.mem_text = gib(r.peak_mem);
      r.scaling_text = pct(r.scaling);
      r.top1_text = pct(r.top1);
    }
  });
  guarded("the texts of the accuracy curves", () => {
    for (const r of D.curves) {
      r.top1_text = pct(r.top1);
      r.panel = text(r.workload) + " · " + text(r.config);
    }
  });
  guarded("the texts of the loss curves", () => {
    for (const r of D.loss_curves) {
      // A diverged evaluation's loss (NaN) is not in the data: no point drawn, 'n/a' said.
      r.loss_text = fixed(r.loss, 3) + " (target " + text(r.target) + ")";
      r.at_text = (missing(r.evaluation) ? "" : "evaluation " + human(r.evaluation) + ": ") +
        human(r.tokens) + " tokens, " + human(r.wall_s) + " s";
      r.panel = text(r.workload) + " · " + text(r.config);
    }
  });
  guarded("the texts of history", () => {
    for (const r of D.history) {
      r.series = text(r.machine) + ": " + text(r.workload) + " " + text(r.config);
      if (r.runs > 1) r.tp_text += " (mean of " + r.runs + " runs that day)";
    }
  });
  guarded("the texts of the ladder", () => {
    for (const r of D.ladder) {
      r.speedup_text = missing(r.speedup) ? "skipped" : fixed(r.speedup, 2) + "x";
      r.kept_text = r.kept ? "kept" : "left out";
      r.panel = text(r.machine) + " · " + text(r.workload);
    }
  });
  guarded("the texts of the geometric means", () => {
    for (const r of D.geomean) r.rel_text = ratio(r.rel, r.rel_lo, r.rel_hi);
  });

  function keep(r, skip) {
    for (const f of FILTERS) {
      if (f !== skip && chosen[f] && r[f] !== undefined && r[f] !== chosen[f]) return false;
    }
    return true;
  }
  // The headline was made per precision too: with one chosen, each machine's best of it.
  function rowsOf(name) {
    if (name === "headline" || name === "geomean") {
      const scope = chosen.precision || "all";
      const found = D[name].filter((r) => r.scope === scope);
      return found.filter((r) => keep(r, "precision"));
    }
    return D[name].filter((r) => keep(r));
  }
"""

SCRIPT = _TEXTS + TABLES + CHARTS
