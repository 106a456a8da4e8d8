/* axl-eval report: item explorer. Inline, no dependencies, no network.
 * Builds DOM with createElement/textContent only: no innerHTML on data, ever. */
(function () {
  "use strict";

  var byId = function (id) { return document.getElementById(id); };
  var rowsNode = byId("axl-rows");
  var root = byId("explorer");
  if (!rowsNode || !root) { return; }

  // Item data (see axl_action/report/explorer.py and docs/reports.md, "Packed item data"):
  // axl-rows is small plain JSON; axl-cols (the table's columns) and axl-details (item text,
  // in chunks) are base85 of raw deflate, unpacked with the browser's DecompressionStream.
  var meta = JSON.parse(rowsNode.textContent);
  var scorers = meta.scorers;
  var hasBase = meta.hasBaseline;
  var N = meta.items;
  var CHUNK = meta.chunkItems || 1000;
  // Columns, once unpacked: title, out (candidate outcome), bout (baseline outcome, null: not in
  // the baseline), flags, cost, lat, b / c (per scorer, each item's score), rs (regressed scorer
  // ids or 0), ct (cost as shown), fk (flaky scorer ids or 0, with a history). Money arrives
  // formatted (axl_action/formatting.py): the page never prints it.
  var C = null;
  // Row layout the cells and the detail read (rowOf): built only for rows on screen.
  var R_I = 0, R_TITLE = 1, R_OUT = 2, R_BOUT = 3, R_FLAGS = 4, R_COST = 5, R_LAT = 6, R_B = 7, R_C = 8, R_RS = 9, R_COST_TEXT = 10, R_FK = 11;
  var F = { regressed: 1, improved: 2, changed: 4, failed: 8, budget: 16, skipped: 32, errors: 64, flaky: 128 };
  var hist = meta.history || null;
  function isFlaky(r, k) { return hist !== null && r[R_FK] !== 0 && r[R_FK] !== undefined && r[R_FK] !== null && r[R_FK].indexOf(k) >= 0; }
  function rowOf(i) {
    var b = null, c = [];
    if (C.bout[i] !== null) { b = []; for (var k = 0; k < scorers.length; k++) { b.push(C.b[k][i]); } }
    for (var j = 0; j < scorers.length; j++) { c.push(C.c[j][i]); }
    return [i, C.title[i], C.out[i], C.bout[i], C.flags[i], C.cost[i], C.lat[i], b, c, C.rs[i], C.ct[i], C.fk ? C.fk[i] : 0];
  }

  var state = { chips: [], q: "", sort: "worst", dir: 1, item: -1 };
  var lastHash = "";
  var busy = 0;
  function working(d) {
    busy += d;
    if (busy > 0) { root.setAttribute("data-busy", "true"); } else { root.removeAttribute("data-busy"); }
  }

  // ---- unpacking ---------------------------------------------------------------
  var canInflate = typeof DecompressionStream !== "undefined";
  // base85 (axl_action/report/explorer.py, b85): 5 digits per 4 bytes, most significant first;
  // a last group of k + 1 digits holds k bytes (padded with the highest digit).
  var B85 = "!#$%()*+,/0123456789:;=?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_abcdefghijklmnopqrstuvwxyz{|}~";
  var B85_VALUE = new Uint8Array(128);
  for (var d85 = 0; d85 < 85; d85++) { B85_VALUE[B85.charCodeAt(d85)] = d85; }
  function fromB85(text) {
    var n = text.length, full = n - n % 5, rest = n % 5;
    var bytes = new Uint8Array(full / 5 * 4 + (rest ? rest - 1 : 0));
    var o = 0, v = 0, i, j;
    for (i = 0; i < full; i += 5) {
      v = (((B85_VALUE[text.charCodeAt(i)] * 85 + B85_VALUE[text.charCodeAt(i + 1)]) * 85 +
        B85_VALUE[text.charCodeAt(i + 2)]) * 85 + B85_VALUE[text.charCodeAt(i + 3)]) * 85 +
        B85_VALUE[text.charCodeAt(i + 4)];
      bytes[o] = v / 16777216; bytes[o + 1] = v >>> 16; bytes[o + 2] = v >>> 8; bytes[o + 3] = v;
      o += 4;
    }
    if (rest) {
      v = 0;
      for (j = 0; j < 5; j++) { v = v * 85 + (j < rest ? B85_VALUE[text.charCodeAt(full + j)] : 84); }
      for (j = 0; j < rest - 1; j++) { bytes[o + j] = Math.floor(v / Math.pow(256, 3 - j)); }
    }
    return bytes;
  }
  function inflateStream(packed) {
    return new Blob([fromB85(packed)]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  }
  function inflate(packed) { return new Response(inflateStream(packed)).text(); }

  // Detail chunks: CHUNK items each, inflated when an item in it is opened or searched; the
  // most recently used MAX_CHUNKS stay unpacked.
  var MAX_CHUNKS = 24;
  var chunkTexts = null;
  var chunks = {};
  var chunkUse = [];
  function asText(v) {
    if (v === null || v === undefined) { return ""; }
    return typeof v === "string" ? v : JSON.stringify(v, null, 2);
  }
  function haystack(i, d) {
    var parts = [C.title[i], d.in, d.an, d.bs ? "" : d.bo, d.co];
    if (d.sc) {
      for (var k = 0; k < d.sc.length; k++) {
        var s = d.sc[k];
        if (s) { parts.push(s.br || "", s.cr || "", s.ce || ""); }
      }
    }
    if (d.err) { parts.push(d.err); }
    return parts.join("\n").toLowerCase();
  }
  function loadedChunk(c) { var e = chunks[c]; return e && e.list ? e : null; }
  function getChunk(c) {
    var e = chunks[c];
    var at = chunkUse.indexOf(c);
    if (at >= 0) { chunkUse.splice(at, 1); }
    chunkUse.push(c);
    if (e) { return e.promise; }
    if (!chunkTexts) { chunkTexts = byId("axl-details").textContent.trim().split("."); }
    e = { list: null, hay: null, promise: null };
    chunks[c] = e;
    working(1);
    e.promise = inflate(chunkTexts[c]).then(function (text) {
      var list = JSON.parse(text);
      for (var j = 0; j < list.length; j++) {
        var d = list[j];
        // it: the input is the item's title (1), or the title's JSON (2), stored once.
        if (d.it === 1) { d.in = C.title[c * CHUNK + j]; } else if (d.it === 2) { d.in = JSON.parse(C.title[c * CHUNK + j]); }
        d.in = asText(d.in);
        d.co = asText(d.co);
        d.an = d.an === undefined ? "" : asText(d.an);
        d.bo = d.bs ? d.co : asText(d.bo);
      }
      e.list = list;
      working(-1);
      while (chunkUse.length > MAX_CHUNKS) {
        var old = chunkUse.shift();
        if (state.item < 0 || Math.floor(state.item / CHUNK) !== old) { delete chunks[old]; } else { chunkUse.push(old); break; }
      }
      return e;
    }, function (err) { working(-1); delete chunks[c]; throw err; });
    return e.promise;
  }
  function detailOf(i) { var e = loadedChunk(Math.floor(i / CHUNK)); return e ? e.list[i % CHUNK] : null; }

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
  // Worst score change per item, from the columns (NaN: none).
  var worstCache = new Float64Array(N);
  function computeWorst() {
    worstCache.fill(NaN);
    if (!C.b) { return; }
    for (var k = 0; k < scorers.length; k++) {
      var bk = C.b[k], ck = C.c[k];
      for (var i = 0; i < N; i++) {
        var b = bk[i], c = ck[i];
        if (b === null || c === null || b === undefined || c === undefined) { continue; }
        var d = c - b, w = worstCache[i];
        if (w !== w || d < w) { worstCache[i] = d; }
      }
    }
  }

  // ---- filters -------------------------------------------------------------
  // Each filter: [id, label, flag bit or 0, test of item i over the columns].
  function flagChip(id, label, bit) { return [id, label, bit, function (i) { return (C.flags[i] & bit) !== 0; }]; }
  var chipDefs = [
    flagChip("regressed", "Regressed", F.regressed),
    flagChip("improved", "Improved", F.improved),
    flagChip("changed", "Output changed", F.changed),
    flagChip("failed", "Failed", F.failed),
    flagChip("budget", "Budget-stopped", F.budget),
    flagChip("skipped", "Skipped", F.skipped),
    flagChip("errors", "Scorer errors", F.errors)
  ];
  if (hist) { chipDefs.push(flagChip("flaky", "Flaky ↻", F.flaky)); }
  if (!hasBase) {
    chipDefs = chipDefs.filter(function (c) { return c[0] !== "regressed" && c[0] !== "improved" && c[0] !== "changed"; });
  }
  scorers.forEach(function (name, k) {
    if (hasBase) {
      chipDefs.push(["s" + k, name + " regressed", 0, function (i) { var rs = C.rs[i]; return rs !== 0 && rs.indexOf(k) >= 0; }]);
    } else {
      chipDefs.push(["s" + k, name + " < 1", 0, function (i) { var c = C.c[k][i]; return c !== null && c !== undefined && c < 1; }]);
    }
  });
  var chipById = {};
  chipDefs.forEach(function (c) { chipById[c[0]] = c; });

  // Search: the title column at once; the item text chunk by chunk (searchText), each
  // query's hits kept in a bitmap.
  var titleLow = null;
  var textHits = null;
  function matchesSearch(i) {
    if (!state.q) { return true; }
    if (titleLow[i].indexOf(state.q) >= 0) { return true; }
    return textHits !== null && textHits.q === state.q && textHits.hit[i] === 1;
  }
  function ensureTitles() {
    if (titleLow) { return; }
    titleLow = new Array(N);
    for (var i = 0; i < N; i++) { titleLow[i] = C.title[i].toLowerCase(); }
  }

  function searchText(q) {
    if (!q || !canInflate || (textHits && textHits.q === q)) { return; }
    var run = { q: q, hit: new Uint8Array(N), done: 0, total: chunkCount() };
    textHits = run;
    working(1);
    var next = 0;
    function step() {
      if (textHits !== run) { working(-1); return; }
      if (next >= run.total) {
        run.complete = true;
        working(-1);
        update(false);
        return;
      }
      var c = next++;
      getChunk(c).then(function (e) {
        if (!e.hay) { e.hay = e.list.map(function (d, j) { return haystack(c * CHUNK + j, d); }); }
        var found = false;
        for (var j = 0; j < e.hay.length; j++) {
          if (e.hay[j].indexOf(q) >= 0) { run.hit[c * CHUNK + j] = 1; found = true; }
        }
        run.done++;
        if (found) { run.dirty = true; }
        var now = Date.now();
        if (textHits === run && run.dirty && now - (run.drawn || 0) > 250) {
          run.dirty = false;
          run.drawn = now;
          update(false);
        } else if (textHits === run) { renderChips(); }
        step();
      }, function (err) {
        working(-1);
        if (textHits === run) { status.textContent = "Item text could not be unpacked: " + err.message; }
      });
    }
    step();
  }
  function chunkCount() { return Math.ceil(N / CHUNK); }

  var visible = [];
  var counts = {};

  // The order of all items under the current sort, computed once per sort; filtering walks
  // it and keeps the matches, so a filter or search costs one pass over the columns.
  var order = null, orderKey = "";
  function sortOrder() {
    var key = state.sort + ":" + state.dir;
    if (order && orderKey === key) { return order; }
    var keys = new Float64Array(N);
    var text = null;
    for (var i = 0; i < N; i++) {
      var v = sortKey(i);
      if (typeof v === "string") { text = text || new Array(N); text[i] = v; keys[i] = 0; }
      else { keys[i] = v === null || v === undefined ? NaN : v; }
    }
    var idx = new Array(N);
    for (var j = 0; j < N; j++) { idx[j] = j; }
    var dir = state.dir;
    idx.sort(function (x, y) {
      var a, b;
      if (text) {
        a = text[x]; b = text[y];
        if (a < b) { return -dir; }
        if (a > b) { return dir; }
        return x - y;
      }
      a = keys[x]; b = keys[y];
      var an = a !== a, bn = b !== b;
      if (an || bn) { return an === bn ? x - y : (an ? 1 : -1); }
      if (a < b) { return -dir; }
      if (a > b) { return dir; }
      return x - y;
    });
    order = idx;
    orderKey = key;
    return order;
  }

  function applyFilters() {
    var active = state.chips.map(function (id) { return chipById[id]; }).filter(Boolean);
    if (state.q) { ensureTitles(); }
    var nc = chipDefs.length;
    var cnt = new Array(nc).fill(0);
    var keep = new Uint8Array(N);
    for (var i = 0; i < N; i++) {
      var ok = true;
      for (var a = 0; a < active.length; a++) {
        if (!active[a][3](i)) { ok = false; break; }
      }
      if (!ok || !matchesSearch(i)) { continue; }
      keep[i] = 1;
      var fl = C.flags[i];
      for (var c = 0; c < nc; c++) {
        var def = chipDefs[c];
        if (def[2] ? (fl & def[2]) !== 0 : def[3](i)) { cnt[c]++; }
      }
    }
    counts = {};
    chipDefs.forEach(function (def, c) { counts[def[0]] = cnt[c]; });
    var all = sortOrder(), out = [];
    for (var j = 0; j < N; j++) { if (keep[all[j]]) { out.push(all[j]); } }
    visible = out;
  }

  function sortKey(i) {
    var key = state.sort;
    if (key === "worst") { return worstCache[i]; }
    if (key === "index") { return i; }
    if (key === "cost") { return C.cost[i]; }
    if (key === "latency") { return C.lat[i]; }
    if (key === "outcome") { return C.out[i]; }
    if (key.charAt(0) === "d") { var k = +key.slice(1); var b = C.b ? C.b[k][i] : null, c = C.c[k][i]; return b === null || c === null || b === undefined || c === undefined ? null : c - b; }
    if (key.charAt(0) === "c") { return C.c[+key.slice(1)][i]; }
    return i;
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
  // Virtualized: only the rows in view (and OVERSCAN either side) are in the DOM, between
  // two spacer rows that stand for the rest.
  var tableScroll = el("div", "table-scroll vscroll");
  tableScroll.appendChild(table);
  listWrap.appendChild(tableScroll);
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
      tableScroll.scrollTop = 0;
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
      tableScroll.scrollTop = 0;
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

  var ROW_H = 33, OVERSCAN = 8;
  var topPad = el("tr", "pad"), bottomPad = el("tr", "pad");
  var topCell = el("td"), bottomCell = el("td");
  [[topPad, topCell], [bottomPad, bottomCell]].forEach(function (p) {
    p[0].setAttribute("aria-hidden", "true");
    p[1].colSpan = columns.length;
    p[0].appendChild(p[1]);
  });

  function rowNode(i) {
    var r = rowOf(i);
    var tr = el("tr", "row");
    tr.tabIndex = 0;
    tr.dataset.item = String(i);
    tr.setAttribute("aria-rowindex", String(visible.indexOf(i) + 2));
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
    return tr;
  }

  var shown = [0, 0];
  function renderRows() {
    var view = tableScroll.clientHeight || 600;
    var head = thead.offsetHeight || 0;
    var first = Math.max(0, Math.floor(Math.max(0, tableScroll.scrollTop - head) / ROW_H) - OVERSCAN);
    var last = Math.min(visible.length, first + Math.ceil(view / ROW_H) + 2 * OVERSCAN);
    shown = [first, last];
    var frag = document.createDocumentFragment();
    topCell.style.height = (first * ROW_H) + "px";
    bottomCell.style.height = ((visible.length - last) * ROW_H) + "px";
    topPad.hidden = first === 0;
    bottomPad.hidden = last === visible.length;
    frag.appendChild(topPad);
    for (var p = first; p < last; p++) { frag.appendChild(rowNode(visible[p])); }
    frag.appendChild(bottomPad);
    var focused = document.activeElement && document.activeElement.parentNode === tbody ? document.activeElement.dataset.item : null;
    tbody.textContent = "";
    tbody.appendChild(frag);
    if (focused !== null) {
      var again = tbody.querySelector('tr[data-item="' + focused + '"]');
      if (again) { again.focus({ preventScroll: true }); }
    }
    // Rows are one line each (CSS); measure once and redraw if the guess was off.
    var one = tbody.querySelector("tr.row");
    if (one) {
      var h = one.getBoundingClientRect().height;
      if (h > 0 && Math.abs(h - ROW_H) > 0.5) { ROW_H = h; renderRows(); }
    }
  }

  var scrollQueued = false;
  tableScroll.addEventListener("scroll", function () {
    if (scrollQueued) { return; }
    scrollQueued = true;
    requestAnimationFrame(function () { scrollQueued = false; if (C) { renderRows(); } });
  });

  // Scroll so the row at position p of the filtered list is on screen, draw, and focus it.
  function focusRow(p) {
    if (p < 0 || p >= visible.length) { return; }
    var head = thead.offsetHeight || 0;
    var top = head + p * ROW_H, view = tableScroll.clientHeight;
    if (top - head < tableScroll.scrollTop) { tableScroll.scrollTop = top - head; }
    else if (top + ROW_H > tableScroll.scrollTop + view) { tableScroll.scrollTop = top + ROW_H - view; }
    renderRows();
    var tr = tbody.querySelector('tr[data-item="' + visible[p] + '"]');
    if (tr) { tr.focus({ preventScroll: true }); }
  }

  function renderTable() {
    renderRows();
    table.setAttribute("aria-rowcount", String(visible.length + 1));
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
    if (state.q && textHits && textHits.q === state.q && !textHits.complete) {
      text += " (searching the item text: " + textHits.done + " of " + textHits.total + " chunks)";
    } else if (state.q && !canInflate) {
      text += " (titles only)";
    }
    status.textContent = text;
    if (state.q && textHits && textHits.q === state.q && textHits.complete) { root.setAttribute("data-search", "done"); }
    else if (state.q) { root.setAttribute("data-search", "running"); } else { root.removeAttribute("data-search"); }
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
    return new Response(inflateStream(node.textContent.trim())).arrayBuffer().then(function (buf) { return new DataView(buf); });
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

  var detailFor = -2;
  function renderDetail() {
    detail.textContent = "";
    var i = state.item;
    detailFor = i;
    if (i < 0 || i >= N) { detail.hidden = true; detail.removeAttribute("data-item"); return; }
    detail.hidden = false;
    var r = rowOf(i);
    var head = el("div", "d-head");
    head.appendChild(el("h3", "", "Item " + r[R_I]));
    var close = el("button", "close", "Close ✕");
    close.type = "button";
    close.setAttribute("aria-label", "Close item detail");
    close.addEventListener("click", function () { closeDetail(); });
    head.appendChild(close);
    detail.appendChild(head);
    var d = detailOf(i);
    if (!d) {
      detailFor = -2;
      detail.removeAttribute("data-item");
      detail.appendChild(el("p", "muted", "Unpacking the item text…"));
      getChunk(Math.floor(i / CHUNK)).then(function () {
        if (state.item === i) { renderDetail(); }
      }, function (err) {
        if (state.item === i) { detail.appendChild(el("p", "err", "Item text could not be unpacked: " + err.message)); }
      });
      return;
    }
    detail.setAttribute("data-item", String(i));
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

    if (d.calls && d.calls.length) {
      // Every model call of the item in the order it was made: an agent loop's turns, judges.
      var sm = section("Model calls (" + d.calls.length + ")");
      var ct = el("table", "mini calls");
      var ch = el("tr");
      var repeated = d.calls.some(function (c) { return c[8] !== null && c[8] !== undefined; });
      ["#"].concat(repeated ? ["Repeat"] : [], ["Model", "Purpose", "Tokens in / out", "Cost", "Latency", "Tools", "Outcome"])
        .forEach(function (h) { ch.appendChild(el("th", "", h)); });
      ct.appendChild(ch);
      d.calls.forEach(function (c, n) {
        var tr = el("tr");
        tr.appendChild(el("td", "num", n + 1));
        if (repeated) { tr.appendChild(el("td", "num", c[8] === null || c[8] === undefined ? "—" : c[8] + 1)); }
        tr.appendChild(el("td", "mono", c[0]));
        tr.appendChild(el("td", "", c[1]));
        tr.appendChild(el("td", "num", (c[2] === null ? "—" : c[2]) + " / " + (c[3] === null ? "—" : c[3])));
        tr.appendChild(el("td", "num", c[4]));
        tr.appendChild(el("td", "num", c[5] === null ? "—" : ms(c[5])));
        tr.appendChild(el("td", "mono", c[6] || "—"));
        tr.appendChild(el("td", "", c[7]));
        ct.appendChild(tr);
      });
      sm.appendChild(ct);
      detail.appendChild(sm);
    }
  }

  function openItem(i, focusDetail) {
    state.item = i;
    renderRows();
    renderDetail();
    writeHash();
    if (focusDetail) {
      detail.tabIndex = -1;
      detail.focus();
      if (detail.scrollIntoView) { detail.scrollIntoView({ block: "nearest" }); }
    }
  }

  function closeDetail() {
    var i = state.item;
    state.item = -1;
    renderRows();
    renderDetail();
    writeHash();
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
    else if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      focusRow(visible.indexOf(+tr.dataset.item) + (ev.key === "ArrowDown" ? 1 : -1));
    }
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
      tableScroll.scrollTop = 0;
      update(true);
      searchText(state.q);
    }, 120);
  });

  // ---- deep links: filters, search, sort, page and item live in location.hash ----------
  function toHash() {
    var p = [];
    if (state.chips.length) { p.push("f=" + state.chips.map(encodeURIComponent).join(",")); }
    if (state.q) { p.push("q=" + encodeURIComponent(state.q)); }
    if (state.sort !== "worst" || state.dir !== 1) { p.push("sort=" + encodeURIComponent(state.sort) + "&dir=" + (state.dir > 0 ? "asc" : "desc")); }
    if (state.item >= 0) { p.push("item=" + state.item); }
    return p.length ? "#" + p.join("&") : "";
  }

  function fromHash(hash) {
    var s = { chips: [], q: "", sort: "worst", dir: 1, item: -1 };
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
    update(false);
    searchText(state.q);
    revealItem();
  });

  function update(pushHash) {
    if (!C) { return; }
    var t0 = performance.now();
    applyFilters();
    renderChips();
    renderTable();
    // How long filtering, counting and drawing the rows took (read by tests and benchmarks).
    root.setAttribute("data-update-ms", (performance.now() - t0).toFixed(1));
    if (state.item !== detailFor) { renderDetail(); }
    if (pushHash) { writeHash(); }
    root.setAttribute("data-ready", "true");
  }

  // ---- start: the columns, then the table (interactive); item text on demand ----------
  var noscript = byId("explorer-noscript");
  if (noscript) { noscript.hidden = true; }
  if (!canInflate) {
    // No DecompressionStream: the static report above is complete; say why there is no table.
    var note = byId("explorer-unsupported");
    if (note) { note.hidden = false; }
    root.hidden = true;
    root.setAttribute("data-ready", "unsupported");
    return;
  }
  status.textContent = "Unpacking " + N + " items…";
  working(1);
  inflate(byId("axl-cols").textContent.trim()).then(function (text) {
    C = JSON.parse(text);
    computeWorst();
    state = fromHash(location.hash);
    lastHash = location.hash;
    search.value = state.q;
    update(false);
    searchText(state.q);
    revealItem();
    working(-1);
    if (hist) { startStrips(); }
  }, function (err) {
    working(-1);
    root.setAttribute("data-ready", "failed");
    status.textContent = "The item data could not be unpacked: " + err.message;
  });

  function startStrips() {
    loadStrips().then(function (view) {
      histView = view;
      root.setAttribute("data-history", view ? "loaded" : "unavailable");
      update(false);
      renderDetail();
    }, function () { root.setAttribute("data-history", "failed"); });
  }
})();
