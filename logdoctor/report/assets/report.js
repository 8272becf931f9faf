/* logdoctor HTML report: draws each run's figure description (JSON written by report/charts.py) with uPlot.
 * A run's charts are built when its card is open and in view, so a 1,000-run report opens fast.
 * Charts: hover values in the legend, drag to zoom, double-click to reset, shift-drag or shift-wheel to pan,
 * a log/linear toggle per panel, TensorBoard-style EMA smoothing (the raw line stays faint behind), the
 * findings' evidence drawn over the data (bands, vertical marks, level lines, points, ticks).
 * "Compare runs" overlays one metric of several runs on one chart.
 * The audit's page (audit/page.py) adds its sweep: a picker of the setting (most important first), the outcome of
 * every run against it, every run's loss overlaid and coloured by it, parallel coordinates of every setting and
 * the final loss, and a sortable table linking each run to its card.
 * Every log-derived string comes from JSON and enters the page as text (textContent), never as markup. */
(function () {
  "use strict";
  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  var INDEX_ROWS = 20, OVERLAY_DEFAULT = 6, HEIGHT = 230;
  var smoothing = 0;
  var charts = [];               // every live chart: {u, el, rebuild}
  window.logdoctorCharts = charts; // for people poking at the page (and the browser tests)

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  var specs = {};
  /* A run's chart description (report/charts.py); integer steps arrive as gaps ("dx") and are summed back. */
  function spec(id) {
    if (!(id in specs)) {
      var node = document.getElementById("chart-" + id), s = node ? JSON.parse(node.textContent) : null;
      (s ? s.panels : []).forEach(function (p) { p.lines.forEach(function (l) {
        if (l.dx) { var at = 0; l.x = l.dx.map(function (d) { return (at += d); }); delete l.dx; }
      }); });
      specs[id] = s;
    }
    return specs[id];
  }

  /* TensorBoard's smoothing: an exponential moving average, debiased so the start is not pulled to 0. */
  function ema(y, w) {
    if (!w) return y;
    var out = new Array(y.length), last = 0, n = 0;
    for (var i = 0; i < y.length; i++) {
      var v = y[i];
      if (v === null || !isFinite(v)) { out[i] = v; continue; }
      last = last * w + (1 - w) * v; n++;
      out[i] = last / (1 - Math.pow(w, n));
    }
    return out;
  }
  function positive(y) { return y.map(function (v) { return v !== null && v > 0 ? v : null; }); }

  /* A uPlot data table for lines [{x, y, twin}]: [xs, raw..., smoothed...] aligned on the union of steps. */
  function table(lines, logMain, logTwin) {
    var parts = lines.map(function (l) {
      var log = l.twin ? logTwin : logMain, y = log ? positive(l.y) : l.y;
      return [l.x, y, ema(y, smoothing)];
    });
    var joined = uPlot.join(parts);
    var raw = [], smooth = [];
    for (var i = 0; i < lines.length; i++) { raw.push(joined[1 + 2 * i]); smooth.push(joined[2 + 2 * i]); }
    return [joined[0]].concat(raw, smooth);
  }

  /* Seconds as a person reads a run's age: "45 s", "12 min", "3.5 h", "2.1 d". */
  function duration(v) {
    var a = Math.abs(v);
    return a < 60 ? +v.toFixed(1) + " s" : a < 3600 ? +(v / 60).toPrecision(3) + " min" : a < 86400 ? +(v / 3600).toPrecision(3) + " h" : +(v / 86400).toPrecision(3) + " d";
  }
  /* Axis ticks: short ("5e-4", "0.25", "3e+4"). */
  function tick(v) {
    if (v === null || v === undefined) return "";
    var a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(1).replace(".0e", "e") : String(+v.toPrecision(4));
  }
  function fmt(v) {
    if (v === null || v === undefined) return "–";
    var a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : String(+v.toPrecision(5));
  }

  /* Finding marks: bands go under the curves, the rest over them. */
  function marksPlugin(marks) {
    function draw(u, under) {
      var ctx = u.ctx, b = u.bbox, px = uPlot.pxRatio;
      var X = function (v) { return u.valToPos(v, "x", true); };
      var Y = function (v) { return u.valToPos(v, "y", true); };
      ctx.save();
      ctx.beginPath(); ctx.rect(b.left, b.top, b.width, b.height); ctx.clip();
      marks.forEach(function (m) {
        if ((m.kind === "band") !== under) return;
        ctx.strokeStyle = ctx.fillStyle = m.color;
        ctx.lineWidth = 1.5 * px;
        ctx.setLineDash(m.dashed ? [6 * px, 4 * px] : []);
        ctx.globalAlpha = 1;
        var vline = function (x) { ctx.beginPath(); ctx.moveTo(X(x), b.top); ctx.lineTo(X(x), b.top + b.height); ctx.stroke(); };
        if (m.kind === "band") {
          ctx.globalAlpha = 0.13;
          ctx.fillRect(X(m.x0), b.top, X(m.x1) - X(m.x0), b.height);
        } else if (m.kind === "vline") {
          vline(m.x0);
        } else if (m.kind === "vlines") {
          ctx.globalAlpha = 0.6; (m.xs || []).forEach(vline);
        } else if (m.kind === "level" && m.y !== undefined && (u.scales.y.distr !== 3 || m.y > 0)) {
          var x0 = m.x0 === undefined ? b.left : X(m.x0), x1 = m.x1 === undefined ? b.left + b.width : X(m.x1);
          ctx.beginPath(); ctx.moveTo(x0, Y(m.y)); ctx.lineTo(x1, Y(m.y)); ctx.stroke();
        } else if (m.kind === "point" && m.y !== undefined) {
          ctx.beginPath(); ctx.arc(X(m.x0), Y(m.y), 5 * px, 0, 2 * Math.PI); ctx.fill();
        } else if (m.kind === "ticks") {
          (m.xs || []).forEach(function (x) { ctx.beginPath(); ctx.moveTo(X(x), b.top); ctx.lineTo(X(x), b.top + 10 * px); ctx.stroke(); });
        }
      });
      ctx.restore();
    }
    return { hooks: { drawClear: function (u) { draw(u, true); }, draw: function (u) { draw(u, false); } } };
  }

  /* Shift-drag and shift-wheel pan the x range (a plain drag zooms, a double-click resets: uPlot's own). */
  function panPlugin() {
    return { hooks: { ready: function (u) {
      var over = u.over;
      u.root.addEventListener("mousedown", function (e) {
        if (!e.shiftKey || !over.contains(e.target)) return;
        e.stopPropagation(); e.preventDefault();
        var x0 = e.clientX, min = u.scales.x.min, max = u.scales.x.max, per = (max - min) / over.clientWidth;
        function move(ev) { var d = (ev.clientX - x0) * per; u.setScale("x", { min: min - d, max: max - d }); }
        function up() { document.removeEventListener("mousemove", move); document.removeEventListener("mouseup", up); }
        document.addEventListener("mousemove", move); document.addEventListener("mouseup", up);
      }, true);
      over.addEventListener("wheel", function (e) {
        if (!e.shiftKey) return;
        e.preventDefault();
        var min = u.scales.x.min, max = u.scales.x.max, d = (max - min) * 0.1 * Math.sign(e.deltaY || e.deltaX);
        u.setScale("x", { min: min + d, max: max + d });
      }, { passive: false });
    } } };
  }

  /* One chart in `box`: lines [{x, y, label, color, twin}], options {scale, twinScale, ylim, marks, sync, ylabel}. */
  function chart(box, lines, opt) {
    var logMain = opt.scale !== "linear", logTwin = opt.twinScale === "log";
    var hasTwin = lines.some(function (l) { return l.twin; });
    var head = el("div", "chart-head");
    head.appendChild(el("span", "ylabel", opt.ylabel || ""));
    var toggle = el("button", "scale-toggle", "");
    head.appendChild(toggle);
    var holder = el("div", "chart");
    box.appendChild(head); box.appendChild(holder);
    if (opt.marks && opt.marks.length) {
      var key = el("ul", "marks");
      opt.marks.forEach(function (m) {
        var li = el("li"), sw = el("i", "sw" + (m.dashed ? " dashed" : "") + (m.kind === "band" ? " band" : ""));
        sw.style.borderColor = sw.style.background = m.color;
        li.appendChild(sw); li.appendChild(document.createTextNode(m.label)); key.appendChild(li);
      });
      box.appendChild(key);
    }
    var entry = { u: null, el: box, marks: opt.marks || [] };
    function build() {
      if (entry.u) entry.u.destroy();
      toggle.textContent = logMain ? "log scale ✓" : "log scale";
      var yscale = { distr: logMain ? 3 : 1, log: opt.scale === "log2" ? 2 : 10 };
      var levels = (opt.marks || []).filter(function (m) { return m.kind === "level" && m.y !== undefined && (!logMain || m.y > 0); })
                                     .map(function (m) { return m.y; });
      if (!logMain && opt.ylim) yscale.range = function () { return opt.ylim; };
      else if (levels.length) yscale.range = function (u, min, max) { return withLevels(min, max, levels, logMain); };
      var series = [opt.time ? { label: "time", value: function (u, v) { return v === null ? "–" : duration(v); } }
                             : { label: "step", value: function (u, v) { return v === null ? "–" : Math.round(v).toLocaleString("en"); } }];
      lines.forEach(function (l) {
        series.push({ label: smoothing ? l.label + " (raw)" : l.label, stroke: l.color, alpha: smoothing ? 0.25 : 1, width: 1, scale: l.twin ? "lr" : "y",
                      spanGaps: true, show: true, points: { show: false } });
      });
      lines.forEach(function (l) {
        series.push({ label: l.label, stroke: l.color, width: 1.6, scale: l.twin ? "lr" : "y", spanGaps: true,
                      show: smoothing > 0, points: { show: false }, value: function (u, v) { return fmt(v); } });
      });
      var axes = [{ stroke: "#555", grid: { stroke: "#eee" }, values: opt.time ? function (u, vs) { return vs.map(duration); } : undefined }, { stroke: "#555", grid: { stroke: "#eee" }, size: 60, values: function (u, vs) { return vs.map(tick); },
                                                                splits: logMain ? logSplits : undefined, filter: logMain ? everySplit : undefined }];
      if (hasTwin) axes.push({ scale: "lr", side: 1, stroke: "#888", grid: { show: false }, size: 60, values: function (u, vs) { return vs.map(tick); },
                               splits: logTwin ? logSplits : undefined, filter: logTwin ? everySplit : undefined });
      var scales = { x: { time: false }, y: yscale };
      if (hasTwin) scales.lr = { distr: logTwin ? 3 : 1 };
      var plugins = [panPlugin()];
      if (opt.marks) plugins.push(marksPlugin(opt.marks));
      var zoom = entry.u && entry.zoomed ? { min: entry.u.scales.x.min, max: entry.u.scales.x.max } : null;
      var u = new uPlot({
        width: Math.max(240, holder.clientWidth || box.clientWidth || 600), height: HEIGHT,
        series: series, axes: axes, scales: scales, plugins: plugins,
        cursor: { sync: opt.sync ? { key: opt.sync } : undefined, drag: { x: true, y: false } },
        legend: { live: true },
        hooks: { setScale: [function (uu, key) { if (key === "x") zoomed(uu); }] },
      }, table(lines, logMain, logTwin), holder);
      // the raw series are the faint copies behind: their legend rows would repeat the smoothed ones
      var rows = u.root.querySelectorAll(".u-legend .u-series");
      for (var i = 1; i <= lines.length; i++) {
        if (smoothing > 0) rows[i].style.display = "none";
        else rows[lines.length + i].style.display = "none";
      }
      if (!smoothing) for (var j = 1; j <= lines.length; j++) u.series[j].value = function (u, v) { return fmt(v); };
      entry.u = u;
      if (zoom) u.setScale("x", zoom);
    }
    /* Remember whether the step range is zoomed (kept across a rebuild) and zoom the other panels alike. */
    function zoomed(u) {
      if (!u.data || !u.data[0].length) return;
      var xs = u.data[0];
      entry.zoomed = u.scales.x.min > xs[0] || u.scales.x.max < xs[xs.length - 1];
      if (!opt.group || opt.group.busy) return;
      opt.group.busy = true;
      opt.group.forEach(function (o) { if (o !== entry && o.u) o.u.setScale("x", { min: u.scales.x.min, max: u.scales.x.max }); });
      opt.group.busy = false;
    }
    if (opt.group) opt.group.push(entry);
    toggle.addEventListener("click", function () { logMain = !logMain; build(); });
    entry.rebuild = build;
    build();
    charts.push(entry);
    return entry;
  }

  /* A run's panels in its card; zooming one zooms them all (same steps). */
  function drawRun(card) {
    var id = card.dataset.run, s = spec(id), box = card.querySelector(".charts");
    if (!s || !box || box.dataset.drawn) return;
    box.dataset.drawn = "1";
    var group = [];
    s.panels.forEach(function (p) {
      var cell = el("div", "panel");
      box.appendChild(cell);
      chart(cell, p.lines, { scale: p.scale, twinScale: p.twinScale, ylim: p.ylim, marks: p.marks, sync: "run-" + id, ylabel: p.ylabel, group: group });
    });
  }

  /* Open cards are drawn as they scroll into view; a closed card when it is opened. */
  function setupCards() {
    var cards = document.querySelectorAll("section.run[data-run]");
    var seen = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
      entries.forEach(function (e) { if (e.isIntersecting && e.target.querySelector("details").open) { drawRun(e.target); seen.unobserve(e.target); } });
    }, { rootMargin: "400px" }) : null;
    document.querySelectorAll("section.run details").forEach(function (det) {
      det.addEventListener("toggle", function () { if (det.open) unfold(det.querySelector("script.later")); });
    });
    var inView = true; // cards come in page order: past the first one below the fold, none is in view
    cards.forEach(function (card) {
      var det = card.querySelector("details");
      det.addEventListener("toggle", function () { if (det.open) drawRun(card); });
      if (!det.open) return;
      // cards already in view are drawn at once (no wait for the observer's first report), the rest as they come
      inView = inView && card.getBoundingClientRect().top < window.innerHeight;
      if (!seen || inView) drawRun(card);
      else seen.observe(card);
    });
  }

  /* Compare runs: one metric (by role, or by name for task metrics), the ticked runs overlaid. */
  function setupOverlay() {
    var root = document.getElementById("compare"), listNode = document.getElementById("runs-index");
    if (!root || !listNode) return;
    var runs = JSON.parse(listNode.textContent), built = false;
    function build() {
      if (built) return; built = true;
      var body = root.querySelector(".compare-body");
      var controls = el("div", "compare-controls");
      var picker = el("select"), filter = el("input"), list = el("div", "runlist"), box = el("div", "overlay");
      filter.type = "search"; filter.placeholder = "filter runs";
      var choices = [];
      runs.forEach(function (r) { r.keys.forEach(function (k) { if (choices.indexOf(k) < 0) choices.push(k); }); });
      choices.forEach(function (k) { var o = el("option", "", k); o.value = k; picker.appendChild(o); });
      controls.appendChild(el("label", "", "metric ")).appendChild(picker);
      controls.appendChild(filter);
      // x along steps, or along the time since each run's start where the runs logged wall times
      var along = el("select");
      [["step", "step"], ["time", "time since start"]].forEach(function (o) { var opt = el("option", "", o[1]); opt.value = o[0]; along.appendChild(opt); });
      controls.appendChild(el("label", "", " x ")).appendChild(along);
      along.addEventListener("change", function () { draw(); });
      body.appendChild(controls); body.appendChild(list); body.appendChild(box);
      var ticked = {};
      function fill() {
        list.textContent = "";
        var key = picker.value, q = filter.value.toLowerCase(), n = 0;
        runs.forEach(function (r) {
          if (r.keys.indexOf(key) < 0 || (q && r.name.toLowerCase().indexOf(q) < 0)) return;
          var lab = el("label", "pick"), cb = el("input");
          cb.type = "checkbox"; cb.checked = !!ticked[r.id];
          cb.addEventListener("change", function () { ticked[r.id] = cb.checked; draw(); });
          lab.appendChild(cb); lab.appendChild(el("span", "fg-" + r.status.replace(" ", "-"), "● "));
          lab.appendChild(document.createTextNode(r.name)); list.appendChild(lab); n++;
        });
        if (!n) list.appendChild(el("span", "meta", "no run logs this metric"));
      }
      function draw() {
        box.textContent = "";
        var key = picker.value, lines = [];
        runs.forEach(function (r) {
          if (!ticked[r.id]) return;
          var s = spec(r.id), line = null;
          (s ? s.panels : []).forEach(function (p) { p.lines.forEach(function (l) { if (!line && l.key === key) line = l; }); });
          if (line && along.value === "time") line = alongTime(line);
          if (line) lines.push({ x: line.x, y: line.y, label: r.name, color: PALETTE[lines.length % PALETTE.length], twin: false });
        });
        if (!lines.length) {
          box.appendChild(el("p", "meta", along.value === "time" ? "no ticked run logs the time of its " + key : "tick runs to overlay their " + key));
          return;
        }
        // decades spanned by the finite values only (a blown-up run's line ends in a gap: null)
        var span = spread([].concat.apply([], lines.map(function (l) { return l.y; })));
        chart(box, lines, { scale: span > 100 ? "log" : "linear", ylabel: key, time: along.value === "time" });
      }
      /* A line's points placed at their time since the run's start (those with no time left out), in time order. */
      function alongTime(line) {
        if (!line.t) return null;
        var at = [];
        line.t.forEach(function (t, i) { if (t !== null) at.push(i); });
        at.sort(function (a, b) { return line.t[a] - line.t[b]; });
        return at.length ? { x: at.map(function (i) { return line.t[i]; }), y: at.map(function (i) { return line.y[i]; }) } : null;
      }
      function reset() {
        ticked = {};
        runs.filter(function (r) { return r.keys.indexOf(picker.value) >= 0; }).slice(0, OVERLAY_DEFAULT).forEach(function (r) { ticked[r.id] = true; });
        fill(); draw();
      }
      // another metric keeps the ticked runs that log it; the default pick only when none does
      picker.addEventListener("change", function () {
        var kept = runs.some(function (r) { return ticked[r.id] && r.keys.indexOf(picker.value) >= 0; });
        if (kept) { fill(); draw(); } else reset();
      });
      filter.addEventListener("input", fill);
      reset();
    }
    var det = root.querySelector("details");
    det.addEventListener("toggle", function () { if (det.open) build(); });
    if (location.hash === "#compare") det.open = true;
    if (det.open) build();
  }

  /* A click on a header sorts the table by that column, again to reverse: numbers by their data-sort key,
   * text in natural order. `before` runs first (rows still to unfold), `after` last (rows to hide). */
  function sortable(table, before, after) {
    var tb = table.tBodies[0];
    table.querySelectorAll("th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        if (before) before();
        var asc = th.dataset.dir !== "asc"; th.dataset.dir = asc ? "asc" : "desc";
        var sorted = Array.from(tb.rows);
        sorted.sort(function (a, b) {
          var x = a.cells[col].dataset.sort || a.cells[col].textContent, y = b.cells[col].dataset.sort || b.cells[col].textContent;
          var nx = parseFloat(x), ny = parseFloat(y), c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y, undefined, { numeric: true });
          return asc ? c : -c;
        });
        sorted.forEach(function (r) { tb.appendChild(r); });
        if (after) after();
      });
    });
  }

  /* Markup kept as raw text until wanted (report/html.py `_later`): put in place of its holder. */
  function unfold(holder) {
    if (!holder) return;
    holder.insertAdjacentHTML("beforebegin", holder.textContent);
    holder.remove();
  }

  /* The index: worst runs first, the first rows in the page, the rest arriving with "show all", the filter
   * or a sort; a click on a header sorts by it (numbers by their data-sort key, names in natural order). */
  function setupIndex() {
    var table = document.querySelector("table.index");
    if (!table) return;
    var tb = table.tBodies[0], first = tb.rows.length, total = +tb.dataset.rows || first, all = false, q = "";
    var tools = document.getElementById("index-tools");
    function everything() {
      var rest = table.parentNode.querySelector("script.later");
      if (rest) { tb.insertAdjacentHTML("beforeend", rest.textContent); rest.remove(); }
    }
    function limit() {
      var shown = 0;
      Array.from(tb.rows).forEach(function (r) {
        var match = !q || r.cells[1].textContent.toLowerCase().indexOf(q) >= 0;
        r.hidden = !match || (!all && shown >= first);
        if (!r.hidden) shown++;
      });
    }
    if (tools && total > first) {
      tools.hidden = false;
      var more = tools.querySelector("button"), find = tools.querySelector("input");
      more.textContent = "show all " + total + " runs";
      more.addEventListener("click", function () {
        everything(); all = !all; more.textContent = all ? "show the first " + first : "show all " + total + " runs"; limit();
      });
      find.addEventListener("input", function () { everything(); q = find.value.toLowerCase(); limit(); });
    }
    sortable(table, everything, limit);
  }

  /* A link to a run (index, sweep table) opens its card. */
  function openCard(id) {
    var card = id && document.getElementById(id);
    if (card) card.querySelector("details").open = true;
    return card;
  }
  function setupLinks() {
    document.addEventListener("click", function (e) {
      var a = e.target.closest && e.target.closest('a[href^="#run-"]');
      if (a) openCard(a.getAttribute("href").slice(1));
    });
  }

  /* The audit's sweep (audit/page.py): the outcome of every run against a setting, every run's loss overlaid
   * coloured by that setting, and the table. uPlot draws the axes, zoom and cursor of each chart and a plugin
   * paints the runs (as uPlot series, every run's steps would be joined into one table: runs x steps cells).
   * Hovering names the nearest run, a click opens its card. */
  var STATUS_COLOR = { critical: "#c62828", warning: "#e08a00", healthy: "#2e7d32" };

  /* The least and the greatest of many numbers (Math.min.apply overflows the stack past ~100,000 arguments). */
  function extent(vs) {
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < vs.length; i++) { if (vs[i] < lo) lo = vs[i]; if (vs[i] > hi) hi = vs[i]; }
    return [lo, hi];
  }
  /* Log-axis ticks and grid lines: 1, 2 and 5 times the powers of ten in range (1 alone where decades are narrow),
   * every k-th decade where many would crowd the axis (an LR falling to 5e-51 spans 48 of them: uPlot's own log
   * splits loop until the array overflows there). Vertical axes ask the height, horizontal ones the width. */
  function logSplits(u, axis, min, max) {
    if (!(min > 0) || !(max > min) || !isFinite(max)) return [];
    var vertical = u.axes[axis] && (u.axes[axis].side === 1 || u.axes[axis].side === 3);
    var room = (vertical ? u.bbox.height : u.bbox.width) / uPlot.pxRatio;
    var decades = Math.log10(max / min), out = [], few = decades < 3 && room / decades > 160;
    var every = Math.max(1, Math.ceil(decades / Math.max(2, Math.floor(room / (vertical ? 28 : 70)))));
    var lo = Math.floor(Math.log10(min)), hi = Math.ceil(Math.log10(max));
    for (var e = lo; e <= hi; e++) {
      if (((e % every) + every) % every) continue;  // round decades: 1e-10, 1e-20, ...
      (few ? [1, 2, 5] : [1]).forEach(function (m) { var v = +(m * Math.pow(10, e)).toPrecision(6); if (v >= min && v <= max) out.push(v); });
    }
    return out;
  }
  /* The y range of the data widened to the level lines (a clip threshold, the chance level) so none is off the axis. */
  function withLevels(min, max, levels, log) {
    var e = extent(levels), lo = min === null || !isFinite(min) ? e[0] : Math.min(min, e[0]), hi = max === null || !isFinite(max) ? e[1] : Math.max(max, e[1]);
    if (log) return [lo / 1.3, hi * 1.6];
    var pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.1 || 1;
    return [lo - pad, hi + pad];
  }
  /* Every split logSplits chose gets its label (uPlot's log filter would blank those off its own grid). */
  function everySplit(u, splits) { return splits; }
  /* [lo, hi] of positive (log) or all finite values at most `cap` (those above are drawn at the top edge),
   * padded to frame the marks. */
  function frame(values, log, cap) {
    var vs = values.filter(function (v) { return v !== null && isFinite(v) && (!log || v > 0); });
    var under = cap === undefined ? vs : vs.filter(function (v) { return v <= cap; });
    if (under.length) vs = under;
    if (!vs.length) return log ? [0.1, 10] : [0, 1];
    var e = extent(vs), lo = e[0], hi = e[1];
    if (log) return [lo / 1.3, hi * 1.6];  // more room on top, where what is off the chart is drawn
    var pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.1 || 1;
    return [lo - pad, hi + 2 * pad];
  }
  /* max / min of the finite values at most `cap` (0 when one is not positive): how many decades a log axis would show. */
  function spread(values, cap) {
    var vs = values.filter(function (v) { return v !== null && isFinite(v) && (cap === undefined || v <= cap); });
    var e = extent(vs);
    return vs.length && e[0] > 0 ? e[1] / e[0] : 0;
  }
  function median(vs) {
    var s = vs.filter(function (v) { return v !== null && isFinite(v); }).sort(function (a, b) { return a - b; });
    return s.length ? s[s.length >> 1] : null;
  }

  /* A uPlot chart whose data `paint(u, hot, logY, yr)` draws: one invisible series spans `xs` (the x range as it is:
   * no rounding to whole decades), y is fixed to opt.yRange(logY). `pick(u, left, top)` is the item under the cursor
   * (CSS px in the plot), `describe` its line; `controls` go in the chart's head beside the log toggle. */
  function paintedChart(box, opt) {
    var head = el("div", "chart-head");
    head.appendChild(opt.controls || el("span"));
    var toggle = el("button", "scale-toggle", "");
    head.appendChild(toggle);
    var holder = el("div", "chart"), readout = el("div", "readout", opt.hint);
    box.appendChild(head); box.appendChild(holder); box.appendChild(readout);
    if (opt.legend) box.appendChild(opt.legend);
    var entry = { u: null, el: box, hot: null, readout: readout }, logY = opt.logY;
    function hover(u) {
      var l = u.cursor.left, t = u.cursor.top;
      var hot = l === undefined || l === null || l < 0 ? null : opt.pick(u, l, t);
      readout.textContent = hot ? opt.describe(hot) : opt.hint;
      if (hot !== entry.hot) { entry.hot = hot; u.redraw(false, false); }
    }
    function build() {
      if (entry.u) entry.u.destroy();
      toggle.textContent = logY ? "log scale ✓" : "log scale";
      var yr = opt.yRange(logY), xa = opt.xAxis || {};
      var u = new uPlot({
        width: Math.max(240, holder.clientWidth || box.clientWidth || 600), height: HEIGHT,
        series: [{}, { stroke: "transparent", points: { show: false } }],
        axes: [{ stroke: "#555", grid: { stroke: "#eee" }, values: xa.values || function (u, vs) { return vs.map(tick); }, splits: xa.splits || (opt.logX ? logSplits : undefined) },
               { stroke: "#555", grid: { stroke: "#eee" }, size: 56, values: function (u, vs) { return vs.map(tick); }, splits: logY ? logSplits : undefined }],
        scales: { x: { time: false, distr: opt.logX ? 3 : 1, range: function (u, min, max) { return [min, max]; } },
                  y: { distr: logY ? 3 : 1, range: function () { return yr; } } },
        legend: { show: false },
        cursor: { drag: { x: true, y: false }, points: { show: false } },
        plugins: [panPlugin()],
        hooks: { draw: [function (u) { opt.paint(u, entry.hot, logY, yr); }], setCursor: [hover] },
      }, [opt.xs, [null, null]], holder);
      u.over.addEventListener("click", function () { if (entry.hot && openCard(entry.hot.id)) location.hash = entry.hot.id; });
      entry.u = u;
    }
    toggle.addEventListener("click", function () { logY = !logY; build(); });
    entry.rebuild = build;
    build();
    charts.push(entry);
    return entry;
  }

  function legendOf(items) {
    var key = el("ul", "marks");
    items.forEach(function (it) {
      var li = el("li"), sw = el("i", "sw " + (it[2] || "dot"));
      sw.style.borderColor = sw.style.background = sw.style.color = it[1];
      li.appendChild(sw); li.appendChild(document.createTextNode(it[0])); key.appendChild(li);
    });
    return key;
  }

  /* Final (filled) and best (ring) loss of every run at its setting's value; a loss that is NaN / inf at the end,
   * or above the chart, is a cross along its top edge. */
  function outcomeChart(box, data) {
    var runs = data.runs.filter(function (r) { return r.x !== null; });
    var values = [];
    runs.forEach(function (r) { values.push(r.final, r.best); });
    var cap = 10 * median(values), cats = data.categories;
    var xs = runs.map(function (r) { return r.x; });
    var xe = extent(xs), xlo = xe[0], xhi = xe[1];
    var span = cats ? [-0.5, cats.length - 0.5] : data.log ? [xlo / 1.6, xhi * 1.6] : [xlo - (xhi - xlo) * 0.06 - (xhi === xlo), xhi + (xhi - xlo) * 0.06 + (xhi === xlo)];
    var placed = [];
    function paint(u, hot, logY, yr) {
      var ctx = u.ctx, b = u.bbox, px = uPlot.pxRatio, crosses = {};
      placed = [];
      ctx.save(); ctx.beginPath(); ctx.rect(b.left, b.top, b.width, b.height); ctx.clip();
      var order = hot ? runs.filter(function (r) { return r !== hot; }).concat([hot]) : runs;
      order.forEach(function (r) {
        var cx = u.valToPos(r.x, "x"), color = STATUS_COLOR[r.status] || "#555", big = r === hot ? 1.6 : 1;
        [["final", r.final], ["best", r.best]].forEach(function (m) {
          var v = m[1];
          if (v === null ? !(m[0] === "final" && r.nonfinite) : logY && v <= 0) return;
          var off = v === null || v > yr[1], cy = off ? 7 : u.valToPos(v, "y");
          var X = b.left + cx * px, Y = b.top + cy * px, R = 4.5 * px * big;
          ctx.strokeStyle = ctx.fillStyle = color; ctx.lineWidth = 1.6 * px * big;
          ctx.beginPath();
          if (off) {
            ctx.moveTo(X - R, Y - R); ctx.lineTo(X + R, Y + R); ctx.moveTo(X + R, Y - R); ctx.lineTo(X - R, Y + R); ctx.stroke();
            var at = Math.round(cx), c = crosses[at] = crosses[at] || { X: X, Y: Y, runs: [], color: color };
            if (c.runs.indexOf(r) < 0) c.runs.push(r);
          }
          else { ctx.arc(X, Y, R, 0, 2 * Math.PI); if (m[0] === "final") ctx.fill(); else ctx.stroke(); }
          placed.push([cx, cy, r]);
        });
      });
      // how many runs are off the chart at each value
      ctx.font = (11 * px) + "px system-ui,sans-serif"; ctx.textBaseline = "middle";
      Object.keys(crosses).forEach(function (k) {
        var c = crosses[k];
        if (c.runs.length < 2) return;
        var text = String(c.runs.length), right = c.X + 7 * px + ctx.measureText(text).width <= b.left + b.width;
        ctx.fillStyle = c.color; ctx.textAlign = right ? "left" : "right";  // beside the cross, inside the plot
        ctx.fillText(text, right ? c.X + 7 * px : c.X - 7 * px, c.Y);
      });
      ctx.restore();
    }
    function pick(u, l, t) {
      var best = null, dist = 14 * 14;
      placed.forEach(function (p) { var d = (p[0] - l) * (p[0] - l) + (p[1] - t) * (p[1] - t); if (d < dist) { dist = d; best = p[2]; } });
      return best;
    }
    var xAxis = cats ? { splits: function () { return cats.map(function (c, i) { return i; }); },
                         values: function (u, vs) { return vs.map(function (v) { var c = cats[v]; return c === undefined ? "" : c.length > 12 ? c.slice(0, 11) + "…" : c; }); } } : null;
    var legend = legendOf([["final", "#555", "dot"], ["best", "#555", "ring"], ["NaN / inf or off the chart", "#555", "cross"]]
      .concat(Object.keys(STATUS_COLOR).map(function (s) { return [s, STATUS_COLOR[s], "dot"]; })));
    return paintedChart(box, {
      xs: span, logX: !cats && data.log, xAxis: xAxis, legend: legend, logY: spread(values, cap) > 100,
      yRange: function (log) { return frame(values, log, cap); },
      paint: paint, pick: pick,
      hint: "hover a point for its run, click to open it · drag: zoom · double-click: reset",
      describe: function (r) {
        return r.name + " · " + data.setting + " = " + r.label + " · final " + (r.nonfinite ? "NaN / inf" : fmt(r.final)) + " · best " + fmt(r.best) + " · " + r.status;
      },
    });
  }

  /* Every run's loss (the metric picked: train or validation loss, from its card's chart data), coloured by the setting. */
  function curvesChart(box, data) {
    var keys = [];
    var curves = data.runs.map(function (r) {
      var s = r.id ? spec(r.id.slice(4)) : null, lines = {};
      (s ? s.panels : []).forEach(function (p) { p.lines.forEach(function (l) {
        if (!(l.key in lines)) lines[l.key] = l;
        if (keys.indexOf(l.key) < 0 && /loss$/.test(l.key)) keys.push(l.key);
      }); });
      return { run: r, lines: lines };
    });
    if (!keys.length) { box.appendChild(el("p", "meta", "No run's loss is in this page.")); return null; }
    keys.sort();  // "train loss" before "val loss"
    var picker = el("select");
    keys.forEach(function (k) { var o = el("option", "", k); o.value = k; picker.appendChild(o); });
    var inner = el("div"), chartEntry = null, placed = [], hotAt = null;
    box.appendChild(inner);
    function draw() {
      var key = picker.value, shown = curves.filter(function (c) { return c.lines[key]; });
      var all = [], starts = [], xlo = Infinity, xhi = -Infinity;
      shown.forEach(function (c) {
        var l = c.lines[key], first = null;
        l.y.forEach(function (v) { if (v !== null && isFinite(v)) { all.push(v); if (first === null) first = v; } });
        if (first !== null) starts.push(first);
        if (l.x.length) { xlo = Math.min(xlo, l.x[0]); xhi = Math.max(xhi, l.x[l.x.length - 1]); }
      });
      var cap = starts.length ? 2 * extent(starts)[1] : undefined;
      if (xhi <= xlo) { xlo = isFinite(xlo) ? xlo - 1 : 0; xhi = xlo + 2; }
      function paint(u, hot, logY) {
        var ctx = u.ctx, b = u.bbox, px = uPlot.pxRatio;
        placed = [];
        ctx.save(); ctx.beginPath(); ctx.rect(b.left, b.top, b.width, b.height); ctx.clip();
        ctx.lineJoin = "round";
        var order = hot ? shown.filter(function (c) { return c.run !== hot; }).concat(shown.filter(function (c) { return c.run === hot; })) : shown;
        order.forEach(function (c) {
          var l = c.lines[key], ys = ema(l.y, smoothing), pts = [], on = false;
          ctx.strokeStyle = c.run.color; ctx.globalAlpha = hot && c.run !== hot ? 0.35 : 0.85;
          ctx.lineWidth = (c.run === hot ? 2.6 : 1.2) * px;
          ctx.beginPath();
          for (var i = 0; i < l.x.length; i++) {
            var v = ys[i];
            if (v === null || !isFinite(v) || (logY && v <= 0)) { on = false; continue; }
            var cx = u.valToPos(l.x[i], "x"), cy = u.valToPos(v, "y");
            pts.push(cx, cy);
            if (on) ctx.lineTo(b.left + cx * px, b.top + cy * px); else ctx.moveTo(b.left + cx * px, b.top + cy * px);
            on = true;
          }
          ctx.stroke();
          placed.push([c, pts]);
        });
        ctx.restore();
      }
      function pick(u, l, t) {
        var best = null, dist = 10 * 10;
        placed.forEach(function (p) {
          var pts = p[1];
          for (var i = 0; i < pts.length; i += 2) {
            var d = (pts[i] - l) * (pts[i] - l) + (pts[i + 1] - t) * (pts[i + 1] - t);
            if (d < dist) { dist = d; best = p[0].run; hotAt = [u.posToVal(pts[i], "x"), u.posToVal(pts[i + 1], "y")]; }
          }
        });
        return best;
      }
      inner.textContent = "";
      if (chartEntry) charts.splice(charts.indexOf(chartEntry), 1);
      var controls = el("label", "", "metric ");
      controls.appendChild(picker);
      chartEntry = paintedChart(inner, {
        controls: controls, xs: [xlo, xhi], legend: legendOf(data.legend.map(function (it) { return [(data.setting ? data.setting + " = " : "") + it[0], it[1], "line"]; })),
        logY: spread(all, cap) > 100,
        yRange: function (log) { return frame(all, log, cap); },
        paint: paint, pick: pick,
        hint: "hover a curve for its run, click to open it · drag: zoom · double-click: reset (curves above twice the highest starting loss leave the top)",
        describe: function (r) {
          return r.name + (data.setting ? " · " + data.setting + " = " + (r.label || "–") : "") + " · step " + Math.round(hotAt[0]).toLocaleString("en") + " · " + key + " " + fmt(hotAt[1]) + " · " + r.status;
        },
      });
    }
    picker.addEventListener("change", draw);
    draw();
    return chartEntry;
  }

  /* The sweep seen along one setting (data.settings[i]): its scale and legend, and each run's x, label and colour. */
  function along(data, axis) {
    var view = Object.assign({}, data, { setting: axis.name, numeric: axis.numeric, log: axis.log, categories: axis.categories, legend: axis.legend });
    view.runs = data.runs.map(function (r, i) { return Object.assign({}, r, { x: axis.x[i], label: axis.label[i], color: axis.color[i] }); });
    return view;
  }

  /* Parallel coordinates: an axis per swept setting (most important first) and one for the final loss, a line per
   * run coloured by its loss (dark: low, yellow: high; red: NaN / inf, drawn above the loss axis). Hover names the
   * nearest run, a click opens its card. A plain canvas: uPlot has no parallel axes. */
  var RAMP = ["#440154", "#46327e", "#365c8d", "#277f8e", "#1fa187", "#4ac16d", "#a0da39"];
  function ramp(t) {
    var at = Math.max(0, Math.min(1, t)) * (RAMP.length - 1), i = Math.min(Math.floor(at), RAMP.length - 2), f = at - i;
    var a = RAMP[i], b = RAMP[i + 1], out = "#";
    for (var k = 1; k < 7; k += 2) {
      var c = Math.round(parseInt(a.substr(k, 2), 16) + f * (parseInt(b.substr(k, 2), 16) - parseInt(a.substr(k, 2), 16)));
      out += (c < 16 ? "0" : "") + c.toString(16);
    }
    return out;
  }
  function parallelChart(box, data) {
    var axes = data.settings.slice(0, 12), runs = data.runs, H = 260, PAD = 28, TOP = 26;
    var finals = runs.map(function (r) { return r.final; }), cap = 10 * median(finals);
    var logY = spread(finals, cap) > 100;
    var yr = extent(finals.filter(function (v) { return v !== null && (!(cap > 0) || v <= cap) && (!logY || v > 0); }));
    if (!(yr[1] > yr[0])) yr = isFinite(yr[0]) ? [yr[0] - 1, yr[0] + 1] : [0, 1];  // the loss axis spans the losses drawn
    var holder = el("div", "chart"), readout = el("div", "readout"), hint = "hover a line for its run, click to open it";
    readout.textContent = hint;
    var canvas = el("canvas");
    holder.appendChild(canvas); box.appendChild(holder); box.appendChild(readout);
    box.appendChild(legendOf([["low " + data.y, RAMP[0], "line"], ["high", RAMP[RAMP.length - 1], "line"], ["NaN / inf or off the chart", "#c62828", "line"]]));
    var ext = axes.map(function (a) { var vs = a.x.filter(function (v) { return v !== null; }); return extent(a.log ? vs.map(Math.log) : vs); });
    var lines = [], hot = null;
    function position(w) {  // per run, its [x, y] on each axis in CSS px (null where it has no value)
      var xs = axes.concat([null]).map(function (a, j) { return PAD + j * (w - 2 * PAD) / Math.max(1, axes.length); });
      lines = runs.map(function (r, i) {
        var pts = axes.map(function (a, j) {
          var v = a.x[i];
          if (v === null) return null;
          var e = ext[j], t = a.categories ? (a.categories.length > 1 ? v / (a.categories.length - 1) : 0.5)
                                           : e[1] > e[0] ? ((a.log ? Math.log(v) : v) - e[0]) / (e[1] - e[0]) : 0.5;
          return [xs[j], TOP + (1 - t) * (H - TOP - PAD)];
        });
        var f = r.final, off = f === null ? r.nonfinite : f > yr[1];
        var t = off ? 1 : f === null ? null : logY ? (Math.log(f) - Math.log(yr[0])) / (Math.log(yr[1]) - Math.log(yr[0])) : (f - yr[0]) / (yr[1] - yr[0]);
        pts.push(t === null ? null : [xs[axes.length], off ? TOP - 14 : TOP + (1 - t) * (H - TOP - PAD)]);
        return { run: r, pts: pts, color: off ? "#c62828" : t === null ? "#9aa0a6" : ramp(t) };
      });
      return xs;
    }
    function draw() {
      var w = Math.max(240, holder.clientWidth || box.clientWidth || 600), px = window.devicePixelRatio || 1;
      canvas.width = w * px; canvas.height = H * px; canvas.style.width = w + "px"; canvas.style.height = H + "px";
      var ctx = canvas.getContext("2d"), xs = position(w);
      ctx.setTransform(px, 0, 0, px, 0, 0); ctx.clearRect(0, 0, w, H); ctx.lineJoin = "round";
      var order = hot ? lines.filter(function (l) { return l !== hot; }).concat([hot]) : lines;
      order.forEach(function (l) {
        ctx.strokeStyle = l.color; ctx.globalAlpha = hot && l !== hot ? 0.25 : 0.75; ctx.lineWidth = l === hot ? 2.6 : 1.2;
        ctx.beginPath();
        var on = false;
        l.pts.forEach(function (p) { if (!p) { on = false; return; } if (on) ctx.lineTo(p[0], p[1]); else ctx.moveTo(p[0], p[1]); on = true; });
        ctx.stroke();
      });
      ctx.globalAlpha = 1; ctx.strokeStyle = "#555"; ctx.fillStyle = "#333"; ctx.lineWidth = 1; ctx.font = "11px system-ui,sans-serif";
      axes.concat([{ name: "final " + data.y }]).forEach(function (a, j) {
        var x = xs[j];
        ctx.beginPath(); ctx.moveTo(x, TOP); ctx.lineTo(x, H - PAD); ctx.stroke();
        ctx.textAlign = j === 0 ? "left" : j === axes.length ? "right" : "center";
        var name = a.name.length > 16 ? a.name.slice(0, 15) + "…" : a.name;
        ctx.fillText(name, x, H - PAD + 14);
        var lo, hi;
        if (j === axes.length) { lo = tick(yr[0]); hi = tick(yr[1]); }
        else if (a.categories) { lo = a.categories[0]; hi = a.categories[a.categories.length - 1]; }
        else { lo = tick(a.log ? Math.exp(ext[j][0]) : ext[j][0]); hi = tick(a.log ? Math.exp(ext[j][1]) : ext[j][1]); }
        ctx.fillStyle = "#777"; ctx.fillText(String(hi).slice(0, 12), x, TOP - 4 - (j === axes.length ? 14 : 0)); ctx.fillText(String(lo).slice(0, 12), x, H - PAD + 26 > H ? H - 2 : H - PAD + 26);
        ctx.fillStyle = "#333";
      });
    }
    function nearest(mx, my) {
      var best = null, dist = 12;
      lines.forEach(function (l) {
        for (var j = 0; j + 1 < l.pts.length; j++) {
          var a = l.pts[j], b = l.pts[j + 1];
          if (!a || !b || mx < a[0] || mx > b[0]) continue;
          var y = a[1] + (b[1] - a[1]) * (mx - a[0]) / (b[0] - a[0] || 1), d = Math.abs(y - my);
          if (d < dist) { dist = d; best = l; }
        }
      });
      return best;
    }
    canvas.addEventListener("mousemove", function (e) {
      var r = canvas.getBoundingClientRect(), l = nearest(e.clientX - r.left, e.clientY - r.top);
      readout.textContent = l ? l.run.name + " · " + axes.map(function (a) { return a.name + " = " + (a.label[runs.indexOf(l.run)] || "–"); }).join(" · ") +
        " · final " + (l.run.nonfinite ? "NaN / inf" : fmt(l.run.final)) + " · " + l.run.status : hint;
      if (l !== hot) { hot = l; draw(); }
    });
    canvas.addEventListener("click", function () { if (hot && openCard(hot.run.id)) location.hash = hot.run.id; });
    var pending = null;
    window.addEventListener("resize", function () { clearTimeout(pending); pending = setTimeout(draw, 150); });
    draw();
    return { el: box, canvas: canvas, lines: function () { return lines; }, readout: readout };
  }

  function setupSweep() {
    var node = document.getElementById("sweep-data");
    if (!node) return;
    var data = JSON.parse(node.textContent);
    var table = document.querySelector("table.sweep");
    if (table) sortable(table);
    var outcome = document.getElementById("sweep-outcome"), curves = document.getElementById("sweep-curves");
    var parallel = document.getElementById("sweep-parallel"), pick = document.getElementById("sweep-pick");
    var drawn = [];
    function draw(view) {  // (re)draw the outcome and curves charts along the picked setting
      drawn.forEach(function (entry) { if (entry && charts.indexOf(entry) >= 0) charts.splice(charts.indexOf(entry), 1); });
      [outcome, curves].forEach(function (box) { if (box) Array.from(box.children).forEach(function (c) { if (c.tagName !== "H3") box.removeChild(c); }); });
      Array.from(document.querySelectorAll(".sweep-key")).forEach(function (k) { k.textContent = view.setting || "status"; });
      drawn = [outcome && view.runs.some(function (r) { return r.x !== null; }) ? outcomeChart(outcome, view) : null,
               curves ? curvesChart(curves, view) : null];
    }
    draw(data);
    if (pick && data.settings.length > 1) {
      var select = el("select");
      select.id = "sweep-axis";
      data.settings.forEach(function (a, i) {
        var o = el("option", "", a.name + (a.importance !== null && a.importance !== undefined ? " (importance " + a.importance.toFixed(2) + ")" : ""));
        o.value = String(i); select.appendChild(o);
      });
      var label = el("label", "", "x-axis and colour: ");
      label.appendChild(select); pick.appendChild(label);
      if (data.importance) pick.appendChild(el("span", "meta", " settings ordered by " + data.importance));
      select.addEventListener("change", function () { draw(along(data, data.settings[+select.value])); });
    }
    if (parallel && data.settings.length) window.logdoctorParallel = parallelChart(parallel, data);
  }

  /* Charts follow the page width (a phone turned, a window resized). */
  function setupResize() {
    var pending = null;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        charts.forEach(function (c) { var h = c.el.querySelector(".chart"); if (c.u && h) c.u.setSize({ width: Math.max(240, h.clientWidth), height: HEIGHT }); });
      }, 150);
    });
  }

  function setupSmoothing() {
    var input = document.getElementById("smoothing"), shown = document.getElementById("smoothing-value");
    if (!input) return;
    input.addEventListener("input", function () {
      smoothing = +input.value; shown.textContent = smoothing.toFixed(2);
      charts.forEach(function (c) { if (c.u) c.rebuild(); });
    });
  }

  document.documentElement.classList.add("js");
  setupLinks();
  setupIndex();
  setupSweep();
  setupSmoothing();
  setupCards();
  setupOverlay();
  setupResize();
})();
