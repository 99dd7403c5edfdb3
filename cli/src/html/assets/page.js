// framescope's report page. Every number comes computed from the embedded JSON (the Rust side
// computes all statistics on every frame); this script only lays out tables and draws.
"use strict";
(function () {
  const statusEl = document.getElementById("status");
  function setStatus(state, text) {
    statusEl.dataset.status = state;
    statusEl.textContent = text;
  }
  // An error anywhere is shown on the page, so a browser test (and a reader) sees it.
  window.addEventListener("error", (e) => setStatus("error", "error: " + e.message));

  const COLORS = ["#1f6feb", "#d1495b", "#2a9d8f", "#e9a03b", "#7b2cbf", "#6c757d", "#0b7285", "#c2255c"];
  const GPU_COLOR = "#e9a03b";

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("data-") || k.startsWith("aria-")) e.setAttribute(k, String(v));
      else e[k] = v;
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  function fmt(x, digits) {
    if (x === null || x === undefined || Number.isNaN(x)) return "–";
    return Number(x).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
  }
  const ms = (ns) => (ns === null || ns === undefined ? null : ns / 1e6);
  function get(obj, path) {
    return path.split(".").reduce((o, k) => (o === null || o === undefined ? undefined : o[k]), obj);
  }

  // A table whose header cells sort its rows (numbers by value, text by text).
  function table(columns, rows, opts) {
    const tbody = el("tbody");
    const head = el("tr");
    let order = { col: -1, dir: 1 };
    function fill() {
      tbody.replaceChildren(...rows.map((r) => {
        const tr = el("tr", { class: opts && opts.rowClass ? opts.rowClass(r) : null });
        columns.forEach((c) => {
          const v = c.value(r);
          tr.append(el("td", { class: c.num ? "num" : null, "data-key": c.key, "data-value": c.raw ? c.raw(r) : null },
            c.render ? c.render(v, r) : v));
        });
        return tr;
      }));
    }
    columns.forEach((c, i) => {
      const th = el("th", { class: (c.num ? "num " : "") + (opts && opts.sortable ? "sortable" : "") }, c.title);
      if (opts && opts.sortable) {
        th.addEventListener("click", () => {
          order = { col: i, dir: order.col === i ? -order.dir : c.num ? -1 : 1 };
          const key = (r) => c.sort ? c.sort(r) : c.value(r);
          rows = rows.slice().sort((a, b) => {
            const x = key(a), y = key(b);
            const cmp = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
            return cmp * order.dir;
          });
          fill();
        });
      }
      head.append(th);
    });
    fill();
    return el("table", { class: opts && opts.class }, el("thead", {}, head), tbody);
  }

  // Index of the first x >= v in ascending xs.
  function lowerBound(xs, v) {
    let lo = 0, hi = xs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (xs[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // A line chart over x-sorted series, drawn as the min and max of each pixel column so that
  // no spike disappears however many frames fall into one column. A series with `ymin` has
  // points that stand for several frames each: `y` is their greatest value, `ymin` their least. Zoom with the wheel, pan
  // by dragging, double-click to reset; hovering names the nearest point.
  function Chart(container, series, opts) {
    const canvas = el("canvas");
    container.append(canvas);
    const ctx = canvas.getContext("2d");
    const pad = { l: 56, r: 12, t: 10, b: 28 };
    let x0 = Infinity, x1 = -Infinity;
    for (const s of series) {
      if (s.x.length) { x0 = Math.min(x0, s.x[0]); x1 = Math.max(x1, s.x[s.x.length - 1]); }
    }
    if (!(x1 > x0)) { x1 = x0 + 1; }
    const full = [x0, x1];
    let view = full.slice();
    const self = { series, view: () => view.slice(), columns: [] };

    function size() {
      const w = Math.max(300, canvas.clientWidth || 900), h = Math.max(150, canvas.clientHeight || 300);
      const dpr = window.devicePixelRatio || 1;
      if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr); }
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      return [w, h];
    }
    // Per series, per pixel column: [min, max] of the values whose x falls in it.
    function columns(s, cols, v0, v1) {
      const out = new Array(cols).fill(null);
      const start = Math.max(0, lowerBound(s.x, v0) - 1), end = Math.min(s.x.length, lowerBound(s.x, v1) + 1);
      const scale = cols / (v1 - v0);
      for (let i = start; i < end; i++) {
        const y = s.y[i];
        if (y === null || y === undefined) continue;
        const lo = s.ymin && s.ymin[i] !== null && s.ymin[i] !== undefined ? s.ymin[i] : y;
        const c = Math.min(cols - 1, Math.max(0, Math.floor((s.x[i] - v0) * scale)));
        const cell = out[c];
        if (cell === null) out[c] = [lo, y];
        else { if (lo < cell[0]) cell[0] = lo; if (y > cell[1]) cell[1] = y; }
      }
      return out;
    }
    function draw(quiet) {
      if (!quiet && opts.onview) opts.onview(view.slice());
      const [w, h] = size();
      const cols = Math.max(1, Math.floor(w - pad.l - pad.r));
      ctx.clearRect(0, 0, w, h);
      const all = series.map((s) => columns(s, cols, view[0], view[1]));
      self.columns = all;
      let ymax = 0;
      for (const cs of all) for (const c of cs) if (c && c[1] > ymax) ymax = c[1];
      if (opts.ymax) ymax = opts.ymax;
      ymax = ymax > 0 ? ymax * 1.05 : 1;
      const X = (c) => pad.l + c + 0.5, Y = (v) => pad.t + (h - pad.t - pad.b) * (1 - v / ymax);
      ctx.strokeStyle = "#d9dee7"; ctx.fillStyle = "#5b6475"; ctx.font = "11px sans-serif"; ctx.lineWidth = 1;
      for (let k = 0; k <= 4; k++) {
        const v = (ymax / 1.05) * k / 4, y = Y(v);
        ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(w - pad.r, y); ctx.stroke();
        ctx.fillText(fmt(v, v < 10 ? 2 : 1), 4, y + 4);
      }
      for (let k = 0; k <= 5; k++) {
        const v = view[0] + (view[1] - view[0]) * k / 5;
        ctx.fillText(opts.xfmt(v), pad.l + (cols - 40) * k / 5, h - 8);
      }
      ctx.fillText(opts.ylabel, pad.l + 4, pad.t + 10);
      for (const m of opts.marks || []) {
        if (m.x < view[0] || m.x > view[1]) continue;
        const x = X((m.x - view[0]) / (view[1] - view[0]) * cols);
        ctx.strokeStyle = "#7b2cbf"; ctx.beginPath(); ctx.moveTo(x, pad.t); ctx.lineTo(x, h - pad.b); ctx.stroke();
        ctx.fillStyle = "#7b2cbf"; ctx.fillText(m.label, x + 3, pad.t + 22);
      }
      all.forEach((cs, i) => {
        ctx.strokeStyle = series[i].color; ctx.lineWidth = 1.2; ctx.beginPath();
        let started = false;
        cs.forEach((c, k) => {
          if (!c) return;
          if (!started) { ctx.moveTo(X(k), Y(c[0])); started = true; } else ctx.lineTo(X(k), Y(c[0]));
          if (c[1] !== c[0]) ctx.lineTo(X(k), Y(c[1]));
        });
        ctx.stroke();
      });
      self.ymax = ymax;
      self.rendered = true;
    }
    function xAt(px) {
      const w = canvas.clientWidth || 900;
      const cols = Math.max(1, w - pad.l - pad.r);
      return view[0] + (px - pad.l) / cols * (view[1] - view[0]);
    }
    self.zoom = function (center, factor) {
      const span = Math.max((full[1] - full[0]) / 1e6, (view[1] - view[0]) * factor);
      let a = center - (center - view[0]) * span / (view[1] - view[0]);
      a = Math.max(full[0], Math.min(a, full[1] - span));
      view = [a, Math.min(full[1], a + span)];
      draw();
    };
    self.reset = function () { view = full.slice(); draw(); };
    // Another chart's view, shown here without telling anyone (charts on one time axis).
    self.setView = function (v) {
      view = [Math.max(full[0], v[0]), Math.min(full[1], v[1])];
      if (!(view[1] > view[0])) view = full.slice();
      draw(true);
    };
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      self.zoom(xAt(e.offsetX), e.deltaY < 0 ? 0.8 : 1.25);
    }, { passive: false });
    let drag = null;
    canvas.addEventListener("mousedown", (e) => { drag = { px: e.clientX, view: view.slice() }; });
    window.addEventListener("mouseup", () => { drag = null; });
    canvas.addEventListener("dblclick", () => self.reset());
    const tip = document.getElementById("tip");
    canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
    canvas.addEventListener("mousemove", (e) => {
      if (drag) {
        const w = canvas.clientWidth || 900, span = drag.view[1] - drag.view[0];
        let a = drag.view[0] - (e.clientX - drag.px) / (w - pad.l - pad.r) * span;
        a = Math.max(full[0], Math.min(a, full[1] - span));
        view = [a, a + span];
        draw();
        return;
      }
      if (!opts.hover) return;
      const text = opts.hover(xAt(e.offsetX));
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text; tip.hidden = false;
      tip.style.left = (e.clientX + 14) + "px"; tip.style.top = (e.clientY + 14) + "px";
    });
    window.addEventListener("resize", () => draw(true));
    draw(true);
    return self;
  }

  function chartBox(title, small) {
    const box = el("div", { class: "chart" + (small ? " small" : "") });
    return [el("h2", {}, title), box];
  }
  function legend(items) {
    return el("div", { class: "legend" }, items.map(([name, color]) => el("span", {}, el("i", { style: "" }), name))
      .map((s, i) => { s.firstChild.style.background = items[i][1]; return s; }));
  }

  // The frame a hover lands on, as text: the nearest frame of run `r` to x (ms).
  function frameText(r, x) {
    const f = r.frames;
    if (!f || !f.t_ms.length) return null;
    let i = lowerBound(f.t_ms, x);
    if (i >= f.t_ms.length) i = f.t_ms.length - 1;
    if (i > 0 && x - f.t_ms[i - 1] < f.t_ms[i] - x) i -= 1;
    if (f.per_point > 1) {
      // A point of a long run: the slowest of its frames, and the range over all of them.
      const range = (lo, hi) => (hi === null ? "–" : fmt(lo, 3) + " – " + fmt(hi, 3) + " ms");
      const lines = [r.name, "frame " + f.index[i] + ", the slowest of about " + f.per_point + " frames here",
        "t " + fmt(f.t_ms[i] / 1000, 3) + " s", "frame time " + fmt(f.frame_ms[i], 3) + " ms",
        "frame times here " + range(f.frame_ms_min[i], f.frame_ms[i]),
        "GPU busy here " + range(f.gpu_ms_min[i], f.gpu_ms[i])];
      if (f.latency_ms[i] !== null) lines.push("display latency here " + range(f.latency_ms_min[i], f.latency_ms[i]));
      if (f.display[i] !== null) lines.push("display " + f.display[i]);
      if (f.stutter[i]) lines.push("STUTTER among these frames");
      return lines.join("\n");
    }
    const lines = [r.name, "frame " + f.index[i], "t " + fmt(f.t_ms[i] / 1000, 3) + " s",
      "frame time " + fmt(f.frame_ms[i], 3) + " ms", "GPU busy " + fmt(f.gpu_ms[i], 3) + " ms"];
    if (f.latency_ms[i] !== null) lines.push("display latency " + fmt(f.latency_ms[i], 3) + " ms");
    if (f.display[i] !== null) lines.push("display " + f.display[i]);
    if (f.stutter[i]) lines.push("STUTTER");
    return lines.join("\n");
  }

  const STATS = [
    ["frames", "frames", "", 0, (s) => s.frames, "frame records summarised"],
    ["duration_ns", "duration", "s", 3, (s) => s.duration_ns / 1e9, "first frame to last frame"],
    ["fps_mean", "average fps", "fps", 2, (s) => s.fps_mean, "frame times counted / their sum"],
    ["frame_time_ns.mean", "frame time mean", "ms", 3, (s) => ms(get(s, "frame_time_ns.mean")), "CPU frame time, present to present, averaged"],
    ["frame_time_ns.p50", "frame time p50", "ms", 3, (s) => ms(get(s, "frame_time_ns.p50")), "median frame time (nearest rank)"],
    ["frame_time_ns.p90", "frame time p90", "ms", 3, (s) => ms(get(s, "frame_time_ns.p90")), "90 % of frames were at most this long"],
    ["frame_time_ns.p95", "frame time p95", "ms", 3, (s) => ms(get(s, "frame_time_ns.p95")), "95 % of frames were at most this long"],
    ["frame_time_ns.p99", "frame time p99", "ms", 3, (s) => ms(get(s, "frame_time_ns.p99")), "99 % of frames were at most this long"],
    ["frame_time_ns.p99_9", "frame time p99.9", "ms", 3, (s) => ms(get(s, "frame_time_ns.p99_9")), "99.9 % of frames were at most this long"],
    ["frame_time_ns.max", "frame time max", "ms", 3, (s) => ms(get(s, "frame_time_ns.max")), "the slowest frame"],
    ["low_1pct_fps", "1 % low (average)", "fps", 2, (s) => s.low_1pct_fps, "mean fps of the slowest 1 % of frames"],
    ["low_0_1pct_fps", "0.1 % low (average)", "fps", 2, (s) => s.low_0_1pct_fps, "mean fps of the slowest 0.1 % of frames"],
    ["extra.low_1pct_integral_fps", "1 % low (integral)", "fps", 2, (s, x) => x.low_1pct_integral_fps, "CapFrameX: fps of the frame time where the slowest frames reach 1 % of the run's time"],
    ["extra.low_0_1pct_integral_fps", "0.1 % low (integral)", "fps", 2, (s, x) => x.low_0_1pct_integral_fps, "the same at 0.1 % of the run's time"],
    ["extra.p1_fps", "P1", "fps", 2, (s, x) => x.p1_fps, "1st percentile of fps: 1000 / p99 frame time"],
    ["extra.p0_2_fps", "P0.2", "fps", 2, (s, x) => x.p0_2_fps, "0.2th percentile of fps: 1000 / p99.8 frame time"],
    ["extra.p0_1_fps", "P0.1", "fps", 2, (s, x) => x.p0_1_fps, "0.1th percentile of fps: 1000 / p99.9 frame time"],
    ["gpu_busy_ns.mean", "GPU busy mean", "ms", 3, (s) => ms(get(s, "gpu_busy_ns.mean")), "GPU time per frame, averaged over frames that have it"],
    ["gpu_busy_ns.p99", "GPU busy p99", "ms", 3, (s) => ms(get(s, "gpu_busy_ns.p99")), "99 % of frames' GPU time was at most this"],
    ["dropped_frames", "lost frame records", "", 0, (s) => s.dropped_frames, "frame indices missing from the dump"],
    ["timeline.stutters", "stutters", "", 0, (s) => get(s, "timeline.stutters"), "frames at least 2.5× the median of the previous 100 and at least 8 ms"],
    ["timeline.display.displayed_fps", "displayed fps", "fps", 2, (s) => get(s, "timeline.display.displayed_fps"), "frames that reached the screen per second"],
    ["timeline.display.display_latency_ns.p50", "display latency p50", "ms", 3, (s) => ms(get(s, "timeline.display.display_latency_ns.p50")), "frame start to the screen, median"],
    ["timeline.display.display_latency_ns.p99", "display latency p99", "ms", 3, (s) => ms(get(s, "timeline.display.display_latency_ns.p99")), "frame start to the screen, p99"],
  ];
  // The raw JSON value behind a statistic, for data-value (tests compare it with report --json).
  function rawOf(r, key) {
    return key.startsWith("extra.") ? get(r.extra, key.slice(6)) : get(r.summary, key);
  }

  function summaryTable(runs) {
    const cols = [{ title: "statistic", value: (row) => row[1] }];
    runs.forEach((r) => cols.push({
      title: runs.length > 1 ? r.name : "value", num: true, key: null,
      value: (row) => row[4](r.summary, r.extra || {}),
      render: (v, row) => {
        const raw = rawOf(r, row[0]);
        return el("span", { "data-key": row[0], "data-value": raw === undefined || raw === null ? "" : raw }, fmt(v, row[3]));
      },
    }));
    cols.push({ title: "unit", value: (row) => row[2] });
    cols.push({ title: "definition", value: (row) => el("span", { class: "def" }, row[5]) });
    const rows = STATS.filter((row) => runs.some((r) => { const v = row[4](r.summary, r.extra || {}); return v !== null && v !== undefined; }));
    return table(cols, rows, { class: "summary" });
  }

  function whatRan(runs) {
    const fields = [
      ["label", (h) => get(h, "config.label")],
      ["exe", (h) => h.exe], ["args", (h) => (h.args || []).join(" ")], ["api", (h) => h.api],
      ["device", (h) => get(h, "device.name")],
      ["driver", (h) => [get(h, "device.driver_name"), get(h, "device.driver_version"), get(h, "device.driver_info")].filter(Boolean).join(" · ")],
      ["GPU time", (h) => h.gpu_time], ["config", (h) => h.config ? JSON.stringify(h.config) : null],
      ["written by framescope", (h) => h.framescope_version], ["schema", (h) => h.schema],
    ];
    const cols = [{ title: "", value: (f) => f[0] }].concat(runs.map((r) => ({
      title: r.name, value: (f) => { const v = f[1](r.header || {}); return v === undefined || v === null || v === "" ? "–" : v; },
    })));
    return table(cols, fields);
  }

  function frameCharts(main, runs) {
    const multi = runs.length > 1;
    let fps = false;
    const series = () => runs.flatMap((r, i) => {
      const f = r.frames, color = COLORS[i % COLORS.length];
      const inv = (a) => a.map((v) => (v ? 1000 / v : null));
      // A long run's points span several frames: the slowest frame is the lowest fps.
      const ranged = f.per_point > 1;
      const y = fps ? inv(ranged ? f.frame_ms_min : f.frame_ms) : f.frame_ms;
      const ymin = ranged ? (fps ? inv(f.frame_ms) : f.frame_ms_min) : null;
      const out = [{ x: f.t_ms, y, ymin, color, name: r.name + (fps ? " fps" : " frame time") }];
      if (!fps && !multi && f.gpu_ms.some((v) => v !== null)) {
        out.push({ x: f.t_ms, y: f.gpu_ms, ymin: ranged ? f.gpu_ms_min : null, color: GPU_COLOR, name: "GPU busy" });
      }
      return out;
    });
    const [h, box] = chartBox("Frame time over the run (ms)");
    const t0 = runs[0].t0_ns;
    const marks = multi || t0 === null || t0 === undefined ? [] : (runs[0].marks || []).map((m) => ({ x: (m.t_ns - t0) / 1e6, label: m.label }));
    const toggle = el("button", { type: "button" }, "show FPS");
    const reset = el("button", { type: "button" }, "reset zoom");
    main.append(h, el("div", { class: "controls" }, toggle, reset, "wheel: zoom · drag: pan · double-click: reset · hover: a frame's fields"), box);
    for (const r of runs) {
      if (r.frames.per_point > 1) {
        main.append(el("p", { class: "note", "data-bucketed": r.frames.per_point },
          r.name + ": " + r.frames.frames.toLocaleString("en-US") + " frames, drawn as the least and greatest of about " +
          r.frames.per_point + " frames per point (" + r.frames.t_ms.length + " points; zoomed in, the points stay those); " +
          "hovering a point names its slowest frame. The statistics and the stutter table cover every frame."));
      }
    }
    let chart;
    function build() {
      box.replaceChildren();
      const s = series();
      chart = Chart(box, s, {
        xfmt: (v) => fmt(v / 1000, 2) + " s", ylabel: fps ? "fps" : "ms", marks,
        hover: (x) => runs.map((r) => frameText(r, x)).filter(Boolean).join("\n\n"),
        onview: (v) => timeAxis.moved(chart, v),
      });
      timeAxis.join(() => chart);
      box.append(legend(s.map((x) => [x.name, x.color])));
      window.framescope.frameChart = chart;
    }
    toggle.addEventListener("click", () => { fps = !fps; toggle.textContent = fps ? "show frame time" : "show FPS"; build(); });
    reset.addEventListener("click", () => chart.reset());
    build();
  }

  // Charts over the run's time share one axis: zooming or panning one moves the others.
  const timeAxis = {
    charts: [],
    join(get) { this.charts.push(get); },
    moved(from, v) {
      for (const get of this.charts) { const c = get(); if (c && c !== from) c.setView(v); }
    },
  };

  // A counter's or sensor's values over the run, on the frame chart's time axis: per point the
  // least and greatest value over its frames (every frame's in a short run).
  function counterCharts(main, runs) {
    const names = [...new Set(runs.flatMap((r) => Object.keys(get(r, "counters.series") || {})))].sort();
    if (!names.length) return;
    const units = {};
    for (const r of runs) for (const c of get(r, "header.counters") || []) units[c.name] = c.unit;
    const label = (n) => (units[n] ? n + " (" + units[n] + ")" : n);
    const [h, box] = chartBox("Counters and sensors over the run");
    const pick = el("select", { "aria-label": "counter" }, names.map((n) => el("option", { value: n }, label(n))));
    main.append(h, el("div", { class: "controls" }, pick, "the same time axis as the frame times: zoom either"), box);
    let chart;
    function build() {
      const name = pick.value;
      const series = runs.map((r, i) => {
        const c = get(r, "counters.series." + name) || { t_ms: [], min: [], max: [] };
        return { x: c.t_ms, y: c.max, ymin: c.min, color: COLORS[i % COLORS.length], name: r.name + " " + label(name) };
      }).filter((sr) => sr.x.length);
      box.replaceChildren();
      const old = chart;
      chart = Chart(box, series, {
        xfmt: (v) => fmt(v / 1000, 2) + " s", ylabel: units[name] || "",
        hover: (x) => series.map((sr) => {
          let i = lowerBound(sr.x, x);
          if (i >= sr.x.length) i = sr.x.length - 1;
          if (i > 0 && x - sr.x[i - 1] < sr.x[i] - x) i -= 1;
          const v = sr.ymin[i] === sr.y[i] ? fmt(sr.y[i], 3) : fmt(sr.ymin[i], 3) + " – " + fmt(sr.y[i], 3);
          return sr.name + "\nt " + fmt(sr.x[i] / 1000, 3) + " s\n" + v;
        }).join("\n\n"),
        onview: (v) => timeAxis.moved(chart, v),
      });
      if (old) { const f = window.framescope.frameChart; if (f) chart.setView(f.view()); }
      box.append(legend(series.map((sr) => [sr.name, sr.color])));
      window.framescope.counterChart = chart;
    }
    pick.addEventListener("change", build);
    build();
    timeAxis.join(() => chart);
    const spans = runs.map((r) => get(r, "counters.per_point") || 1);
    if (spans.some((k) => k > 1)) {
      main.append(el("p", { class: "note" }, "Each point is the least and greatest value over about " +
        Math.max(...spans) + " frames."));
    }
  }

  function distributionCharts(main, runs) {
    const grid = el("div", { class: "grid2" });
    const [h1, curve] = chartBox("Percentile curve (L-shape): frame time at each percentile", true);
    const [h2, hist] = chartBox("Frame-time histogram (last bar: slower than p99.9)", true);
    grid.append(el("div", {}, h1, curve), el("div", {}, h2, hist));
    main.append(grid);
    const cs = runs.map((r, i) => ({ x: r.curve.map((p) => p[0]), y: r.curve.map((p) => p[1]), color: COLORS[i % COLORS.length], name: r.name }));
    Chart(curve, cs, { xfmt: (v) => fmt(v, 1) + " %", ylabel: "ms", hover: (x) => runs.map((r) => {
      const p = r.curve[Math.max(0, Math.min(r.curve.length - 1, Math.round(x * 10)))];
      return p ? r.name + ": " + fmt(p[1], 3) + " ms at " + fmt(p[0], 1) + " %" : null;
    }).filter(Boolean).join("\n") });
    curve.append(legend(cs.map((s) => [s.name, s.color])));
    const hs = runs.filter((r) => r.histogram).map((r, i) => {
      const hg = r.histogram;
      const x = [], y = [];
      hg.counts.forEach((c, k) => { const a = hg.from_ms + k * hg.bin_ms; x.push(a, a + hg.bin_ms * 0.999); y.push(c, c); });
      return { x, y, color: COLORS[i % COLORS.length], name: r.name, hg };
    });
    Chart(hist, hs, { xfmt: (v) => fmt(v, 2) + " ms", ylabel: "frames", hover: (x) => hs.map((s) => {
      const k = Math.floor((x - s.hg.from_ms) / s.hg.bin_ms);
      return k >= 0 && k < s.hg.counts.length ? s.name + ": " + s.hg.counts[k] + " frames in " + fmt(s.hg.from_ms + k * s.hg.bin_ms, 2) + "–" + fmt(s.hg.from_ms + (k + 1) * s.hg.bin_ms, 2) + " ms" : null;
    }).filter(Boolean).join("\n") });
  }

  function runDetails(main, r) {
    main.append(el("h2", {}, "Stutters (" + r.stutter_count + (r.stutters.length < r.stutter_count ? ", first " + r.stutters.length + " listed" : "") + ")"));
    if (r.stutters.length) {
      main.append(table([
        { title: "frame", num: true, value: (s) => s.frame },
        { title: "t (s)", num: true, value: (s) => s.t_ms / 1000, render: (v) => fmt(v, 3) },
        { title: "frame time (ms)", num: true, value: (s) => s.frame_ms, render: (v) => fmt(v, 3) },
        { title: "GPU busy (ms)", num: true, value: (s) => s.gpu_ms, render: (v) => fmt(v, 3) },
        { title: "causes", value: (s) => s.causes.map((c) => c.cause + " " + fmt(c.ms, 2) + " ms").join(", ") || "none recorded" },
      ], r.stutters, { sortable: true, class: "stutters" }));
    }
    const regions = r.summary.regions_top || [];
    main.append(el("h2", {}, "Render passes and label regions by GPU time"));
    if (regions.length) {
      main.append(table([
        { title: "scope", value: (g) => g.scope }, { title: "label", value: (g) => g.label || "–" },
        { title: "samples", num: true, value: (g) => g.samples },
        { title: "total (ms)", num: true, value: (g) => g.total_ns / 1e6, render: (v) => fmt(v, 3) },
        { title: "mean (ms)", num: true, value: (g) => g.total_ns / 1e6 / Math.max(1, g.samples), render: (v) => fmt(v, 4) },
      ], regions, { sortable: true, class: "regions" }));
    } else main.append(el("p", {}, "no region samples in this dump (config samples=renderpass or labels)."));
    const passCounters = r.pass_counters || [];
    if (passCounters.length) {
      const units = {};
      for (const c of get(r, "header.counters") || []) units[c.name] = c.unit;
      main.append(el("h2", {}, "Counters by render pass or label region"),
        el("p", { class: "def" }, "Means over the passes that carried each: the driver's counters (driver_counters=1) and hardware counters attributed by GPU time (NVIDIA PM sampling, passes of at least 4 sampling intervals)."),
        table([
          { title: "label", value: (c) => c.label || "–" },
          { title: "counter", value: (c) => c.counter + (units[c.counter] ? " (" + units[c.counter] + ")" : "") },
          { title: "source", value: (c) => c.source },
          { title: "mean", num: true, value: (c) => c.mean, render: (v) => fmt(v, 3) },
          { title: "passes", num: true, value: (c) => c.passes },
        ], passCounters, { sortable: true, class: "pass-counters" }));
    }
    const draws = r.summary.draws_top || [];
    if (draws.length) {
      main.append(el("h2", {}, "Draws by GPU time"), table([
        { title: "label", value: (d) => d.label || "–" }, { title: "cmdbuf:draw", value: (d) => d.cmdbuf + ":" + d.draw },
        { title: "timed", num: true, value: (d) => d.count },
        { title: "mean (ms)", num: true, value: (d) => d.mean_ns / 1e6, render: (v) => fmt(v, 4) },
        { title: "total (ms)", num: true, value: (d) => d.total_ns / 1e6, render: (v) => fmt(v, 3) },
      ], draws, { sortable: true }));
    }
    const disp = get(r.summary, "timeline.display");
    if (disp) {
      main.append(el("h2", {}, "Display"), table([{ title: "state", value: (e) => e[0] }, { title: "frames", num: true, value: (e) => e[1] }],
        Object.entries(disp.frames || {})));
    }
    if (r.marks && r.marks.length) {
      main.append(el("h2", {}, "Marks"), table([
        { title: "frame", num: true, value: (m) => m.frame }, { title: "label", value: (m) => m.label }], r.marks));
    }
  }

  function notes(main, runs) {
    const all = runs.flatMap((r) => (r.notes || []).map((n) => r.name + ": " + n));
    if (all.length) main.append(el("h2", {}, "Notes"), el("ul", { class: "notes" }, all.map((n) => el("li", {}, n))));
  }

  function comparison(main, data) {
    main.append(el("h2", {}, "Verdicts (as framescope compare BASE NEW gives them)"));
    main.append(el("p", { class: "def" }, "Exit rule: a time metric regresses when the whole interval of its change lies beyond the threshold (5 %); the gate fails (exit 1) on any regression. Intervals are moving-block bootstrap intervals, so correlated frames are not counted as independent."));
    for (const c of data.comparisons) {
      const head = c.runs.base + " → " + c.runs.new + ": ";
      if (c.error) { main.append(el("p", { "data-exit": 2 }, head, el("span", { class: "verdict fail", "data-verdict": "unusable" }, "unusable: " + c.error))); continue; }
      const res = c.result;
      main.append(el("p", { "data-exit": c.exit }, head, el("span", { class: "verdict " + (res.regression ? "fail" : "pass"), "data-verdict": res.regression ? "regression" : "pass" },
        res.regression ? "REGRESSION (compare exits 1)" : "no regression (compare exits 0)")));
      main.append(table([
        { title: "metric", value: (m) => m.metric + " (" + m.kind + ")" },
        { title: "base", num: true, value: (m) => m.base, render: (v, m) => m.kind === "counter" ? fmt(v, 4) : m.kind === "rate" ? fmt(v * 100, 2) + " %" : fmt(v / 1e6, 3) + " ms" },
        { title: "new", num: true, value: (m) => m.new, render: (v, m) => m.kind === "counter" ? fmt(v, 4) : m.kind === "rate" ? fmt(v * 100, 2) + " %" : fmt(v / 1e6, 3) + " ms" },
        { title: "change", num: true, value: (m) => m.change, render: (v) => (v >= 0 ? "+" : "") + fmt(v * 100, 1) + " %" },
        { title: "interval", value: (m) => "[" + fmt(m.ci_low * 100, 1) + " %, " + fmt(m.ci_high * 100, 1) + " %]" },
        { title: "frames", value: (m) => m.frames.join(" / ") },
        { title: "verdict", value: (m) => m.verdict, raw: (m) => m.verdict },
      ], res.metrics, { class: "compare" }));
    }
  }

  function farm(main, f) {
    main.append(el("h2", {}, "Groups by " + f.group_by), el("p", { class: "def" }, f.aggregate));
    const n = (k, d) => ({ title: k, num: true, value: (g) => g[k], render: (v) => fmt(v, d) });
    main.append(table([
      { title: f.group_by, value: (g) => g.group }, { title: "runs", num: true, value: (g) => g.runs },
      n("frames", 0), n("fps_mean", 2), n("fps_median", 2), n("fps_min", 2), n("fps_max", 2), n("p99_ms", 3), n("low_1pct_fps", 2), n("gpu_mean_ms", 3),
      { title: "outlier runs", value: (g) => g.outliers.join(", ") || "–" },
    ], f.groups, { sortable: true, class: "groups" }));
    main.append(el("h2", {}, "Runs"), table([
      { title: "run", value: (r) => r.name }, { title: f.group_by, value: (r) => r.group },
      n("frames", 0), n("fps_mean", 2), n("p99_ms", 3), n("low_1pct_fps", 2), n("gpu_mean_ms", 3),
      { title: "outlier", value: (r) => (r.outlier ? "yes" : "") },
    ], f.runs, { sortable: true, class: "runs", rowClass: (r) => (r.outlier ? "outlier" : null) }));
  }

  function render() {
    const data = JSON.parse(document.getElementById("fs-data").textContent);
    window.framescope = { data };
    const main = document.getElementById("main");
    main.replaceChildren();
    if (data.view === "farm") {
      farm(main, data.farm);
    } else {
      const runs = data.runs;
      if (data.view === "compare") comparison(main, data);
      main.append(el("h2", {}, "What ran"), whatRan(runs));
      main.append(el("h2", {}, "Summary (computed from every frame)"), summaryTable(runs));
      frameCharts(main, runs);
      counterCharts(main, runs);
      distributionCharts(main, runs);
      if (runs.length === 1) runDetails(main, runs[0]);
      notes(main, runs);
    }
    main.append(el("p", { class: "def" }, "framescope " + data.framescope_version + " report page; every statistic computed by framescope from the dumps, not by this page."));
  }

  try {
    render();
    if (statusEl.dataset.status !== "error") setStatus("ok", "ok");
  } catch (e) {
    setStatus("error", "error: " + e.message);
    throw e;
  }
})();
