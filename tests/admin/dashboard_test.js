// Runs the dashboard's script (src/admin/dashboard.html) in node with a stub DOM, canvas and
// fetch, and checks what it derives from /history, /limits and /config_dump: the whole history
// on open and only what is new afterwards, series aligned with the sample times, the charts each
// filter type gets, one line per class that saw traffic, the baseline table, tolerance of
// missing series and of a failing server, and in queue mode a card per queue and per consumer
// (their charts from /history, their totals from /queues, which is polled only in queue mode).
// The real-browser test is integration/dashboard/.
// Usage: node dashboard_test.js path/to/dashboard.html
"use strict";
const assert = require("assert");
const fs = require("fs");
const vm = require("vm");

const html = fs.readFileSync(process.argv[2], "utf8");
const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
assert.strictEqual(scripts.length, 1, "exactly one inline script");

// Elements keep their children (setting textContent drops them, as in a browser) and canvases
// count the drawing calls made on them.
function makeElement(tag) {
  const calls = {};
  const ctx = new Proxy({}, {
    get: (t, k) => (k in t ? t[k] : (...args) => { calls[k] = (calls[k] || 0) + 1; }),
    set: (t, k, v) => ((t[k] = v), true),
  });
  let text = "";
  const el = {
    tag, children: [], style: {}, className: "", width: 0, height: 0, clientWidth: 0,
    clientHeight: 0, removed: false, listeners: {}, calls,
    get textContent() { return text + this.children.map((c) => c.textContent || c.text || "").join(""); },
    set textContent(v) { text = String(v); this.children = []; },
    appendChild(c) { this.children.push(c); return c; },
    remove() { this.removed = true; },
    getContext() { return ctx; },
    addEventListener(type, fn) { this.listeners[type] = fn; },
  };
  return el;
}

function makeContext(responder) {
  const byId = {};
  const document = {
    getElementById: (id) => byId[id] || (byId[id] = makeElement("div")),
    createElement: (tag) => makeElement(tag),
    createTextNode: (text) => ({ text }),
  };
  const calls = [];
  const context = {
    document,
    console,
    devicePixelRatio: 1,
    setInterval: () => 0,
    fetch: async (path) => {
      calls.push(path);
      const r = responder(path);
      if (r instanceof Error) throw r;
      return { ok: r.status === 200, status: r.status, json: async () => r.body };
    },
  };
  context.window = context;
  vm.createContext(context);
  return { context, byId, calls };
}

// Arrays made inside the page's context have its Array.prototype: compare them as plain JSON.
const plain = (x) => JSON.parse(JSON.stringify(x));

const settle = async () => { for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r)); };

const T0 = 1714566896000;

// A /history answer: n samples from `start` (1 s apart), one entry per filter spec. A spec gives
// its listener/filter/type and a function (i) -> {series: value} for the fields it has.
function history(start, n, specs, listeners) {
  const t = [];
  for (let i = 0; i < n; i++) t.push(T0 + (start + i) * 1000);
  const filters = specs.map((s) => {
    const out = { listener: "ingress", filter: s.filter, type: s.type, classes: {} };
    for (let i = 0; i < n; i++) {
      const values = s.values(start + i);
      for (const [k, v] of Object.entries(values)) {
        if (k === "classes") {
          for (const [c, cv] of Object.entries(v)) {
            out.classes[c] = out.classes[c] || {};
            for (const [ck, cval] of Object.entries(cv)) {
              (out.classes[c][ck] = out.classes[c][ck] || new Array(n).fill(null))[i] = cval;
            }
          }
        } else {
          (out[k] = out[k] || new Array(n).fill(null))[i] = v;
        }
      }
    }
    return out;
  });
  const ls = (listeners || []).map((l) => {
    const out = { listener: l.listener, rq_per_s: {} };
    for (let i = 0; i < n; i++) {
      for (const [k, v] of Object.entries(l.values(start + i))) {
        if (k.startsWith("queue_wait")) (out[k] = out[k] || new Array(n).fill(null))[i] = v;
        else (out.rq_per_s[k] = out.rq_per_s[k] || new Array(n).fill(null))[i] = v;
      }
    }
    return out;
  });
  return { interval_ms: 1000, capacity: 600, recent_intervals: 10, t, filters, listeners: ls };
}

