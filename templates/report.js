/* axl-eval report: item explorer. Inline, no dependencies, no network.
 * Builds DOM with createElement/textContent only: no innerHTML on data, ever. */
(function () {
  "use strict";

  var byId = function (id) { return document.getElementById(id); };
  var rowsNode = byId("axl-rows");
  var root = byId("explorer");
  if (!rowsNode || !root) { return; }

  var data = JSON.parse(rowsNode.textContent);
  var scorers = data.scorers;
  var hasBase = data.hasBaseline;
  var rows = data.rows;
  var N = rows.length;
  var PAGE = data.pageSize || 100;
  // Row layout (see axl_action/report/explorer.py): index, title, candidate outcome,
  // baseline outcome, flags, cost, latency, baseline scores, candidate scores, regressed scorer ids,
  // cost as shown. Money arrives formatted (axl_action/formatting.py): the page never prints it.
  var R_I = 0, R_TITLE = 1, R_OUT = 2, R_BOUT = 3, R_FLAGS = 4, R_COST = 5, R_LAT = 6, R_B = 7, R_C = 8, R_RS = 9, R_COST_TEXT = 10;
  var F = { regressed: 1, improved: 2, changed: 4, failed: 8, budget: 16, skipped: 32, errors: 64, flaky: 128 };
  // With a baseline history: rows get a 12th column (flaky scorer ids or 0), details a score strip.
  var R_FK = 11;
  var hist = data.history || null;
  function isFlaky(r, k) { return hist !== null && r[R_FK] !== 0 && r[R_FK] !== undefined && r[R_FK].indexOf(k) >= 0; }

  var details = null;
  var haystacks = null;
  var state = { chips: [], q: "", sort: "worst", dir: 1, page: 0, item: -1 };
  var lastHash = "";

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function fmt(x, d) { return (x === null || x === undefined) ? "—" : x.toFixed(d === undefined ? 3 : d); }
  function signed(x) {
    if (x === null || x === undefined) { return "—"; }
    var r = Math.round(x * 1000) / 1000;
    if (r === 0) { return "0.000"; }
    return (r > 0 ? "+" : "−") + Math.abs(r).toFixed(3);
  }
  function ms(x) {
    if (x === null || x === undefined) { return "—"; }
    return x >= 10000 ? (x / 1000).toFixed(1) + "s" : Math.round(x) + "ms";
  }

  function delta(row, k) {
    var b = row[R_B] ? row[R_B][k] : null, c = row[R_C][k];
    if (b === null || b === undefined || c === null || c === undefined) { return null; }
    return c - b;
  }
  function worst(row) {
    var w = null;
    for (var k = 0; k < scorers.length; k++) {
      var d = delta(row, k);
      if (d !== null && (w === null || d < w)) { w = d; }
    }
    return w;
  }
  var worstCache = new Float64Array(N);
  for (var wi = 0; wi < N; wi++) {
    var wv = worst(rows[wi]);
    worstCache[wi] = wv === null ? NaN : wv;
  }

  // ---- filters -------------------------------------------------------------
  var chipDefs = [
    ["regressed", "Regressed", function (r) { return (r[R_FLAGS] & F.regressed) !== 0; }],
    ["improved", "Improved", function (r) { return (r[R_FLAGS] & F.improved) !== 0; }],
    ["changed", "Output changed", function (r) { return (r[R_FLAGS] & F.changed) !== 0; }],
    ["failed", "Failed", function (r) { return (r[R_FLAGS] & F.failed) !== 0; }],
    ["budget", "Budget-stopped", function (r) { return (r[R_FLAGS] & F.budget) !== 0; }],
    ["skipped", "Skipped", function (r) { return (r[R_FLAGS] & F.skipped) !== 0; }],
    ["errors", "Scorer errors", function (r) { return (r[R_FLAGS] & F.errors) !== 0; }]
  ];
  if (hist) {
    chipDefs.push(["flaky", "Flaky ↻", function (r) { return (r[R_FLAGS] & F.flaky) !== 0; }]);
  }
  if (!hasBase) {
    chipDefs = chipDefs.filter(function (c) { return c[0] !== "regressed" && c[0] !== "improved" && c[0] !== "changed"; });
  }
  scorers.forEach(function (name, k) {
    if (hasBase) {
      chipDefs.push(["s" + k, name + " regressed", function (r) { return r[R_RS] !== 0 && r[R_RS].indexOf(k) >= 0; }]);
    } else {
      chipDefs.push(["s" + k, name + " < 1", function (r) { var c = r[R_C][k]; return c !== null && c !== undefined && c < 1; }]);
    }
  });
  var chipById = {};
  chipDefs.forEach(function (c) { chipById[c[0]] = c; });

  function matchesSearch(i) {
    if (!state.q) { return true; }
    if (haystacks) { return haystacks[i].indexOf(state.q) >= 0; }
    return rows[i][R_TITLE].toLowerCase().indexOf(state.q) >= 0;
  }

  function buildHaystacks() {
    if (haystacks || !details) { return; }
    haystacks = new Array(N);
    for (var i = 0; i < N; i++) {
      var d = details[i];
      var parts = [rows[i][R_TITLE], d.in, d.an, d.bs ? "" : d.bo, d.co];
      if (d.sc) {
        for (var k = 0; k < d.sc.length; k++) {
          var s = d.sc[k];
          if (s) { parts.push(s.br || "", s.cr || "", s.ce || ""); }
        }
      }
      if (d.err) { parts.push(d.err); }
      haystacks[i] = parts.join("\n").toLowerCase();
    }
  }

  var visible = [];
  var counts = {};

  function applyFilters() {
    var active = state.chips.map(function (id) { return chipById[id]; }).filter(Boolean);
    var out = [];
    var cnt = {};
    chipDefs.forEach(function (c) { cnt[c[0]] = 0; });
    for (var i = 0; i < N; i++) {
      var r = rows[i];
      var ok = true;
      for (var a = 0; a < active.length; a++) {
        if (!active[a][2](r)) { ok = false; break; }
      }
      if (!ok || !matchesSearch(i)) { continue; }
      out.push(i);
      for (var c = 0; c < chipDefs.length; c++) {
        if (chipDefs[c][2](r)) { cnt[chipDefs[c][0]]++; }
      }
    }
    counts = cnt;
    visible = sortRows(out);
  }

  function sortKey(i) {
    var r = rows[i], key = state.sort;
    if (key === "worst") { return worstCache[i]; }
    if (key === "index") { return r[R_I]; }
    if (key === "cost") { return r[R_COST]; }
    if (key === "latency") { return r[R_LAT]; }
    if (key === "outcome") { return r[R_OUT]; }
    if (key.charAt(0) === "d") { return delta(r, +key.slice(1)); }
    if (key.charAt(0) === "c") { return r[R_C][+key.slice(1)]; }
    return r[R_I];
  }

  function sortRows(list) {
    var keys = {};
    for (var j = 0; j < list.length; j++) { keys[list[j]] = sortKey(list[j]); }
    var dir = state.dir;
    return list.sort(function (x, y) {
      var a = keys[x], b = keys[y];
      var an = a === null || a === undefined || (typeof a === "number" && isNaN(a));
      var bn = b === null || b === undefined || (typeof b === "number" && isNaN(b));
      if (an || bn) { return an === bn ? x - y : (an ? 1 : -1); }
      if (a < b) { return -dir; }
      if (a > b) { return dir; }
      return x - y;
    });
  }

  // ---- DOM skeleton ----------------------------------------------------------
  var controls = el("div", "controls");
  var search = el("input", "search");
  search.type = "search";
  search.placeholder = "Search inputs, outputs, judge reasoning  ( / )";
  search.setAttribute("aria-label", "Search items");
  var chipBar = el("div", "chips");
  chipBar.setAttribute("role", "group");
  chipBar.setAttribute("aria-label", "Filters");
  var status = el("p", "status");
  status.setAttribute("aria-live", "polite");
  controls.appendChild(search);
  controls.appendChild(chipBar);
  controls.appendChild(status);

  var layout = el("div", "explorer-layout");
  var listWrap = el("div", "list-wrap");
  var table = el("table", "items");
  var thead = el("thead");
  var tbody = el("tbody");
  table.appendChild(thead);
  table.appendChild(tbody);
  var tableScroll = el("div", "table-scroll");
  tableScroll.appendChild(table);
  var pager = el("div", "pager");
  listWrap.appendChild(tableScroll);
  listWrap.appendChild(pager);
  var detail = el("section", "detail");
  detail.id = "item-detail";
  detail.setAttribute("aria-label", "Item detail");
  detail.hidden = true;
  layout.appendChild(listWrap);
  layout.appendChild(detail);
  root.appendChild(controls);
  root.appendChild(layout);

  var chipButtons = {};
  chipDefs.forEach(function (c) {
    var b = el("button", "chip");
    b.type = "button";
    b.dataset.chip = c[0];
    b.setAttribute("aria-pressed", "false");
    b.appendChild(el("span", "chip-label", c[1]));
    b.appendChild(el("span", "chip-count", ""));
    b.addEventListener("click", function () {
      var at = state.chips.indexOf(c[0]);
      if (at >= 0) { state.chips.splice(at, 1); } else { state.chips.push(c[0]); }
      state.page = 0;
      update(true);
    });
    chipButtons[c[0]] = b;
    chipBar.appendChild(b);
  });

  var columns = [["index", "#"], ["", "Input"]];
  if (hasBase) { columns.push(["worst", "Worst Δ"]); }
  columns.push(["outcome", "Outcome"]);
  scorers.forEach(function (name, k) { columns.push([hasBase ? "d" + k : "c" + k, name]); });
  columns.push(["cost", "Cost"]);
  columns.push(["latency", "Latency"]);
  var headRow = el("tr");
  var headButtons = {};
  columns.forEach(function (col) {
    var th = el("th");
    th.scope = "col";
    if (!col[0]) { th.textContent = col[1]; headRow.appendChild(th); return; }
    var b = el("button", "sort", col[1]);
    b.type = "button";
    b.title = col[0] === "worst" ? "Sort by worst score change" : "Sort by " + col[1];
    b.addEventListener("click", function () {
      if (state.sort === col[0]) { state.dir = -state.dir; } else { state.sort = col[0]; state.dir = col[0] === "worst" || col[0].charAt(0) === "d" ? 1 : (col[0] === "index" ? 1 : -1); }
      state.page = 0;
      update(true);
    });
    headButtons[col[0]] = [th, b];
    th.appendChild(b);
    headRow.appendChild(th);
  });
  thead.appendChild(headRow);

  // ---- rendering -------------------------------------------------------------
  function outcomeCell(r) {
    var td = el("td", "outcome");
    var c = r[R_OUT];
    td.appendChild(el("span", "pill o-" + c, c.replace("_", " ")));
    if (hasBase && r[R_BOUT] && r[R_BOUT] !== c) {
      td.appendChild(el("span", "muted", " was " + r[R_BOUT].replace("_", " ")));
    }
    return td;
  }

  function scoreCell(r, k) {
    var td = el("td", "num score");
    var c = r[R_C][k];
    if (hasBase) {
      var b = r[R_B] ? r[R_B][k] : null;
      var d = delta(r, k);
      td.appendChild(el("span", "muted", fmt(b) + " → "));
      td.appendChild(el("span", "", fmt(c)));
      if (d !== null && Math.abs(d) >= 0.0005) {
        var regressed = r[R_RS] !== 0 && r[R_RS].indexOf(k) >= 0;
        td.appendChild(el("span", "delta " + (d < 0 ? (regressed ? "bad" : "soft-bad") : "good"), " " + signed(d)));
      }
    } else {
      td.textContent = fmt(c);
    }
    if (isFlaky(r, k)) {
      var mark = el("span", "flaky-mark", "↻");
      mark.title = "flaky: this item's score moves across unchanged baseline runs";
      td.appendChild(mark);
    }
    return td;
  }

  function renderTable() {
    var pages = Math.max(1, Math.ceil(visible.length / PAGE));
    if (state.page >= pages) { state.page = pages - 1; }
    var start = state.page * PAGE;
    var slice = visible.slice(start, start + PAGE);
    var frag = document.createDocumentFragment();
    slice.forEach(function (i) {
      var r = rows[i];
      var tr = el("tr", "row");
      tr.tabIndex = 0;
      tr.dataset.item = String(i);
      if (i === state.item) { tr.className += " selected"; tr.setAttribute("aria-selected", "true"); }
      tr.appendChild(el("td", "num", r[R_I]));
      tr.appendChild(el("td", "title", r[R_TITLE]));
      if (hasBase) {
        var w = worstCache[i];
        tr.appendChild(el("td", "num delta " + (w < 0 ? "bad" : w > 0 ? "good" : ""), isNaN(w) ? "—" : signed(w)));
      }
      tr.appendChild(outcomeCell(r));
      for (var k = 0; k < scorers.length; k++) { tr.appendChild(scoreCell(r, k)); }
      tr.appendChild(el("td", "num", r[R_COST_TEXT]));
      tr.appendChild(el("td", "num", ms(r[R_LAT])));
      frag.appendChild(tr);
    });
    tbody.textContent = "";
    tbody.appendChild(frag);

    pager.textContent = "";
    var prev = el("button", "page-btn", "← Previous");
    prev.type = "button";
    prev.disabled = state.page === 0;
    prev.addEventListener("click", function () { state.page--; update(true); });
    var next = el("button", "page-btn", "Next →");
    next.type = "button";
    next.disabled = state.page >= pages - 1;
    next.addEventListener("click", function () { state.page++; update(true); });
    pager.appendChild(prev);
    pager.appendChild(el("span", "page-info", "Page " + (state.page + 1) + " of " + pages));
    pager.appendChild(next);

    Object.keys(headButtons).forEach(function (key) {
      var th = headButtons[key][0];
      if (key === state.sort) { th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending"); } else { th.removeAttribute("aria-sort"); }
    });
  }

  function renderChips() {
    chipDefs.forEach(function (c) {
      var b = chipButtons[c[0]];
      var on = state.chips.indexOf(c[0]) >= 0;
      b.setAttribute("aria-pressed", on ? "true" : "false");
      b.lastChild.textContent = String(counts[c[0]] || 0);
    });
    var text = visible.length + " of " + N + " items";
    if (state.q && !haystacks) { text += " (searching titles until the item text has loaded)"; }
    status.textContent = text;
  }

  // ---- word-level diff -----------------------------------------------------------
  var TOKEN = /\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;
  function tokens(text) { return text.match(TOKEN) || []; }

  function canonicalJson(text) {
    var t = text.trim();
    if (!t || (t.charAt(0) !== "{" && t.charAt(0) !== "[")) { return null; }
    try {
      var sortKeys = function (v) {
        if (Array.isArray(v)) { return v.map(sortKeys); }
        if (v && typeof v === "object") {
          var o = {};
          Object.keys(v).sort().forEach(function (k) { o[k] = sortKeys(v[k]); });
          return o;
        }
        return v;
      };
      return JSON.stringify(sortKeys(JSON.parse(t)), null, 2);
    } catch (e) { return null; }
  }

  // Returns [ops] where op = [kind, text], kind: 0 same, -1 only in a, 1 only in b.
  function diffTokens(a, b) {
    var pre = 0;
    while (pre < a.length && pre < b.length && a[pre] === b[pre]) { pre++; }
    var suf = 0;
    while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) { suf++; }
    var x = a.slice(pre, a.length - suf), y = b.slice(pre, b.length - suf);
    var ops = [];
    if (pre) { ops.push([0, a.slice(0, pre).join("")]); }
    var n = x.length, m = y.length;
    if (n * m > 4000000) {
      if (n) { ops.push([-1, x.join("")]); }
      if (m) { ops.push([1, y.join("")]); }
    } else if (n || m) {
      var W = m + 1;
      var L = (n + 1) * W > 0 && Math.max(n, m) < 65535 ? new Uint16Array((n + 1) * W) : new Uint32Array((n + 1) * W);
      for (var i = n - 1; i >= 0; i--) {
        for (var j = m - 1; j >= 0; j--) {
          L[i * W + j] = x[i] === y[j] ? L[(i + 1) * W + j + 1] + 1 : Math.max(L[(i + 1) * W + j], L[i * W + j + 1]);
        }
      }
      var p = 0, q = 0;
      var push = function (kind, tok) {
        var last = ops[ops.length - 1];
        if (last && last[0] === kind) { last[1] += tok; } else { ops.push([kind, tok]); }
      };
      while (p < n && q < m) {
        if (x[p] === y[q]) { push(0, x[p]); p++; q++; }
        else if (L[(p + 1) * W + q] >= L[p * W + q + 1]) { push(-1, x[p]); p++; }
        else { push(1, y[q]); q++; }
      }
      while (p < n) { push(-1, x[p++]); }
      while (q < m) { push(1, y[q++]); }
    }
    if (suf) { ops.push([0, a.slice(a.length - suf).join("")]); }
    return ops;
  }

  function diffView(before, after) {
    var ja = canonicalJson(before), jb = canonicalJson(after);
    var isJson = ja !== null && jb !== null;
    var a = isJson ? ja : before, b = isJson ? jb : after;
    var ops = diffTokens(tokens(a), tokens(b));
    var left = el("pre", "out diff"), right = el("pre", "out diff");
    ops.forEach(function (op) {
      if (op[0] === 0) { left.appendChild(document.createTextNode(op[1])); right.appendChild(document.createTextNode(op[1])); }
      else if (op[0] < 0) { left.appendChild(el("del", "", op[1])); }
      else { right.appendChild(el("ins", "", op[1])); }
    });
    return { left: left, right: right, json: isJson, same: a === b };
  }

  // ---- item detail (built on demand) ---------------------------------------------
  function section(title) {
    var s = el("div", "d-section");
    s.appendChild(el("h4", "", title));
    return s;
  }
  function pre(text, cls) { return el("pre", cls || "out", text); }

  // Score strips (see explorer.encode_strips): int32 thousandths, [item][scorer][run].
  var histView = null;
  function stripValues(i, k) {
    if (!histView) { return null; }
    var P = hist.points, out = [];
    for (var j = 0; j < P; j++) {
      var v = histView.getInt32(((i * hist.scorers + k) * P + j) * 4, true);
      out.push(v === -2147483648 ? null : v / 1000);
    }
    return out;
  }
  function loadStrips() {
    var node = byId("axl-history");
    if (!hist || !node || typeof DecompressionStream === "undefined") { return Promise.resolve(null); }
    var bin = atob(node.textContent.trim());
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return new Response(stream).arrayBuffer().then(function (buf) { return new DataView(buf); });
  }

  // An item's score in each recent baseline run, then this run's, as small bars (0 to 1).
  function stripCell(values, current, flaky) {
    var td = el("td", "");
    var strip = el("span", "hs-strip");
    var all = (values || []).concat([current === undefined ? null : current]);
    var lo = 0, hi = 1;
    all.forEach(function (v) { if (v !== null && v !== undefined) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    all.forEach(function (v, j) {
      var last = j === all.length - 1;
      var bar = el("span", "hs-bar" + (last ? " hs-cand" : "") + (v === null || v === undefined ? " hs-none" : ""));
      if (v !== null && v !== undefined) { bar.style.height = Math.max(1, Math.round(16 * (v - lo) / (hi - lo || 1))) + "px"; }
      bar.title = (last ? "this run" : hist.labels[j] || "") + ": " + fmt(v);
      strip.appendChild(bar);
    });
    strip.setAttribute("aria-label", "score history: " + all.map(function (v) { return fmt(v); }).join(", "));
    td.appendChild(strip);
    if (flaky) { var f = el("span", "flaky-mark", "↻ flaky"); td.appendChild(f); }
    return td;
  }

  function renderDetail() {
    detail.textContent = "";
    var i = state.item;
    if (i < 0 || i >= N) { detail.hidden = true; return; }
    detail.hidden = false;
    var r = rows[i];
    var head = el("div", "d-head");
    head.appendChild(el("h3", "", "Item " + r[R_I]));
    var close = el("button", "close", "Close ✕");
    close.type = "button";
    close.setAttribute("aria-label", "Close item detail");
    close.addEventListener("click", function () { closeDetail(); });
    head.appendChild(close);
    detail.appendChild(head);
    if (!details) {
      detail.appendChild(el("p", "muted", "Loading item text…"));
      return;
    }
    var d = details[i];
    if (d.key) { detail.appendChild(el("p", "muted mono", d.key)); }

    var st = section("Scores");
    var t = el("table", "mini");
    var hr = el("tr");
    var heads = hasBase ? ["Scorer", "Baseline", "Candidate", "Δ", "Outcome"] : ["Scorer", "Score", "Outcome"];
    if (hist) { heads.push("History (" + hist.labels.length + " baselines, then this run)"); }
    heads.forEach(function (h) { hr.appendChild(el("th", "", h)); });
    t.appendChild(hr);
    scorers.forEach(function (name, k) {
      var tr = el("tr");
      tr.appendChild(el("td", "", name));
      var s = d.sc ? d.sc[k] : null;
      if (hasBase) {
        tr.appendChild(el("td", "num", fmt(r[R_B] ? r[R_B][k] : null)));
        tr.appendChild(el("td", "num", fmt(r[R_C][k])));
        var dd = delta(r, k);
        var reg = r[R_RS] !== 0 && r[R_RS].indexOf(k) >= 0;
        tr.appendChild(el("td", "num delta " + (dd === null ? "" : dd < 0 ? (reg ? "bad" : "soft-bad") : dd > 0 ? "good" : ""), signed(dd)));
      } else {
        tr.appendChild(el("td", "num", fmt(r[R_C][k])));
      }
      tr.appendChild(el("td", "", s && s.o ? s.o.replace("_", " ") : "—"));
      if (hist) { tr.appendChild(stripCell(stripValues(i, k), r[R_C][k], isFlaky(r, k))); }
      t.appendChild(tr);
    });
    st.appendChild(t);
    detail.appendChild(st);

    if (d.rp) {
      // repeats: N. The scores above are the means; each repeat is one try of the pass rate.
      var sp = section("Repeats (" + d.rp.runs.length + ")");
      sp.appendChild(el("p", "muted", "Passed (score ≥ " + d.rp.ps + "): " + scorers.map(function (name, k) {
        return name + " " + d.rp.pass[k];
      }).join(" · ")));
      var rt = el("table", "mini repeats");
      var rh = el("tr");
      ["#", "Outcome"].concat(scorers, ["Output"]).forEach(function (h) { rh.appendChild(el("th", "", h)); });
      rt.appendChild(rh);
      d.rp.runs.forEach(function (run, n) {
        var tr = el("tr");
        tr.appendChild(el("td", "num", n + 1));
        tr.appendChild(el("td", "", run[0] ? run[0].replace("_", " ") : "—"));
        scorers.forEach(function (name, k) { tr.appendChild(el("td", "num", fmt(run[1][k]))); });
        var text = run[3] ? run[3] : asText(run[2]);
        tr.appendChild(el("td", run[3] ? "mono err" : "mono", text.length > 300 ? text.slice(0, 300) + "…" : text));
        rt.appendChild(tr);
      });
      sp.appendChild(rt);
      detail.appendChild(sp);
    }

    var si = section("Input");
    si.appendChild(pre(d.in || ""));
    detail.appendChild(si);
    if (d.an) {
      var sa = section("Annotations");
      sa.appendChild(pre(d.an));
      detail.appendChild(sa);
    }

    var so = section(hasBase ? "Output: baseline → candidate" : "Output");
    if (hasBase) {
      var dv = diffView(d.bo || "", d.co || "");
      var grid = el("div", "side-by-side");
      var lc = el("div", "col"), rc = el("div", "col");
      var bLabel = r[R_BOUT] === null ? " (not in the baseline)" : (r[R_BOUT] !== "completed" ? " (" + r[R_BOUT] + ")" : "");
      lc.appendChild(el("h5", "", "Baseline" + bLabel));
      lc.appendChild(dv.left);
      rc.appendChild(el("h5", "", "Candidate" + (r[R_OUT] !== "completed" ? " (" + r[R_OUT] + ")" : "")));
      rc.appendChild(dv.right);
      grid.appendChild(lc);
      grid.appendChild(rc);
      so.appendChild(el("p", "muted", dv.same ? "Outputs are identical." : (dv.json ? "JSON diff (keys sorted): removed words struck, added words highlighted." : "Word diff: removed words struck, added words highlighted.")));
      so.appendChild(grid);
    } else {
      so.appendChild(pre(d.co || ""));
    }
    detail.appendChild(so);

    if (d.sc) {
      var sr = section("Judge reasoning and scorer metadata");
      var any = false;
      scorers.forEach(function (name, k) {
        var s = d.sc[k];
        if (!s || !(s.br || s.cr || s.ce)) { return; }
        any = true;
        var box = el("div", "reason");
        box.appendChild(el("h5", "", name));
        if (hasBase && s.br) { box.appendChild(el("p", "muted", "Baseline")); box.appendChild(pre(s.br, "out small")); }
        if (s.cr) { if (hasBase) { box.appendChild(el("p", "muted", "Candidate")); } box.appendChild(pre(s.cr, "out small")); }
        if (s.ce) { box.appendChild(el("p", "err", "Scorer error: " + s.ce)); }
        sr.appendChild(box);
      });
      if (any) { detail.appendChild(sr); }
    }

    if (d.err) {
      var se = section("Failure");
      se.appendChild(pre(d.err, "out err"));
      detail.appendChild(se);
    }

    var sc = section("Cost and tokens");
    var dl = el("dl", "facts");
    var addFact = function (k, v) { dl.appendChild(el("dt", "", k)); dl.appendChild(el("dd", "", v)); };
    addFact("Generation cost", d.gc);
    addFact("Judging cost", d.jc);
    if (hasBase) { addFact("Baseline cost", d.bc === undefined ? "—" : d.bc); }
    if (d.tok) { addFact("Tokens (in / out / reasoning)", d.tok.join(" / ")); }
    if (d.ops) { addFact("Operations (settled / unknown / denied)", d.ops.join(" / ")); }
    if (d.unp) { addFact("Unknown spend", d.unp); }
    addFact("Latency", ms(r[R_LAT]) + (hasBase && d.bl !== null && d.bl !== undefined ? " (baseline " + ms(d.bl) + ")" : ""));
    if (d.refs && d.refs.length) { addFact("Operation refs", d.refs.join(", ")); }
    sc.appendChild(dl);
    detail.appendChild(sc);
  }

  function openItem(i, focusDetail) {
    state.item = i;
    update(true);
    if (focusDetail) {
      detail.tabIndex = -1;
      detail.focus();
      if (detail.scrollIntoView) { detail.scrollIntoView({ block: "nearest" }); }
    }
  }

  function closeDetail() {
    var i = state.item;
    state.item = -1;
    update(true);
    var row = tbody.querySelector('tr[data-item="' + i + '"]');
    if (row) { row.focus(); }
  }

  tbody.addEventListener("click", function (ev) {
    var tr = ev.target.closest ? ev.target.closest("tr.row") : null;
    if (tr) { openItem(+tr.dataset.item, false); }
  });
  tbody.addEventListener("keydown", function (ev) {
    var tr = ev.target;
    if (!tr || !tr.classList || !tr.classList.contains("row")) { return; }
    if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); openItem(+tr.dataset.item, true); }
    else if (ev.key === "ArrowDown" && tr.nextElementSibling) { ev.preventDefault(); tr.nextElementSibling.focus(); }
    else if (ev.key === "ArrowUp" && tr.previousElementSibling) { ev.preventDefault(); tr.previousElementSibling.focus(); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "/" && document.activeElement !== search) { ev.preventDefault(); search.focus(); }
    else if (ev.key === "Escape" && state.item >= 0) { closeDetail(); }
  });

  var searchTimer = null;
  search.addEventListener("input", function () {
    if (searchTimer) { clearTimeout(searchTimer); }
    searchTimer = setTimeout(function () {
      state.q = search.value.trim().toLowerCase();
      state.page = 0;
      if (state.q) { buildHaystacks(); }
      update(true);
    }, 120);
  });

  // ---- deep links: filters, search, sort, page and item live in location.hash ----------
  function toHash() {
    var p = [];
    if (state.chips.length) { p.push("f=" + state.chips.map(encodeURIComponent).join(",")); }
    if (state.q) { p.push("q=" + encodeURIComponent(state.q)); }
    if (state.sort !== "worst" || state.dir !== 1) { p.push("sort=" + encodeURIComponent(state.sort) + "&dir=" + (state.dir > 0 ? "asc" : "desc")); }
    if (state.page) { p.push("p=" + (state.page + 1)); }
    if (state.item >= 0) { p.push("item=" + state.item); }
    return p.length ? "#" + p.join("&") : "";
  }

  function fromHash(hash) {
    var s = { chips: [], q: "", sort: "worst", dir: 1, page: 0, item: -1 };
    (hash.charAt(0) === "#" ? hash.slice(1) : hash).split("&").forEach(function (kv) {
      if (!kv) { return; }
      var at = kv.indexOf("=");
      var k = at < 0 ? kv : kv.slice(0, at);
      var v = at < 0 ? "" : kv.slice(at + 1);
      try { v = decodeURIComponent(v); } catch (e) { return; }
      if (k === "f") { s.chips = v.split(",").filter(function (c) { return chipById[c]; }); }
      else if (k === "q") { s.q = v.toLowerCase(); }
      else if (k === "sort" && v && columns.some(function (c) { return c[0] === v; })) { s.sort = v; }
      else if (k === "dir") { s.dir = v === "desc" ? -1 : 1; }
      else if (k === "p") { s.page = Math.max(0, (parseInt(v, 10) || 1) - 1); }
      else if (k === "item") { var n = parseInt(v, 10); s.item = n >= 0 && n < N ? n : -1; }
    });
    return s;
  }

  function writeHash() {
    var h = toHash();
    if (h === lastHash) { return; }
    lastHash = h;
    var url = location.href.split("#")[0] + h;
    try { history.replaceState(null, "", h || url); } catch (e) { location.replace(h || "#"); }
  }

  // A link to an item (report.html#item=N) lands on its detail, not on the top of the page.
  function revealItem() {
    if (state.item >= 0 && detail.scrollIntoView) { detail.scrollIntoView({ block: "start" }); }
  }

  window.addEventListener("hashchange", function () {
    if (location.hash === lastHash) { return; }
    state = fromHash(location.hash);
    lastHash = location.hash;
    search.value = state.q;
    if (state.q) { buildHaystacks(); }
    update(false);
    revealItem();
  });

  function update(pushHash) {
    applyFilters();
    renderChips();
    renderTable();
    renderDetail();
    if (pushHash) { writeHash(); }
    root.setAttribute("data-ready", "true");
  }

  // ---- start: rows first (interactive now), item text after ---------------------
  state = fromHash(location.hash);
  lastHash = location.hash;
  search.value = state.q;
  update(false);
  revealItem();
  var noscript = byId("explorer-noscript");
  if (noscript) { noscript.hidden = true; }

  function loadDetails() {
    var node = byId("axl-details");
    if (!node) { return Promise.resolve([]); }
    if (node.getAttribute("data-encoding") === "deflate-raw+base64") {
      if (typeof DecompressionStream === "undefined") {
        return Promise.reject(new Error("this browser cannot decompress the item text (DecompressionStream missing)"));
      }
      // Independent deflate chunks joined by "." (see explorer.py); inflate all, concatenate.
      var parts = node.textContent.trim().split(".");
      return Promise.all(parts.map(function (part) {
        var bin = atob(part);
        var bytes = new Uint8Array(bin.length);
        for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
        var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
        return new Response(stream).text().then(JSON.parse);
      })).then(function (lists) { return [].concat.apply([], lists); });
    }
    return Promise.resolve(JSON.parse(node.textContent));
  }

  // Structured values arrive as JSON values; show them pretty-printed.
  function asText(v) {
    if (v === null || v === undefined) { return ""; }
    return typeof v === "string" ? v : JSON.stringify(v, null, 2);
  }

  loadDetails().then(function (list) {
    for (var i = 0; i < list.length; i++) {
      var d = list[i];
      d.in = asText(d.in);
      d.co = asText(d.co);
      d.an = d.an === undefined ? "" : asText(d.an);
      d.bo = d.bs ? d.co : asText(d.bo);
    }
    details = list;
    root.setAttribute("data-details", "loaded");
    if (state.q) { buildHaystacks(); }
    update(false);
  }, function (err) {
    root.setAttribute("data-details", "failed");
    status.textContent = "Item text could not be loaded: " + err.message;
  });

  if (hist) {
    loadStrips().then(function (view) {
      histView = view;
      root.setAttribute("data-history", view ? "loaded" : "unavailable");
      update(false);
    }, function () { root.setAttribute("data-history", "failed"); });
  }
})();
