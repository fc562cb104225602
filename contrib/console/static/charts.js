// Activity charts of a stream page: reads the console's JSON history
// (/api/streams/{s}/history?window=1h|24h) and draws it with uPlot
// (vendored, uPlot.iife.min.js): the produce rate, each group's consume rate,
// lag and dead-letter arrivals. Redraws every data-refresh-ms milliseconds
// (console.Options.ChartRefresh, 30 s by default) and when the window
// changes. Each chart's element gets data-points, the number of points it
// drew, and #activity data-state "drawn" once a read has been drawn.
(function () {
  "use strict";
  const root = document.getElementById("activity");
  if (!root || typeof uPlot === "undefined") {
    return;
  }
  const state = document.getElementById("activity-state");
  const refreshMs = Number(root.dataset.refreshMs) > 0 ? Number(root.dataset.refreshMs) : 30000;
  const colors = ["#2f5bd3", "#17803d", "#b45309", "#b42318", "#7c3aed", "#0e7490", "#be185d", "#4b5563"];
  const plots = {};

  // columns turns named value readers into uPlot series and data columns.
  function columns(points, readers) {
    const xs = points.map(function (p) { return Date.parse(p.at) / 1000; });
    const data = [xs];
    const series = [{}];
    readers.forEach(function (r, i) {
      data.push(points.map(r.value));
      series.push({ label: r.label, stroke: colors[i % colors.length], width: 2, points: { show: points.length < 3 } });
    });
    return { data: data, series: series };
  }

  function groupValue(name, field) {
    return function (p) {
      const g = p.groups.find(function (x) { return x.group === name; });
      return g ? g[field] : null;
    };
  }

  function lagReaders(doc) {
    const readers = [];
    doc.groups.forEach(function (name) {
      const versions = new Set();
      doc.points.forEach(function (p) {
        p.groups.forEach(function (g) {
          if (g.group === name) {
            g.versions.forEach(function (v) { versions.add(v.version); });
          }
        });
      });
      if (versions.size <= 1) {
        readers.push({ label: name, value: groupValue(name, "unread") });
        return;
      }
      Array.from(versions).sort(function (a, b) { return a - b; }).forEach(function (version) {
        readers.push({
          label: name + " v" + version,
          value: function (p) {
            const g = p.groups.find(function (x) { return x.group === name; });
            const v = g && g.versions.find(function (x) { return x.version === version; });
            return v ? v.unread : null;
          },
        });
      });
    });
    return readers;
  }

  function produceReaders(doc) {
    const readers = [{ label: "produced", value: function (p) { return p.produce_rate; } }];
    if (doc.versions.length > 1) {
      doc.versions.forEach(function (version) {
        readers.push({
          label: "v" + version + " rows (net)",
          value: function (p) {
            const v = p.versions.find(function (x) { return x.version === version; });
            return v ? v.rows_rate : null;
          },
        });
      });
    }
    return readers;
  }

  function draw(id, points, readers) {
    const el = document.getElementById(id);
    if (plots[id]) {
      plots[id].destroy();
      delete plots[id];
    }
    el.textContent = "";
    el.dataset.points = String(points.length);
    if (points.length === 0 || readers.length === 0) {
      el.textContent = points.length === 0 ? "No samples in this window yet." : "No groups.";
      return;
    }
    const c = columns(points, readers);
    const opts = {
      width: Math.max(el.clientWidth, 300),
      height: 200,
      series: c.series,
      scales: { y: { range: function (u, lo, hi) { return [Math.min(0, lo), Math.max(hi, 1)]; } } },
      legend: { live: false },
    };
    plots[id] = new uPlot(opts, c.data, el);
  }

  function render(doc) {
    const names = doc.groups;
    draw("chart-produce", doc.points, produceReaders(doc));
    draw("chart-consume", doc.points, names.map(function (n) { return { label: n, value: groupValue(n, "consume_rate") }; }));
    draw("chart-lag", doc.points, lagReaders(doc));
    draw("chart-dead", doc.points, names.map(function (n) { return { label: n, value: groupValue(n, "dead_arrivals") }; }));
    root.dataset.points = String(doc.points.length);
    root.dataset.state = "drawn";
    const last = doc.points.length ? doc.points[doc.points.length - 1].at : null;
    state.textContent = doc.points.length + " point(s)" + (last ? ", the newest at " + last.replace("T", " ").replace(/\.\d+Z$/, "Z") : "");
  }

  function load() {
    const url = root.dataset.api + "?window=" + encodeURIComponent(root.dataset.window);
    root.dataset.state = "loading";
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (res) {
        return res.json().then(function (body) {
          if (!res.ok) {
            throw new Error(body.error || res.statusText);
          }
          return body;
        });
      })
      .then(render)
      .catch(function (err) {
        state.textContent = "Could not read the history: " + err.message;
        root.dataset.state = "failed";
      });
  }

  root.querySelectorAll("button[data-window]").forEach(function (b) {
    b.addEventListener("click", function () {
      root.dataset.window = b.dataset.window;
      root.querySelectorAll("button[data-window]").forEach(function (o) { o.classList.toggle("on", o === b); });
      load();
    });
  });
  load();
  setInterval(load, refreshMs);
})();
