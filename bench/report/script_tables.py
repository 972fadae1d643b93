"""The report page script's sortable tables (bench.report.script joins the parts):
each table's columns, sorting by any of them, and at most TABLE_ROWS rows drawn, the
note saying how many it holds."""

TABLES = r"""
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
    coverage: {
      cols: [["workload", "workload"], ["machine", "machine"],
        ["ran", "configurations ran", "ran_text"],
        ["shared", "of them, the baseline ran", "shared_text"], ["configs", "which"]],
    },
    inventory: {
      cols: [["machine", "machine"], ["accelerator", "accelerator"], ["driver", "driver"],
        ["runtime", "CUDA / ROCm"], ["frameworks", "frameworks"],
        ["power_limit", "power limit"], ["image", "image"], ["cpu", "CPU"],
        ["results", "results"]],
    },
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
"""