const VEGAS = { filter: "vegas", type: "rtt_gradient", values: (i) => ({
  limit: 20 - (i % 5), in_flight: 3, queued: 1, admitted_per_s: i ? 100 + i : null,
  shed_per_s: i ? 2 : null, rtt_noload_ms: 1.5, rtt_smoothed_ms: 2 + i / 10, gradient: 0.75,
  queueing: 0.5, queue_wait_p99_ms: 4 }) };
const FIXED = { filter: "fixed", type: "fixed_semaphore", values: (i) => ({
  limit: 8, in_flight: 8, queued: 5, admitted_per_s: i ? 10 : null, shed_per_s: i ? 0 : null }) };
const QWB = { filter: "queue_wait_budget", type: "queue_wait_budget", values: (i) => ({
  in_flight: 2, queued: 4, admitted_per_s: 90, shed_per_s: 150, queue_wait_p99_ms: 20.5 }) };
const AIMD = { filter: "aimd", type: "aimd", values: () => ({ limit: 5, in_flight: 5, p99_ms: 41 }) };
const INGRESS = { listener: "ingress", values: (i) => ({
  completed: 100, shed: i > 5 ? 20 : 0, client_reset: 0, queue_wait_p50_ms: 0.2,
  queue_wait_p99_ms: 19 }) };

const LIMITS = [{
  listener: "ingress", filter: "vegas", type: "rtt_gradient", limit: 16, in_flight: 3, queued: 1,
  admitted: 500, shed: 4, rtt_noload_ms: 1.5, rtt_smoothed_ms: 2.25, gradient: 0.75, p99_ms: null,
  queueing: 0.5, queue_wait_p99_ms_recent: 4.2,
  classes: { sheddable: { admitted: 0, shed: 0, queued: 0 } },
  baselines: [{ method: "/pkg.Svc/Get", rtt_noload_ms: 1.25, samples: 40 },
              { method: "/pkg.Svc/Scan", rtt_noload_ms: 30.5, samples: 90 }],
  recent_decisions: [{ ms_ago: 1500, at: "2024-05-01T12:34:56.789Z", old_limit: 25,
                       new_limit: 20, reason: "gradient 0.6" }],
}, {
  listener: "ingress", filter: "fixed", type: "fixed_semaphore", limit: 8, in_flight: 8,
  queued: 5, admitted: 10, shed: 0, baselines: [], recent_decisions: [],
}];

const CONFIG = { listeners: [{ name: "ingress", filters: [
  { name: "queue_wait_budget", type: "queue_wait_budget", budget: "20ms" },
  { name: "vegas", type: "rtt_gradient" }, { name: "fixed", type: "fixed_semaphore" },
  { name: "aimd", type: "aimd", latency_slo: "50ms" }] }] };

function server(overrides) {
  const answers = Object.assign({
    "/history": history(0, 30, [QWB, VEGAS, FIXED], [INGRESS]),
    "/limits": LIMITS,
    "/config_dump": CONFIG,
    "/server_info": { version: "1", state: "LIVE", uptime_s: 3, workers: 2 },
  }, overrides || {});
  return (path) => {
    if (path.startsWith("/stats?format=json&filter=")) {
      return { status: 200, body: { stats: [{ name: "server.memory_rss_bytes", value: 10485760 }] } };
    }
    const key = path.startsWith("/history?since=") && answers["/history?since"] ? "/history?since"
                                                                                : path.split("?")[0];
    if (!(key in answers)) return { status: 404, body: null };
    const a = answers[key];
    return { status: 200, body: typeof a === "function" ? a(path) : a };
  };
}

async function open(responder) {
  const env = makeContext(responder);
  vm.runInContext(scripts[0], env.context);
  await settle();
  return Object.assign(env, { d: env.context.window.sluiceDashboard });
}

