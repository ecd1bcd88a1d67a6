/* GENEB leaderboard site: sortable, filterable tables rendered from the JSON embedded in each page.
 *
 * Every <script type="application/json" data-table="ID"> holds one table spec (geneb.site.spec.table_spec):
 *   {columns: [{key, label, kind: "text" | "num" | "int" | "bool" | "ci", digits, href, low, high}],
 *    rows: [{key: value, ...}], filters: [key, ...], defaults: {key: value}, sort: [key, "asc" | "desc"],
 *    search: bool}
 * and is drawn into the element with id ID: one <select> per filter column (its distinct values), a text search
 * over every cell, a header button per column that sorts (missing values always last), and for a "ci" column a
 * bar from `low` to `high` with a dot at the value, on one scale per table. Plain DOM, no library; works from
 * file:// (the data is in the page, nothing is fetched).
 */
"use strict";
(function () {
  function missing(v) {
    return v === null || v === undefined || v === "" || (typeof v === "number" && isNaN(v));
  }

  function show(v, col) {
    if (missing(v)) return "–";
    const digits = col.digits === undefined ? 3 : col.digits;
    if (col.kind === "num" || col.kind === "ci") return Number(v).toFixed(digits);
    if (col.kind === "bool") return v ? "yes" : "no";
    // a number in a mixed column: fixed decimals, never a float's full repr
    if (typeof v === "number" && !Number.isInteger(v)) return v.toFixed(digits);
    return String(v);
  }

  function fill(template, row) {
    return template.replace(/\{(\w+)\}/g, function (_, k) {
      return encodeURIComponent(missing(row[k]) ? "" : String(row[k]));
    });
  }

  function compare(a, b, numeric) {
    const ma = missing(a), mb = missing(b);
    if (ma || mb) return ma === mb ? 0 : ma ? 1 : -1;
    if (numeric) return Number(a) - Number(b);
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }

  function scaleOf(spec) {
    let lo = 0, hi = 0;
    spec.columns.forEach(function (c) {
      if (c.kind !== "ci") return;
      spec.rows.forEach(function (r) {
        [r[c.key], r[c.low], r[c.high]].forEach(function (v) {
          if (!missing(v)) { lo = Math.min(lo, Number(v)); hi = Math.max(hi, Number(v)); }
        });
      });
    });
    if (hi <= lo) hi = lo + 1;
    return function (v) { return (100 * (Number(v) - lo)) / (hi - lo); };
  }

  function ciCell(td, row, col, pos) {
    const v = row[col.key], lo = row[col.low], hi = row[col.high];
    const bar = document.createElement("span");
    bar.className = "ci";
    if (!missing(lo) && !missing(hi)) {
      const range = document.createElement("span");
      range.className = "ci-range";
      range.style.left = pos(lo) + "%";
      range.style.width = Math.max(0.5, pos(hi) - pos(lo)) + "%";
      bar.appendChild(range);
      bar.title = show(lo, col) + " – " + show(hi, col);
    }
    if (!missing(v)) {
      const dot = document.createElement("span");
      dot.className = "ci-dot";
      dot.style.left = pos(v) + "%";
      bar.appendChild(dot);
    }
    const num = document.createElement("span");
    num.className = "ci-num";
    num.textContent = show(v, col);
    td.appendChild(num);
    td.appendChild(bar);
  }

  function GenebTable(host, spec) {
    const state = { filters: Object.assign({}, spec.defaults || {}), text: "", sort: spec.sort || null };
    const numeric = {};
    spec.columns.forEach(function (c) { numeric[c.key] = c.kind === "num" || c.kind === "int" || c.kind === "ci"; });
    const pos = scaleOf(spec);
    const controls = document.createElement("div");
    controls.className = "controls";
    (spec.filters || []).forEach(function (key) {
      const col = spec.columns.find(function (c) { return c.key === key; }) || { key: key, label: key };
      const values = Array.from(new Set(spec.rows.map(function (r) { return r[key]; }).filter(function (v) { return !missing(v); })));
      values.sort(function (a, b) { return compare(a, b, numeric[key]); });
      const label = document.createElement("label");
      label.textContent = col.label + " ";
      const sel = document.createElement("select");
      sel.name = key;
      sel.dataset.filter = key;
      const all = document.createElement("option");
      all.value = "";
      all.textContent = "all";
      sel.appendChild(all);
      values.forEach(function (v) {
        const o = document.createElement("option");
        o.value = String(v);
        o.textContent = String(v);
        sel.appendChild(o);
      });
      if (state.filters[key] !== undefined && values.map(String).indexOf(String(state.filters[key])) < 0) delete state.filters[key];
      sel.value = state.filters[key] === undefined ? "" : String(state.filters[key]);
      sel.addEventListener("change", function () {
        if (sel.value === "") delete state.filters[key]; else state.filters[key] = sel.value;
        draw();
      });
      label.appendChild(sel);
      controls.appendChild(label);
    });
    if (spec.search !== false) {
      const label = document.createElement("label");
      label.textContent = "search ";
      const input = document.createElement("input");
      input.type = "search";
      input.dataset.search = "1";
      input.addEventListener("input", function () { state.text = input.value.toLowerCase(); draw(); });
      label.appendChild(input);
      controls.appendChild(label);
    }
    const count = document.createElement("span");
    count.className = "count";
    controls.appendChild(count);
    const table = document.createElement("table");
    table.className = "gtable";
    const head = document.createElement("tr");
    spec.columns.forEach(function (c) {
      const th = document.createElement("th");
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = c.label;
      b.dataset.sort = c.key;
      // the tooltip: the column's name and its data-dictionary meaning; a click anywhere in the cell sorts, and
      // the button takes Enter and Space from the keyboard (its click bubbles to the cell)
      th.title = (c.help || c.key) + " (click or Enter to sort)";
      th.dataset.sortKey = c.key;
      th.addEventListener("click", function () {
        const dir = state.sort && state.sort[0] === c.key && state.sort[1] === "asc" ? "desc" : "asc";
        state.sort = [c.key, dir];
        draw();
      });
      th.appendChild(b);
      if (numeric[c.key]) th.className = "num";
      head.appendChild(th);
    });
    const thead = document.createElement("thead");
    thead.appendChild(head);
    const tbody = document.createElement("tbody");
    table.appendChild(thead);
    table.appendChild(tbody);
    host.appendChild(controls);
    host.appendChild(table);

    function draw() {
      let rows = spec.rows.filter(function (r) {
        for (const k in state.filters) if (String(r[k]) !== String(state.filters[k])) return false;
        if (!state.text) return true;
        return spec.columns.some(function (c) { return String(show(r[c.key], c)).toLowerCase().indexOf(state.text) >= 0; });
      });
      if (state.sort) {
        const key = state.sort[0], sign = state.sort[1] === "desc" ? -1 : 1;
        rows = rows.slice().sort(function (a, b) {
          const ma = missing(a[key]), mb = missing(b[key]);
          if (ma || mb) return ma === mb ? 0 : ma ? 1 : -1;
          return sign * compare(a[key], b[key], numeric[key]);
        });
      }
      head.querySelectorAll("th").forEach(function (th, i) {
        const key = spec.columns[i].key;
        th.setAttribute("aria-sort", state.sort && state.sort[0] === key ? (state.sort[1] === "asc" ? "ascending" : "descending") : "none");
      });
      tbody.textContent = "";
      rows.forEach(function (r) {
        const tr = document.createElement("tr");
        if (r._flagged) tr.className = "flagged";
        spec.columns.forEach(function (c) {
          const td = document.createElement("td");
          if (numeric[c.key]) td.className = "num";
          if (c.kind === "ci") ciCell(td, r, c, pos);
          else if (c.href && !missing(r[c.key])) {
            const a = document.createElement("a");
            a.href = fill(c.href, r);
            a.textContent = show(r[c.key], c);
            td.appendChild(a);
          } else td.textContent = show(r[c.key], c);
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      });
      count.textContent = rows.length + " of " + spec.rows.length + " rows";
      host.dataset.shown = String(rows.length);
    }
    draw();
  }

  function init() {
    document.querySelectorAll("script[type='application/json'][data-table]").forEach(function (s) {
      const host = document.getElementById(s.dataset.table);
      if (host) GenebTable(host, JSON.parse(s.textContent));
    });
    document.body.dataset.ready = "1";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
