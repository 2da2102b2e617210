// mantispy recording view: resource series per process, and a flame graph of the brushed window.
// Reads the JSON in <script id="recording-data">; no server, no network.
window.addEventListener("error", function (event) {
  document.documentElement.setAttribute("data-script-errors", String(event.message));
});
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("recording-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var WIDTH = 1100, HEIGHT = 150, PAD = 40, ROW = 17;
  var colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];
  var duration = Math.max(data.duration, 1e-6);
  var state = {from: 0, to: duration, metric: data.defaultMetric};

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function x(t) { return PAD + (WIDTH - 2 * PAD) * t / duration; }
  function t(px) { return Math.min(Math.max((px - PAD) / (WIDTH - 2 * PAD) * duration, 0), duration); }

  function drawChart() {
    var holder = document.getElementById("chart");
    holder.innerHTML = "";
    var svg = el("svg", {width: WIDTH, height: HEIGHT, "class": "chart", id: "chart-svg"}, holder);
    var series = data.series[state.metric] || {};
    var pids = Object.keys(series), max = 0;
    pids.forEach(function (pid) { series[pid].forEach(function (p) { max = Math.max(max, p[1]); }); });
    max = max || 1;
    el("line", {x1: PAD, y1: HEIGHT - 20, x2: WIDTH - PAD, y2: HEIGHT - 20, stroke: "#999"}, svg);
    el("text", {x: 2, y: 14, "font-size": 10}, svg).textContent = formatValue(max);
    el("text", {x: 2, y: HEIGHT - 22, "font-size": 10}, svg).textContent = "0";
    el("text", {x: WIDTH - PAD - 30, y: HEIGHT - 6, "font-size": 10}, svg).textContent = duration.toFixed(1) + " s";
    var legend = document.getElementById("legend");
    legend.innerHTML = "";
    pids.forEach(function (pid, i) {
      var color = colors[i % colors.length];
      var points = series[pid].map(function (p) {
        return x(p[0]).toFixed(1) + "," + (HEIGHT - 20 - (HEIGHT - 30) * p[1] / max).toFixed(1);
      });
      if (points.length === 1) points.push(points[0]);
      el("polyline", {points: points.join(" "), fill: "none", stroke: color, "stroke-width": 1.5}, svg);
      var item = document.createElement("span");
      item.innerHTML = "<i style='background:" + color + "'></i>";
      item.appendChild(document.createTextNode("pid " + pid + " " + (data.commands[pid] || "")));
      legend.appendChild(item);
    });
    var brush = el("rect", {"class": "brush", x: x(state.from), y: 0, width: Math.max(x(state.to) - x(state.from), 0),
                            height: HEIGHT - 20, id: "brush"}, svg);
    var start = null;
    function px(event) { return event.clientX - svg.getBoundingClientRect().left; }
    svg.addEventListener("mousedown", function (event) {
      start = px(event);
      brush.setAttribute("x", start);
      brush.setAttribute("width", 0);
    });
    svg.addEventListener("mousemove", function (event) {
      if (start === null) return;
      brush.setAttribute("x", Math.min(start, px(event)));
      brush.setAttribute("width", Math.abs(px(event) - start));
    });
    svg.addEventListener("mouseup", function (event) {
      if (start === null) return;
      var a = t(Math.min(start, px(event))), b = t(Math.max(start, px(event)));
      start = null;
      if (b - a < duration / 1000) { a = 0; b = duration; }
      select(a, b);
    });
  }

  function drawPhases() {
    // The phases mantispy phases stored, as a band above the chart; clicking one brushes its window.
    var holder = document.getElementById("phases");
    if (!data.phases || !data.phases.length) return;
    var svg = el("svg", {width: WIDTH, height: 22, id: "phase-band"}, holder);
    data.phases.forEach(function (phase) {
      var group = el("g", {"class": "phase", "data-phase": phase.label}, svg);
      el("title", {}, group).textContent = phase.label + " " + phase.start.toFixed(2) + "-" + phase.end.toFixed(2) +
        " s: " + phase.name;
      el("rect", {x: x(phase.start), y: 1, width: Math.max(x(phase.end) - x(phase.start) - 1, 1), height: 20,
                  fill: colors[(parseInt(phase.label.slice(1), 10) - 1) % colors.length] || "#999",
                  "fill-opacity": 0.55, rx: 3}, group);
      if (x(phase.end) - x(phase.start) > 24) {
        el("text", {x: x(phase.start) + 4, y: 15, "font-size": 11}, group).textContent = phase.label;
      }
      group.addEventListener("click", function () { select(phase.start, phase.end); });
    });
  }

  function formatValue(v) {
    if (v >= 1e9) return (v / 1e9).toFixed(1) + "G";
    if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
    return v.toFixed(v < 10 ? 2 : 0);
  }

  function select(from, to) {
    state.from = from;
    state.to = to;
    var brush = document.getElementById("brush");
    if (brush) {
      brush.setAttribute("x", x(from));
      brush.setAttribute("width", Math.max(x(to) - x(from), 0));
    }
    drawFlame();
  }

  function aggregate() {
    var root = {label: "all", total: 0, children: {}}, count = 0;
    data.samples.forEach(function (s) {
      if (s[0] < state.from || s[0] > state.to) return;
      count += 1;
      var node = root, weight = s[4];
      root.total += weight;
      data.stacks[s[3]].forEach(function (frame) {
        var label = data.frames[frame];
        var child = node.children[label];
        if (!child) child = node.children[label] = {label: label, total: 0, children: {}};
        child.total += weight;
        node = child;
      });
    });
    return {root: root, count: count};
  }

  function depth(node) {
    var d = 0;
    for (var key in node.children) d = Math.max(d, depth(node.children[key]));
    return d + 1;
  }

  function drawFlame() {
    var result = aggregate(), root = result.root;
    var html = document.documentElement;
    html.setAttribute("data-window", state.from.toFixed(2) + "-" + state.to.toFixed(2));
    html.setAttribute("data-window-samples", String(result.count));
    document.getElementById("window").textContent = state.from.toFixed(2) + "-" + state.to.toFixed(2) + " s: " +
      result.count + " samples, " + root.total.toFixed(3) + " s of " + data.mode + " time";
    var holder = document.getElementById("flame-holder");
    holder.innerHTML = "";
    if (!result.count) {
      holder.innerHTML = "<p class='empty' id='flame-empty'>no sample in this window</p>";
      return;
    }
    var levels = depth(root);
    var svg = el("svg", {width: WIDTH, height: levels * ROW + 4, id: "flame"}, holder);
    var scale = WIDTH / root.total;
    (function draw(node, left, level) {
      var width = node.total * scale;
      if (width < 0.3) return;
      var y = (levels - level - 1) * ROW;
      var group = el("g", {"class": "frame"}, svg);
      el("title", {}, group).textContent = node.label + ": " + node.total.toFixed(4) + " s, " +
        (100 * node.total / root.total).toFixed(1) + "%";
      el("rect", {x: left.toFixed(2), y: y, width: width.toFixed(2), height: ROW - 1, rx: 2,
                  fill: color(node.label), "data-label": node.label}, group);
      if (width > 40) {
        var chars = Math.floor(width / 7);
        el("text", {x: (left + 3).toFixed(2), y: y + ROW - 5, "font-size": 11, "font-family": "monospace"}, group)
          .textContent = node.label.length <= chars ? node.label : node.label.slice(0, Math.max(chars - 2, 0)) + "..";
      }
      var offset = left;
      Object.keys(node.children).sort().forEach(function (key) {
        draw(node.children[key], offset, level + 1);
        offset += node.children[key].total * scale;
      });
    })(root, 0, 0);
  }

  function color(label) {
    var h = 0;
    for (var i = 0; i < label.length; i++) h = (h * 31 + label.charCodeAt(i)) >>> 0;
    return "rgb(" + (205 + h % 50) + "," + (80 + (h >> 8) % 120) + "," + ((h >> 16) % 60) + ")";
  }

  var chooser = document.getElementById("metric");
  Object.keys(data.series).sort().forEach(function (metric) {
    var option = document.createElement("option");
    option.value = metric;
    option.textContent = metric;
    if (metric === state.metric) option.selected = true;
    chooser.appendChild(option);
  });
  chooser.addEventListener("change", function () { state.metric = chooser.value; drawChart(); });
  document.getElementById("reset").addEventListener("click", function () { select(0, duration); });
  // A link may name a window (recording.html#window=FROM,TO seconds): it is brushed as a user would.
  function brushTo(from, to) {
    var svg = document.getElementById("chart-svg"), box = svg.getBoundingClientRect();
    [["mousedown", from], ["mousemove", to], ["mouseup", to]].forEach(function (step) {
      svg.dispatchEvent(new MouseEvent(step[0], {clientX: box.left + x(step[1]), clientY: box.top + HEIGHT / 2,
                                                 bubbles: true}));
    });
  }
  drawPhases();
  drawChart();
  drawFlame();
  var linked = /window=([0-9.]+),([0-9.]+)/.exec(window.location.hash);
  if (linked) brushTo(parseFloat(linked[1]), parseFloat(linked[2]));
  document.documentElement.setAttribute("data-rendered", "ok");
})();