// Every series of every filter and listener is as long as model.t.
function assertAligned(d) {
  for (const f of Object.values(d.filters)) {
    for (const [name, arr] of Object.entries(f.series)) {
      assert.strictEqual(arr.length, d.t.length, f.key + " " + name);
    }
    for (const [c, s] of Object.entries(f.classes)) {
      for (const [name, arr] of Object.entries(s)) {
        assert.strictEqual(arr.length, d.t.length, f.key + " " + c + " " + name);
      }
    }
  }
  for (const l of Object.values(d.listeners)) {
    for (const [name, arr] of Object.entries(l.series)) {
      assert.strictEqual(arr.length, d.t.length, l.name + " " + name);
    }
  }
}

const tests = [];
function test(name, fn) { tests.push({ name, fn }); }

test("opening the page loads the whole history and draws it at once", async () => {
  const { d, calls } = await open(server());
  assert.deepStrictEqual(calls.slice(0, 2), ["/history", "/limits"]);
  assert.ok(calls.includes("/config_dump") && calls.includes("/server_info"));
  assert.ok(calls.some((c) => c.startsWith("/stats?format=json&filter=")));
  assert.strictEqual(d.polls, 1);
  assert.strictEqual(d.errors, 0);
  assert.strictEqual(d.frames, 1);
  assert.strictEqual(d.t.length, 30);
  assertAligned(d);
  const v = d.filters["ingress/vegas"];
  assert.strictEqual(v.type, "rtt_gradient");
  assert.strictEqual(v.last.limit, 20 - (29 % 5));
  assert.strictEqual(v.last.admitted_per_s, 129);
  assert.strictEqual(v.last.admitted_total, 500);
  assert.strictEqual(v.last.queue_wait_p99_ms_recent, 4.2);
  assert.strictEqual(v.series.admitted_per_s[0], null, "the first sample has no rate");
  // Thirty points on screen in the first frame: the history, not one poll's worth.
  const concurrency = v.charts.find((c) => c.title === "Concurrency");
  assert.strictEqual(concurrency.points, 30);
  assert.strictEqual(v.charts.find((c) => c.title === "Admitted / shed").points, 29);
  assert.strictEqual(d.rssBytes, 10485760);
  assert.strictEqual(d.state, "LIVE");
});

test("later polls ask only for what is newer and append it", async () => {
  let next = null;
  const responder = server({ "/history?since": (path) => { next = path; return history(30, 2, [VEGAS]); } });
  const { d, calls } = await open(responder);
  await d.poll();
  assert.strictEqual(next, "/history?since=" + (T0 + 29000));
  assert.strictEqual(d.t.length, 32);
  assert.strictEqual(d.t[31], T0 + 31000);
  assertAligned(d);
  // Filters the newer samples did not mention were absent there: null, not their last value.
  assert.strictEqual(d.filters["ingress/fixed"].series.limit[31], null);
  assert.strictEqual(d.filters["ingress/vegas"].series.limit[31], 20 - (31 % 5));
  assert.strictEqual(calls.filter((c) => c === "/config_dump").length, 1, "config read once");
  // A repeated sample (an answer overlapping what the page has) is not appended twice.
  d.ingestHistory(history(31, 2, [VEGAS]));
  assert.strictEqual(d.t.length, 33);
  assertAligned(d);
});

test("each filter type gets only the charts that apply to it", async () => {
  const { d } = await open(server({ "/history": history(0, 5, [QWB, VEGAS, FIXED, AIMD]) }));
  assert.deepStrictEqual(plain(d.chartsFor("ingress/fixed")), ["Concurrency", "Admitted / shed"]);
  assert.deepStrictEqual(plain(d.chartsFor("ingress/queue_wait_budget")),
                         ["Queued", "Admitted / shed", "Queue wait p99, each second"]);
  assert.deepStrictEqual(plain(d.chartsFor("ingress/vegas")),
                         ["Concurrency", "RTT no-load vs smoothed", "Gradient (no-load / smoothed)",
                          "Queueing (share of slow samples)", "Admitted / shed"]);
  assert.deepStrictEqual(plain(d.chartsFor("ingress/aimd")), ["Concurrency", "p99 vs SLO", "Admitted / shed"]);
  // The SLO comes from /config_dump and is drawn as a reference line with its value.
  const aimd = d.filters["ingress/aimd"];
  assert.strictEqual(aimd.slo_ms, 50);
  const legend = aimd.view.boxes[1].legend.textContent;
  assert.match(legend, /p99 41/);
  assert.match(legend, /slo 50/);
  // Concurrency of rtt_gradient: limit and in-flight only (its queue is charted by the budget).
  const vegasLegend = d.filters["ingress/vegas"].view.boxes[0].legend.textContent;
  assert.match(vegasLegend, /limit 16.*in flight 3/);
  assert.doesNotMatch(vegasLegend, /queued/);
});

