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

  // ---- tables: sortable by any column, filtered with the charts
  const TABLES = {
    headline: {
      cols: [["workload", "workload"], ["machine", "machine"], ["config", "best configuration"],
        ["tp", "throughput (samples/s) [95% interval]", "tp_text"],
        ["per_usd", "per dollar · per joule", "eff_text"],
        ["rel", "vs the baseline [95% interval]", "rel_text"], ["sentence", "verdict"],
        ["differs", "differs from the baseline's best"]],
    },
    like: {
      cols: [["workload", "workload"], ["machine", "machine"], ["config", "configuration both ran"],
        ["tp", "throughput (samples/s) [95% interval]", "tp_text"],
        ["base_tp", "the baseline's [95% interval]", "base_text"],
        ["rel", "vs the baseline [95% interval]", "rel_text"], ["sentence", "verdict"],
        ["per_usd", "per dollar · per joule", "eff_text"],
        ["shared", "configurations shared", "shared_text"]],
    },
    // Who ran what, on what: the columns bench.report.htmlpage declares (COVERAGE, INVENTORY).
    coverage: { cols: D.columns.coverage },
    inventory: { cols: D.columns.inventory },
    geomean: {
      cap: 25, // a fleet's ranking: its head first (sort a column for its tail)
      cols: [["machine", "machine"], ["workloads", "workloads"],
        ["rel", "geometric mean vs the baseline [95% interval]", "rel_text"],
        ["sentence", "verdict"]],
    },
    points: {
      cols: [["machine", "machine"], ["framework", "framework"], ["workload", "workload"],
        ["config", "configuration"], ["status", "status"],
        ["tp", "throughput (samples/s) [95% interval]", "tp_text"],
        ["rel", "vs the baseline [95% interval]", "rel_text"], ["sentence", "verdict"],
        ["date", "measured"], ["command", "command"]],
    },
  };
  const sorted = {};
  if (!D.several) { // one machine: nothing to be relative to
    for (const name of ["headline", "points"]) {
      TABLES[name].cols = TABLES[name].cols.filter(([key]) =>
        key !== "rel" && key !== "sentence" && key !== "differs");
    }
  }

  function cell(tr, text, tag) {
    const td = document.createElement(tag || "td");
    td.textContent = text === undefined ? "" : String(text);
    tr.appendChild(td);
    return td;
  }

  function compare(a, b, key) {
    const x = a[key], y = b[key];
    if (x === undefined) return y === undefined ? 0 : 1;
    if (y === undefined) return -1;
    if (typeof x === "number" && typeof y === "number") return x - y;
    return String(x).localeCompare(String(y), "en", { numeric: true });
  }

  function drawTable(name) {
    const table = document.getElementById("table-" + name);
    if (!table) return;
    const spec = TABLES[name];
    let rows = rowsOf(name);
    const query = name === "points" ? document.getElementById("search").value.toLowerCase() : "";
    if (query) {
      const has = (r, k, t) => String(r[t || k] || "").toLowerCase().includes(query);
      rows = rows.filter((r) => spec.cols.some(([k, , t]) => has(r, k, t)));
    }
    const order = sorted[name];
    if (order) {
      rows = rows.slice().sort((a, b) => order.dir * compare(a, b, order.key));
    }
    // A fleet's headline holds the machines the charts draw, every workload of each: a
    // first screen of the 500 machines of one workload answered nothing.
    let lead = "";
    const all = new Set(rows.map((r) => r.machine)).size;
    if (name === "headline" && all > CHART_MACHINES) {
      rows = firstMachines(rows);
      lead = "The baseline and the " + (CHART_MACHINES - 1) + " fastest of " + all +
        " machines (by geometric mean), as the charts draw them: choose a machine to see another. ";
    }
    let why = rows.length ? "" : chosen.workload || chosen.machine || chosen.precision ||
      chosen.framework ? "No rows under these filters." : "No rows.";
    if (name === "geomean" && chosen.workload) { // a mean over workloads: not of one
      rows = [];
      why = "A mean over workloads: with one workload chosen, the table above is its answer.";
    }
    table.replaceChildren();
    const head = document.createElement("tr");
    for (const [key, title] of spec.cols) {
      const arrow = order && order.key === key ? (order.dir > 0 ? " ▲" : " ▼") : "";
      const th = cell(head, title + arrow, "th");
      th.dataset.key = key;
      th.title = "sort";
      th.addEventListener("click", () => {
        const same = sorted[name] && sorted[name].key === key;
        sorted[name] = { key: key, dir: same ? -sorted[name].dir : 1 };
        drawTable(name);
      });
    }
    const thead = document.createElement("thead");
    thead.appendChild(head);
    const tbody = document.createElement("tbody");
    const cap = spec.cap || TABLE_ROWS;
    for (const r of rows.slice(0, cap)) {
      const tr = document.createElement("tr");
      if (r.verdict) tr.dataset.verdict = r.verdict;
      for (const [key, title, text] of spec.cols) {
        const td = cell(tr, r[text || key]);
        td.className = "c-" + key;
        td.dataset.label = title; // a phone shows a row as a card of labelled cells
      }
      tbody.appendChild(tr);
    }
    table.append(thead, tbody);
    const note = document.getElementById("note-" + name);
    if (note) {
      const narrow = name === "points" ? "filter or search to narrow." : "filter to narrow.";
      note.textContent = lead + (rows.length > cap
        ? "Showing " + cap + " of " + rows.length.toLocaleString("en-US") + " rows: " +
          (spec.cap ? "sort by a column to see the other end, or " : "") + narrow : why);
    }
  }

  // ---- charts: Vega-Lite specs, their named table replaced by the filtered rows
  // Vega-Lite warns of a facet whose layers share a categorical axis ('Detected faceted
  // independent scales that union domain of the same fields from different source'):
  // every layer here reads the one named table, which is what it then assumes. That one
  // warning is dropped while a chart is made; any other reaches the console.
  // A chart as wide as its section: on a narrow screen its plot narrows, its axis
  // labels and legend with it (a 560-pixel plot and 260-pixel labels were cut at 330).
  function fit(spec, room) {
    const wide = D.chart_width + 320;
    if (!(room > 0) || room >= wide) return spec;
    const plot = Math.max(140, room - 200);
    const walk = (x, key) => {
      if (Array.isArray(x)) return x.map((v) => walk(v));
      if (!x || typeof x !== "object") {
        return key === "width" && typeof x === "number" ? Math.min(x, plot) : x;
      }
      const out = {};
      for (const [k, v] of Object.entries(x)) out[k] = walk(v, k);
      const labels = Math.max(80, room - 200);
      if (key === "legend") Object.assign(out, { columns: 1, labelLimit: labels });
      if (key === "axis" || key === "header") out.labelLimit = 110;
      if (key === "config" && out.view) out.view.continuousWidth = plot;
      return out;
    };
    return walk(spec);
  }
  const SPURIOUS = "Detected faceted independent scales that union domain";
  async function quietly(make) {
    const warn = console.warn;
    console.warn = (...args) => {
      if (!args.some((a) => String(a).includes(SPURIOUS))) warn.apply(console, args);
    };
    try {
      return await make();
    } finally {
      console.warn = warn;
    }
  }
  const charts = [];
  const CHART_MACHINES = 10; // machines a chart draws at most, each named in its legend
  const ranks = new Map();
  D.geomean.filter((r) => r.scope === "all").sort((a, b) => b.rel - a.rel)
    .forEach((r, n) => ranks.set(r.machine, n + 1));
  for (const r of D.headline) if (r.baseline) ranks.set(r.machine, 0);
  function rank(machine) {
    return ranks.has(machine) ? ranks.get(machine) : 1e9;
  }
  // The rows of the CHART_MACHINES machines ranked first: the baseline, then the fastest.
  function firstMachines(rows) {
    const machines = [...new Set(rows.map((r) => r.machine))];
    const kept = new Set(machines.sort((a, b) => rank(a) - rank(b)).slice(0, CHART_MACHINES));
    return rows.filter((r) => kept.has(r.machine));
  }
  // Colours: each machine its own on every chart (bench.report.machines, from its name).
  const DATA = ["points", "headline", "like", "geomean", "history", "ladder", "curves",
    "loss_curves", "max_batch"];
  const seen = DATA.flatMap((name) => D[name].map((r) => r.machine)).filter((m) => !missing(m));
  const ORDER = new Map([...new Set(seen)].sort((a, b) => rank(a) - rank(b)).map((m, i) => [m, i]));
  function position(machine) {
    return ORDER.has(machine) ? ORDER.get(machine) : ORDER.size;
  }
  // Charts set a machine's bars side by side by its number, in the legend's order: never
  // by its name, which Vega reads as an object's key ('toString' stopped every bar chart).
  for (const name of DATA) {
    for (const r of D[name]) if (!missing(r.machine)) r.machine_index = position(r.machine);
  }
  // Each machine's colour on every chart, from its identity (bench.report.machines).
  function colourOf(machine) {
    const own = Object.prototype.hasOwnProperty.call(D.colours, machine);
    return own ? D.colours[machine] : D.palette[position(machine) % D.palette.length];
  }
  function recoloured(spec, drawn) {
    const range = drawn.map(colourOf);
    const walk = (x) => {
      if (Array.isArray(x)) return x.map(walk);
      if (!x || typeof x !== "object") return x;
      const out = {};
      for (const [k, v] of Object.entries(x)) out[k] = walk(v);
      const colour = out.color;
      if (colour && colour.field === "machine" && colour.scale) {
        out.color = Object.assign({}, colour, { scale: { domain: drawn, range: range } });
      }
      return out;
    };
    return walk(spec);
  }
  // A view is embedded when it first has rows (its spec given them as its named
  // dataset: Vega draws no empty scale), then fed each filter's rows.
  // A line view draws only the panels where a machine has two x values or more.
  function along(rows, x) {
    const xs = new Map();
    for (const r of rows) {
      const key = r.machine + "\u0000" + r.panel;
      if (!xs.has(key)) xs.set(key, new Set());
      xs.get(key).add(r[x]);
    }
    const panels = new Set();
    for (const [key, values] of xs) if (values.size > 1) panels.add(key.split("\u0000")[1]);
    return rows.filter((r) => panels.has(r.panel));
  }

  async function drawChart(c) {
    let rows = rowsOf(c.data);
    // A point out of memory has no figure to draw: said, not silently missing.
    const oom = c.needs === "tp" ? rows.filter((r) => r.status === "oom").length : 0;
    if (c.needs) rows = rows.filter((r) => r[c.needs] !== undefined);
    if (c.along) rows = along(rows, c.along);
    const notes = [];
    if (oom) {
      notes.push(oom + " point" + (oom > 1 ? "s" : "") + " ran out of memory: not drawn, " +
        "marked oom in the table of every point.");
    }
    const machines = new Set(rows.map((r) => r.machine)).size;
    if (machines > CHART_MACHINES && c.rank_by) { // a cost chart: the cheapest
      const least = new Map();
      for (const r of rows) {
        const v = r[c.rank_by];
        if (finite(v) && !(least.get(r.machine) <= v)) least.set(r.machine, v);
      }
      const kept = new Set([...least.keys()].sort((a, b) => least.get(a) - least.get(b))
        .slice(0, CHART_MACHINES));
      rows = rows.filter((r) => kept.has(r.machine));
      notes.push("Drawing " + CHART_MACHINES + " of " + machines + " machines (the " +
        "cheapest, by their lowest figure here): choose a machine to see another.");
    } else if (machines > CHART_MACHINES) {
      rows = firstMachines(rows);
      notes.push("Drawing " + CHART_MACHINES + " of " + machines + " machines (the " +
        "baseline, then the fastest by geometric mean): choose a machine to see another.");
    }
    const [facet, most] = c.panels || [null, Infinity];
    const panels = facet ? [...new Set(rows.map((r) => r[facet]))] : [];
    if (panels.length > most) {
      const kept = new Set(panels.slice(0, most));
      rows = rows.filter((r) => kept.has(r[facet]));
      notes.push("Drawing " + most + " of " + panels.length + " panels: choose a machine " +
        "or a workload to see the others.");
    }
    const shown = rows.slice(0, c.cap);
    if (rows.length > c.cap) {
      notes.push("Drawing the first " + c.cap + " of " + rows.length.toLocaleString("en-US") +
        " rows: choose a workload to see the rest.");
    }
    c.section.hidden = rows.length === 0;
    c.note.textContent = notes.length ? notes.join(" ") + " The tables hold all." : "";
    if (!rows.length) return;
    // The legend names the machines drawn, no others: a new set of them, a new view.
    const drawn = [...new Set(shown.map((r) => r.machine).filter((m) => m !== undefined))]
      .sort((a, b) => position(a) - position(b));
    const key = drawn.join("\u0000");
    if (!c.view || c.drawn !== key) {
      if (c.view) c.view.finalize();
      const fitted = fit(recoloured(c.spec, drawn), c.section.clientWidth);
      const spec = Object.assign(fitted, { datasets: { [c.data]: shown } });
      const out = await quietly(() => vegaEmbed(c.section.querySelector(".chart"), spec,
        { actions: false, renderer: "svg", tooltip: { theme: "light" } }));
      c.view = out.view;
      c.drawn = key;
      return;
    }
    const changes = c.view.changeset().remove(() => true).insert(shown);
    await c.view.change(c.data, changes).resize().runAsync();  // shrinks as well as grows
  }

  // Each table and chart on its own: one that fails says so in its note, the rest draw.
  function update() {
    for (const f of FILTERS) chosen[f] = document.getElementById("filter-" + f).value;
    for (const name of Object.keys(TABLES)) {
      try {
        drawTable(name);
      } catch (error) {
        failed("the table of " + name, error, document.getElementById("note-" + name));
      }
    }
    return Promise.all(charts.map((c) => drawChart(c).catch((error) => {
      failed("the chart '" + c.title + "'", error, c.note);
    })));
  }

  function options() {
    for (const f of FILTERS) {
      const select = document.getElementById("filter-" + f);
      const values = [...new Set(D.points.map((r) => r[f]).filter((v) => v !== undefined))].sort();
      for (const v of values) {
        const o = document.createElement("option");
        o.value = v;
        o.textContent = v;
        select.appendChild(o);
      }
      select.closest("label").hidden = values.length < 2;
      select.addEventListener("change", update);
    }
    document.getElementById("search").addEventListener("input", () => drawTable("points"));
    // A phone's screen folds the filters under their heading: the bar took 11% of it.
    const bar = document.getElementById("filters");
    const toggle = document.getElementById("filter-toggle");
    const narrow = typeof matchMedia === "function" && matchMedia("(max-width: 640px)").matches;
    if (bar && toggle) {
      if (narrow) bar.classList.add("folded");
      toggle.addEventListener("click", () => bar.classList.toggle("folded"));
    }
    document.getElementById("reset").addEventListener("click", () => {
      for (const f of FILTERS) document.getElementById("filter-" + f).value = "";
      update();
    });
  }

  // A tooltip's field a row lacks read 'undefined' (Vega-Lite's text of no value): n/a.
  function tooltipFields(spec, found) {
    if (Array.isArray(spec)) {
      for (const x of spec) tooltipFields(x, found);
    } else if (spec && typeof spec === "object") {
      for (const [key, value] of Object.entries(spec)) {
        if (key !== "tooltip") {
          tooltipFields(value, found);
          continue;
        }
        for (const t of [].concat(value)) if (t && t.type === "nominal") found.add(t.field);
      }
    }
    return found;
  }

  async function start() {
    options();
    for (const v of D.views) {
      const section = document.getElementById("view-" + v.id);
      charts.push(Object.assign({ view: null, section: section, title:
        section.querySelector("h2").textContent, note: section.querySelector(".cap") }, v));
      for (const field of tooltipFields(v.spec, new Set())) {
        if (FILTERS.includes(field) || field === v.needs) continue;
        for (const r of D[v.data]) if (missing(r[field])) r[field] = "n/a";
      }
    }
    await update();
    document.body.dataset.ready = failures.length ? "partial" : "1";
  }
  start().catch((error) => {
    failed("its filters", error);
    document.body.dataset.ready = "error";
    throw error;
  });
})();
