"use strict";
(function () {
  const data = JSON.parse(document.getElementById("dataflow-data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const CLASS_COLOURS = { cpu: "#f4a261", memory: "#9b5de5", network: "#00bbf9", disk: "#90be6d" };
  const palette = ["#e76f51", "#2a9d8f", "#e9c46a", "#264653", "#f4a261", "#8ab17d", "#b56576", "#6d597a",
                   "#355070", "#eaac8b", "#43aa8b", "#577590", "#f94144", "#f3722c", "#90be6d", "#277da1"];
  const opColour = (i) => palette[i % palette.length];
  let selected = null;

  function el(name, attrs, parent) {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }
  function seconds(s) { return s < 0.01 ? (s * 1000).toFixed(1) + " ms" : s.toFixed(2) + " s"; }
  function size(n) {
    const units = ["B", "KB", "MB", "GB"]; let i = 0;
    while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(1) : n.toFixed(0)) + " " + units[i];
  }

  function drawDag() {
    const ops = data.operations;
    const layers = {};
    ops.forEach((op, i) => { (layers[op.layer] = layers[op.layer] || []).push(i); });
    const W = 230, H = 46, GX = 50, GY = 14;
    const depth = Math.max(0, ...ops.map((o) => o.layer)) + 1;
    const tallest = Math.max(1, ...Object.values(layers).map((l) => l.length));
    const svg = el("svg", { width: depth * (W + GX) + 20, height: tallest * (H + GY) + 20 });
    const defs = el("defs", {}, svg);
    const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6,
                                  orient: "auto-start-reverse" }, defs);
    el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#999" }, marker);
    const pos = {};
    Object.entries(layers).forEach(([layer, members]) => {
      members.forEach((i, row) => { pos[i] = [10 + layer * (W + GX), 10 + row * (H + GY)]; });
    });
    ops.forEach((op, i) => {
      op.upstream.forEach((u) => {
        const [x1, y1] = pos[u], [x2, y2] = pos[i];
        el("path", { class: "edge", d: `M ${x1 + W} ${y1 + H / 2} C ${x1 + W + GX / 2} ${y1 + H / 2}, ` +
          `${x2 - GX / 2} ${y2 + H / 2}, ${x2} ${y2 + H / 2}` }, svg);
      });
    });
    ops.forEach((op, i) => {
      const [x, y] = pos[i];
      const g = el("g", { class: "op", "data-operation": op.name, transform: `translate(${x},${y})` }, svg);
      el("rect", { width: W, height: H, rx: 4, fill: CLASS_COLOURS[op.class] || "#ccc" }, g);
      el("rect", { x: 0, y: H - 5, width: W * Math.min(1, op.compute_s / Math.max(1e-9, maxCompute())), height: 5,
                   fill: opColour(i), stroke: "none" }, g);
      const name = op.name.length > 34 ? op.name.slice(0, 33) + "…" : op.name;
      el("text", { x: 5, y: 14 }, g).textContent = name;
      el("text", { x: 5, y: 28 }, g).textContent =
        `${op.tasks} tasks · ${seconds(op.compute_s)} · x${op.parallelism.toFixed(2)} · ${op.class}` +
        (op.code_class && op.code_class !== op.class ? ` (code: ${op.code_class})` : "") +
        (op.critical_s > 0 ? " · critical" : "");
      const title = el("title", {}, g);
      title.textContent = `${op.name}\n${op.tasks} tasks, ${seconds(op.compute_s)} of task time over ` +
        `${seconds(op.span_s)}\nin ${size(op.bytes_in)}, out ${size(op.bytes_out)}` +
        (op.bytes_moved ? `, ${size(op.bytes_moved)} of it fetched by other workers` : "") +
        (op.cpu_share === null ? "" : `\nCPU ${(op.cpu_share * 100).toFixed(0)} % of task time`) +
        `\nmeasured class ${op.class}` + (op.code_class ? `, code's class ${op.code_class}` : ", code not read");
      g.addEventListener("click", () => select(i));
    });
    document.getElementById("dag").appendChild(svg);
  }
  let _max = null;
  function maxCompute() {
    if (_max === null) _max = Math.max(1e-9, ...data.operations.map((o) => o.compute_s));
    return _max;
  }

  function drawGantt() {
    const rows = data.threads.length;
    const end = Math.max(data.wall_s, ...data.tasks.map((t) => t[3]));
    const LEFT = 230, WIDTH = 900, ROW = 18;
    const svg = el("svg", { width: LEFT + WIDTH + 20, height: rows * ROW + 30 });
    const x = (t) => LEFT + (t / end) * WIDTH;
    data.threads.forEach((name, r) => {
      const g = el("g", { class: "row" }, svg);
      el("text", { x: 4, y: r * ROW + 13 }, g).textContent = name.length > 38 ? "…" + name.slice(-37) : name;
      el("line", { x1: LEFT, x2: LEFT + WIDTH, y1: r * ROW + ROW, y2: r * ROW + ROW, stroke: "#eee" }, g);
    });
    data.tasks.forEach(([op, row, start, stop, critical]) => {
      const bar = el("rect", { class: "bar" + (critical ? " critical" : ""), "data-task-op": data.operations[op].name,
                               x: x(start), y: row * ROW + 2, width: Math.max(0.7, x(stop) - x(start)), height: ROW - 4,
                               fill: opColour(op) }, svg);
      el("title", {}, bar).textContent = `${data.operations[op].name}: ${seconds(stop - start)} at ${start.toFixed(3)} s`;
    });
    const axis = el("g", { class: "axis" }, svg);
    for (let i = 0; i <= 10; i++) {
      const t = (end * i) / 10;
      el("text", { x: x(t) - 8, y: rows * ROW + 20 }, axis).textContent = t.toFixed(2) + " s";
    }
    document.getElementById("gantt").appendChild(svg);
  }

  function select(i) {
    selected = selected === i ? null : i;
    document.querySelectorAll(".op").forEach((g) => {
      g.classList.toggle("selected", selected !== null && g.dataset.operation === data.operations[selected].name);
    });
    document.querySelectorAll(".bar").forEach((b) => {
      b.classList.toggle("dim", selected !== null && b.dataset.taskOp !== data.operations[selected].name);
    });
    const holder = document.getElementById("source");
    holder.textContent = "";
    if (selected === null) return;
    const op = data.operations[selected];
    const h = document.createElement("h2");
    h.textContent = `Source of ${op.name}`;
    holder.appendChild(h);
    op.functions.forEach((f) => {
      const where = document.createElement("div");
      where.className = "where";
      where.textContent = f.file ? `${f.label} — ${f.file}:${f.line}` : f.label;
      holder.appendChild(where);
      if (f.source) {
        const pre = document.createElement("pre");
        pre.textContent = f.source;
        holder.appendChild(pre);
      }
    });
  }

  drawDag();
  drawGantt();
  const wanted = new URLSearchParams(location.search).get("operation");
  if (wanted !== null) {
    const i = data.operations.findIndex((o) => o.name === wanted);
    if (i >= 0) select(i);
  }
  document.documentElement.setAttribute("data-rendered", "ok");
})();