test("one line per class, only for classes that saw traffic, and only with two or more", async () => {
  const CLASSY = { filter: "vegas", type: "rtt_gradient", values: (i) => ({
    limit: 10, in_flight: 2,
    classes: {
      sheddable: { admitted_per_s: 0, shed_per_s: i > 2 ? 30 : 0, queued: 0 },
      sheddable_plus: { admitted_per_s: 0, shed_per_s: 0, queued: 0 },
      critical: { admitted_per_s: 50, shed_per_s: 0, queued: 1, queue_wait_p99_ms: 3 },
      critical_plus: { admitted_per_s: 0, shed_per_s: 0, queued: 0 },
    } }) };
  const { d } = await open(server({ "/history": history(0, 6, [CLASSY, FIXED]) }));
  assert.deepStrictEqual(plain(d.activeClasses("ingress/vegas")), ["sheddable", "critical"]);
  const titles = d.chartsFor("ingress/vegas");
  assert.deepStrictEqual(plain(titles.slice(-3)),
                         ["Admitted by class", "Shed by class", "Queue wait p99 by class"]);
  const f = d.filters["ingress/vegas"];
  const shedBox = f.view.boxes.find((b) => b.spec.title === "Shed by class");
  assert.match(shedBox.legend.textContent, /sheddable 30.*critical 0/);
  assert.doesNotMatch(shedBox.legend.textContent, /sheddable_plus|critical_plus/);
  // A filter whose classes saw nothing has no class charts at all.
  assert.ok(!d.chartsFor("ingress/fixed").some((t) => /class/.test(t)));
  // Class queue-wait charts only once some class has a queue-wait series.
  const NOWAIT = { filter: "vegas", type: "rtt_gradient", values: () => ({
    classes: { critical: { admitted_per_s: 5 }, sheddable: { admitted_per_s: 1 } } }) };
  const other = await open(server({ "/history": history(0, 3, [NOWAIT]) }));
  assert.deepStrictEqual(plain(other.d.chartsFor("ingress/vegas").slice(-2)),
                         ["Admitted by class", "Shed by class"]);
  // Every request in one class (no criticality rules): the class charts would repeat the others.
  const ONE = { filter: "vegas", type: "rtt_gradient", values: () => ({
    classes: { critical: { admitted_per_s: 5 } } }) };
  const single = await open(server({ "/history": history(0, 3, [ONE]) }));
  assert.ok(!single.d.chartsFor("ingress/vegas").some((t) => /class/.test(t)));
});

test("adaptive filters list their per-method baselines, most sampled first", async () => {
  const { d } = await open(server());
  const table = d.filters["ingress/vegas"].view.baselines;
  assert.match(table.textContent, /Per-method no-load baselines/);
  const text = table.textContent;
  assert.ok(text.indexOf("/pkg.Svc/Scan") < text.indexOf("/pkg.Svc/Get"), text);
  assert.match(text, /30\.5/);
  assert.strictEqual(d.filters["ingress/fixed"].view.baselines.textContent, "");
  assert.match(d.filters["ingress/vegas"].view.decisions.textContent, /25 → 20/);
});

