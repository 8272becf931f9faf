/* logdoctor HTML report: draws each run's figure description (JSON written by report/charts.py) with uPlot.
 * A run's charts are built when its card is open and in view, so a 1,000-run report opens fast.
 * Charts: hover values in the legend, drag to zoom, double-click to reset, shift-drag or shift-wheel to pan,
 * a log/linear toggle per panel, TensorBoard-style EMA smoothing (the raw line stays faint behind), the
 * findings' evidence drawn over the data (bands, vertical marks, level lines, points, ticks).
 * "Compare runs" overlays one metric of several runs on one chart.
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
    var entry = { u: null, el: box };
    function build() {
      if (entry.u) entry.u.destroy();
      toggle.textContent = logMain ? "log scale ✓" : "log scale";
      var yscale = { distr: logMain ? 3 : 1, log: opt.scale === "log2" ? 2 : 10 };
      if (!logMain && opt.ylim) yscale.range = function () { return opt.ylim; };
      var series = [{ label: "step", value: function (u, v) { return v === null ? "–" : Math.round(v).toLocaleString("en"); } }];
      lines.forEach(function (l) {
        series.push({ label: smoothing ? l.label + " (raw)" : l.label, stroke: l.color, alpha: smoothing ? 0.25 : 1, width: 1, scale: l.twin ? "lr" : "y",
                      spanGaps: true, show: true, points: { show: false } });
      });
      lines.forEach(function (l) {
        series.push({ label: l.label, stroke: l.color, width: 1.6, scale: l.twin ? "lr" : "y", spanGaps: true,
                      show: smoothing > 0, points: { show: false }, value: function (u, v) { return fmt(v); } });
      });
      var axes = [{ stroke: "#555", grid: { stroke: "#eee" } }, { stroke: "#555", grid: { stroke: "#eee" }, size: 60, values: function (u, vs) { return vs.map(tick); } }];
      if (hasTwin) axes.push({ scale: "lr", side: 1, stroke: "#888", grid: { show: false }, size: 60, values: function (u, vs) { return vs.map(tick); } });
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
          if (line) lines.push({ x: line.x, y: line.y, label: r.name, color: PALETTE[lines.length % PALETTE.length], twin: false });
        });
        if (!lines.length) { box.appendChild(el("p", "meta", "tick runs to overlay their " + key)); return; }
        var span = Math.max.apply(null, lines.map(function (l) { return Math.max.apply(null, l.y); })) /
                   Math.min.apply(null, lines.map(function (l) { return Math.min.apply(null, l.y); }));
        chart(box, lines, { scale: span > 100 ? "log" : "linear", ylabel: key });
      }
      function reset() {
        ticked = {};
        runs.filter(function (r) { return r.keys.indexOf(picker.value) >= 0; }).slice(0, OVERLAY_DEFAULT).forEach(function (r) { ticked[r.id] = true; });
        fill(); draw();
      }
      picker.addEventListener("change", reset);
      filter.addEventListener("input", fill);
      reset();
    }
    var det = root.querySelector("details");
    det.addEventListener("toggle", function () { if (det.open) build(); });
    if (location.hash === "#compare") det.open = true;
    if (det.open) build();
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
    table.querySelectorAll("th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        everything();
        var asc = th.dataset.dir !== "asc"; th.dataset.dir = asc ? "asc" : "desc";
        var sorted = Array.from(tb.rows);
        sorted.sort(function (a, b) {
          var x = a.cells[col].dataset.sort || a.cells[col].textContent, y = b.cells[col].dataset.sort || b.cells[col].textContent;
          var nx = parseFloat(x), ny = parseFloat(y), c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y, undefined, { numeric: true });
          return asc ? c : -c;
        });
        sorted.forEach(function (r) { tb.appendChild(r); });
        limit();
      });
    });
    // a link to a run opens its card
    document.addEventListener("click", function (e) {
      var a = e.target.closest && e.target.closest('a[href^="#run-"]'), card = a && document.getElementById(a.getAttribute("href").slice(1));
      if (card) card.querySelector("details").open = true;
    });
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
  setupIndex();
  setupSmoothing();
  setupCards();
  setupOverlay();
  setupResize();
})();
