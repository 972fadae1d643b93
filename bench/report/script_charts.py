"""The report page script's charts and filters (bench.report.script joins the parts):
each Vega-Lite view fed its filtered rows, machines coloured and ordered as the
legends, the filters' options, and the start."""

CHARTS = r"""
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
  // Colours: each machine its own on every chart (bench.report.colours, from its name).
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
  // Each machine's colour on every chart, from its identity (bench.report.colours).
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
"""