test("the listener card shows requests by end reason (those that happened) and queue wait", async () => {
  const { d } = await open(server());
  const l = d.listeners.ingress;
  assert.deepStrictEqual(plain(l.charts.map((c) => c.title)),
                         ["Requests by end reason", "Queue wait p50 / p99, each second"]);
  const legend = l.view.boxes[0].legend.textContent;
  assert.match(legend, /completed 100/);
  assert.match(legend, /shed 20/);
  assert.doesNotMatch(legend, /client reset/);
  assert.match(l.view.boxes[1].legend.textContent, /p50 0\.20.*p99 19/);
});

test("missing series and gaps chart as gaps", async () => {
  const GAPPY = { filter: "vegas", type: "rtt_gradient", values: (i) => ({
    limit: i === 3 ? null : 10 }) };
  const { d } = await open(server({ "/history": history(0, 6, [GAPPY]), "/limits": [] }));
  const f = d.filters["ingress/vegas"];
  assert.strictEqual(f.series.limit[3], null);
  assert.strictEqual(f.series.rtt_noload_ms.every((v) => v === null), true);
  assert.strictEqual(f.charts.find((c) => c.title === "Concurrency").points, 5);
  assert.strictEqual(f.charts.find((c) => c.title === "RTT no-load vs smoothed").points, 0);
});

test("the range buttons choose how much history is on screen", async () => {
  const { d, byId } = await open(server({ "/history": history(0, 400, [VEGAS]), "/limits": [] }));
  const f = d.filters["ingress/vegas"];
  assert.strictEqual(f.charts[0].points, 400);
  const buttons = byId.range.children;
  assert.deepStrictEqual(plain(buttons.map((b) => b.textContent)), ["1m", "5m", "10m"]);
  buttons[0].onclick();
  assert.strictEqual(d.rangeS, 60);
  assert.strictEqual(f.charts[0].points, 61);
});

test("hovering a chart shows every chart's values at that time", async () => {
  const { d } = await open(server({ "/history": history(0, 10, [VEGAS]), "/limits": [] }));
  const f = d.filters["ingress/vegas"];
  const canvas = f.view.boxes[0].canvas;
  canvas.clientWidth = 640;
  // The pointer over sample 5 of 0..9: the plot is 640 - 40 - 6 px wide and spans the minute
  // before sample 9 (a short history fills at least a minute), so sample 5 is 56 s into it.
  canvas.listeners.mousemove({ offsetX: 40 + 594 * (56 / 60) });
  assert.ok(Math.abs(d.hoverT - (T0 + 5000)) < 1, String(d.hoverT - T0));
  assert.match(f.view.boxes[0].legend.textContent, /^\d\d:\d\d:\d\d.*limit 20.*in flight 3/);
  // Every chart follows the pointer, not just the one under it.
  assert.match(f.view.boxes[1].legend.textContent, /smoothed 2\.50/);
  canvas.listeners.mouseleave();
  assert.strictEqual(d.hoverT, null);
});

test("history is bounded and a filter with nothing left to show is dropped", async () => {
  const { d } = await open(server({ "/history": history(0, 5, [FIXED, VEGAS]), "/limits": [] }));
  const card = d.filters["ingress/fixed"].card;
  assert.ok(card);
  for (let start = 5; start < 1200; start += 100) d.ingestHistory(history(start, 100, [VEGAS]));
  assert.strictEqual(d.t.length, 600);
  assertAligned(d);
  assert.ok(!("ingress/fixed" in d.filters));
  assert.ok(card.removed);
  assert.ok(!d.order.includes("ingress/fixed"));
});

test("a failing server counts errors and still renders", async () => {
  const { d, byId } = await open(() => new Error("connection refused"));
  assert.strictEqual(d.errors, 1);
  assert.strictEqual(d.polls, 0);
  assert.strictEqual(d.frames, 1);
  assert.match(byId.status.textContent, /unreachable/);
});

test("an HTTP error status counts as a failed poll", async () => {
  const { d } = await open(() => ({ status: 503, body: null }));
  assert.strictEqual(d.errors, 1);
});

test("a server without /history data shows that there is nothing yet", async () => {
  const { d, byId } = await open(server({ "/history": history(0, 0, []), "/limits": [] }));
  assert.strictEqual(d.polls, 1);
  assert.match(byId.empty.textContent, /No filters or listeners/);
});

// Queue mode: a /history answer with one queue and one consumer (n samples from `start`).
function queueHistory(start, n) {
  const h = history(start, n, [], []);
  const col = (f) => Array.from({ length: n }, (_, k) => f(start + k));
  h.queues = [{ queue: "work",
                rq_per_s: { ok: col((i) => (i ? 50 : null)), backpressure: col((i) => (i ? (i > 3 ? 5 : 0) : null)),
                            timeout: col((i) => (i ? 0 : null)) },
                backlog: col((i) => 10 * i), pending: col(() => 4), stream_length: col((i) => 10 * i + 4),
                consumers: col(() => 2), open: col(() => 6), drain_rate: col(() => 25),
                estimated_wait_ms: col((i) => 400 * i), e2e_p50_ms: col(() => 3),
                e2e_p99_ms: col(() => 80), redis_used_memory_bytes: col(() => 2097152),
                redis_cpu_ratio: col(() => 0.05) }];
  h.consumers = [{ consumer: "pull", limit: col(() => 8), in_flight: col(() => 7), window: col(() => 1),
                   completed_ok_per_s: col((i) => (i ? 45 : null)),
                   completed_error_per_s: col((i) => (i ? 2 : null)) }];
  return h;
}

const QUEUES = {
  recent_window_s: 10,
  queues: [{ queue: "work", redis: "127.0.0.1:6379", stream: "sluice:work", group: "sluice",
             backlog: 123, pending: 4, stream_length: 127, consumers: 2, open: 6, drain_rate: 25,
             estimated_wait_ms: 4920, requests: { ok: 900 },
             e2e_ms_recent: { count: 500, p50: 3, p90: 40, p99: 81.5, max: 120 },
             redis_info: { used_memory_bytes: 3145728, cpu_seconds: 12, cpu_ratio_recent: 0.125 } }],
  consumers: [{ consumer: "pull", queue: "work", cluster: "app", limit: 8, in_flight: 7, window: 1,
                completed_by_status: { OK: 880, UNAVAILABLE: 3 },
                adjustments: { increase: 5, decrease: 2, fast_decrease: 1 }, limiters: [] }],
};

const QUEUE_CONFIG = { listeners: [{ name: "ingress", queue: "work", filters: [] }],
                       queues: [{ name: "work" }],
                       consumers: [{ name: "pull", queue: "work", cluster: "app",
                                     filters: [{ name: "aimd", type: "aimd", latency_slo: "100ms" }] }] };

test("without queue mode /queues is never asked for", async () => {
  const { d, calls } = await open(server());
  await d.poll();
  assert.ok(!calls.includes("/queues"), JSON.stringify(calls));
  assert.strictEqual(d.queueMode, false);
  assert.deepStrictEqual(Object.keys(d.queues), []);
});

test("queue mode: a card per queue and per consumer, with the live totals of /queues", async () => {
  const AIMD_CONSUMER = { filter: "aimd", type: "aimd", values: () => ({ limit: 8, in_flight: 7, p99_ms: 60 }) };
  const h = queueHistory(0, 8);
  h.filters = history(0, 8, [AIMD_CONSUMER]).filters.map((f) => Object.assign(f, { listener: "consumer:pull" }));
  const { d, calls, byId } = await open(server({ "/history": h, "/config_dump": QUEUE_CONFIG,
                                                 "/queues": QUEUES, "/limits": [] }));
  // The first frame already has the totals: /queues was asked as soon as the config said so.
  assert.ok(calls.includes("/queues"), JSON.stringify(calls));
  assert.strictEqual(d.queueMode, true);
  assert.strictEqual(d.frames, 1);
  const q = d.queues.work;
  assert.strictEqual(q.series.backlog.length, 8);
  assert.strictEqual(q.outcomes.ok[7], 50);
  // Only the outcomes that happened get a line (ok always).
  assert.deepStrictEqual(plain(d.queueCharts("work")),
                         ["Backlog", "Estimated wait", "Drain rate", "Outcomes by reason",
                          "End-to-end p50 / p99, each second"]);
  const outcomes = q.view.boxes[3].legend.textContent;
  assert.match(outcomes, /ok 50.*backpressure 5/);
  assert.doesNotMatch(outcomes, /timeout/);
  assert.strictEqual(q.charts.find((c) => c.title === "Backlog").points, 8);
  assert.strictEqual(q.charts.find((c) => c.title === "Outcomes by reason").points, 7);
  assert.match(q.view.boxes[0].legend.textContent, /backlog 70.*pending 4.*stream length 74/);
  const sub = q.view.sub.textContent;
  assert.match(sub, /backlog 123/);  // live, not the last sample's 70
  assert.match(sub, /estimated wait 4920 ms/);
  assert.match(sub, /end-to-end p99 \(10 s\) 81\.5 ms/);
  assert.match(sub, /redis 3\.0 MiB, cpu 12\.5%/);
  const c = d.consumers.pull;
  assert.deepStrictEqual(plain(c.charts.map((x) => x.title)), ["Window vs in flight", "Completions"]);
  assert.match(c.view.boxes[0].legend.textContent, /limit 8.*in flight 7.*free window 1/);
  assert.match(c.view.boxes[1].legend.textContent, /ok 45.*error 2/);
  assert.match(c.view.sub.textContent, /queue work → cluster app/);
  assert.match(c.view.sub.textContent, /completed OK 880, UNAVAILABLE 3/);
  assert.match(c.view.sub.textContent, /adjustments \+5 −2 fast −1/);
  // The consumer's aimd filter has its card, with the SLO its consumer config gives it.
  assert.strictEqual(d.filters["consumer:pull/aimd"].slo_ms, 100);
  // Cards in order: queue, consumer, then the filters.
  const cards = byId.cards.children.filter((x) => !x.removed).map((x) => x.children[0].textContent);
  assert.deepStrictEqual(plain(cards.slice(-3)), ["queue work", "consumer pull", "consumer:pull/aimd"]);
  // Later polls ask /queues with the history.
  await d.poll();
  assert.strictEqual(calls.filter((x) => x === "/queues").length, 2);
  assertAligned(d);
  for (const e of [q, c]) {
    for (const s of [e.series, e.outcomes || {}]) {
      for (const [name, arr] of Object.entries(s)) assert.strictEqual(arr.length, d.t.length, name);
    }
  }
});

test("a line that appears (an outcome, an end reason) keeps the chart's canvas", async () => {
  const { d } = await open(server({ "/history": queueHistory(0, 4), "/config_dump": QUEUE_CONFIG,
                                    "/queues": QUEUES, "/limits": [] }));
  const q = d.queues.work;
  const canvas = q.view.boxes[3].canvas;
  assert.doesNotMatch(q.view.boxes[3].legend.textContent, /timeout/);
  const more = queueHistory(4, 2);
  more.queues[0].rq_per_s.timeout = [3, 4];
  d.ingestHistory(more);
  d.render();
  assert.strictEqual(q.view.boxes[3].canvas, canvas, "the canvas was replaced");
  assert.ok(!canvas.removed);
  assert.match(q.view.boxes[3].legend.textContent, /timeout 4/);
});

test("queue mode: a history without queue columns (an older server) leaves no queue cards", async () => {
  const { d } = await open(server({ "/config_dump": QUEUE_CONFIG, "/queues": { queues: [], consumers: [] } }));
  assert.strictEqual(d.queueMode, true);
  assert.deepStrictEqual(Object.keys(d.queues), []);
  assert.deepStrictEqual(Object.keys(d.consumers), []);
});

(async () => {
  let failed = 0;
  for (const t of tests) {
    try {
      await t.fn();
      console.log("ok   " + t.name);
    } catch (e) {
      failed++;
      console.log("FAIL " + t.name + "\n     " + (e && e.stack ? e.stack : e));
    }
  }
  console.log(`${tests.length - failed}/${tests.length} passed`);
  process.exit(failed ? 1 : 0);
})();
