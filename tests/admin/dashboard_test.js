// Runs the dashboard's script (src/admin/dashboard.html) in node with a stub DOM, canvas and
// fetch, and checks what it derives from /limits and /stats?format=json: the values a chart
// shows, rates from counter deltas, tolerance of missing stats and of a failing server.
// The real-browser test comes with the integration tests; this one needs only node.
// Usage: node dashboard_test.js path/to/dashboard.html
"use strict";
const assert = require("assert");
const fs = require("fs");
const vm = require("vm");

const html = fs.readFileSync(process.argv[2], "utf8");
const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
assert.strictEqual(scripts.length, 1, "exactly one inline script");

function makeElement(tag) {
  const ctx = new Proxy({}, { get: (t, k) => (k in t ? t[k] : () => {}), set: (t, k, v) => ((t[k] = v), true) });
  const el = {
    tag, children: [], style: {}, className: "", textContent: "", width: 0, height: 0,
    clientWidth: 0, clientHeight: 0, removed: false,
    appendChild(c) { this.children.push(c); return c; },
    remove() { this.removed = true; },
    getContext() { return ctx; },
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

const settle = () => new Promise((r) => setImmediate(r));

function limits(admitted, shed) {
  return [{
    listener: "ingress", filter: "vegas", type: "rtt_gradient", limit: 20, in_flight: 3,
    queued: 1, admitted, shed, rtt_noload_ms: 1.5, rtt_smoothed_ms: 2.25, gradient: 0.75,
    p99_ms: null,
    recent_decisions: [{ ms_ago: 1500, at: "2024-05-01T12:34:56.789Z", old_limit: 25,
                         new_limit: 20, reason: "gradient 0.6" }],
  }, {
    listener: "ingress", filter: "fixed", type: "fixed_semaphore", limit: 8, in_flight: 8,
    queued: 5, admitted: 10, shed: 0, rtt_noload_ms: null, rtt_smoothed_ms: null,
    gradient: null, p99_ms: null, recent_decisions: [],
  }];
}

function stats(admitted, shed) {
  const labels = { listener: "ingress", filter: "vegas" };
  const s = (leaf, type, extra) => Object.assign(
      { name: "filter.ingress.vegas." + leaf, kind: "filter", labels, leaf, type, help: "" }, extra);
  return { stats: [
    s("admitted_total", "counter", { value: admitted }),
    s("shed_total", "counter", { value: shed }),
    s("queue_wait_us", "histogram", { unit: "us", count: 10, sum: 1, max: 9000, p50: 100,
                                      p90: 800, p99: 4000, p999: 9000 }),
    { name: "server.memory_rss_bytes", kind: "server", labels: {}, leaf: "memory_rss_bytes",
      type: "gauge", help: "", value: 10485760 },
  ] };
}

const tests = [];
function test(name, fn) { tests.push({ name, fn }); }

test("first poll fetches /limits and /stats?format=json and draws a frame per filter", async () => {
  const { context, calls } = makeContext((path) => {
    if (path === "/limits") return { status: 200, body: limits(100, 4) };
    if (path === "/stats?format=json") return { status: 200, body: stats(100, 4) };
    if (path === "/server_info") return { status: 200, body: { version: "1", state: "LIVE", uptime_s: 3, workers: 2 } };
    return { status: 404, body: null };
  });
  vm.runInContext(scripts[0], context);
  await settle();
  const d = context.window.sluiceDashboard;
  assert.ok(calls.includes("/limits") && calls.includes("/stats?format=json"));
  assert.strictEqual(d.polls, 1);
  assert.strictEqual(d.errors, 0);
  assert.strictEqual(d.frames, 1);
  const v = d.filters["ingress/vegas"].last;
  assert.strictEqual(v.limit, 20);
  assert.strictEqual(v.in_flight, 3);
  assert.strictEqual(v.queued, 1);
  assert.strictEqual(v.queue_wait_p99_ms, 4);
  assert.strictEqual(v.rtt_noload_ms, 1.5);
  assert.strictEqual(v.rtt_smoothed_ms, 2.25);
  assert.strictEqual(v.admitted_per_s, null, "no rate before a second sample");
  assert.strictEqual(d.rssBytes, 10485760);
  assert.strictEqual(d.state, "LIVE");
});

test("rates come from counter deltas between polls", async () => {
  const { context } = makeContext(() => ({ status: 200, body: null }));
  vm.runInContext(scripts[0], context);
  await settle();
  const d = context.window.sluiceDashboard;
  d.ingest(limits(100, 4), stats(100, 4), 10000);
  d.ingest(limits(160, 10), stats(150, 10), 12000);  // stats win over /limits totals
  const v = d.filters["ingress/vegas"].last;
  assert.strictEqual(v.admitted_per_s, 25);
  assert.strictEqual(v.shed_per_s, 3);
  // The fixed filter has no stats: its rates come from /limits totals.
  assert.strictEqual(d.filters["ingress/fixed"].last.admitted_per_s, 0);
  // A counter that went backwards (restart) yields no rate rather than a negative one.
  d.ingest(limits(1, 0), stats(1, 0), 13000);
  assert.strictEqual(d.filters["ingress/vegas"].last.admitted_per_s, null);
});

test("missing stats and null fields chart as gaps", async () => {
  const { context } = makeContext(() => ({ status: 200, body: null }));
  vm.runInContext(scripts[0], context);
  await settle();
  const d = context.window.sluiceDashboard;
  d.ingest(limits(1, 1), { stats: [] }, 1000);
  d.render();
  const f = d.filters["ingress/fixed"].last;
  assert.strictEqual(f.rtt_noload_ms, null);
  assert.strictEqual(f.queue_wait_p99_ms, null);
  assert.strictEqual(f.limit, 8);
  const series = d.filters["ingress/fixed"].series.rtt_smoothed_ms;
  assert.strictEqual(series[series.length - 1], null);
});

test("stats without labels are matched to their filter by dotted name", async () => {
  const { context } = makeContext(() => ({ status: 200, body: null }));
  vm.runInContext(scripts[0], context);
  await settle();
  const d = context.window.sluiceDashboard;
  const bare = (admitted) => ({ stats: [{ name: "filter.ingress.fixed.admitted_total",
                                          kind: "filter", type: "counter", value: admitted }] });
  d.ingest(limits(0, 0), bare(100), 1000);
  d.ingest(limits(0, 0), bare(300), 2000);
  assert.strictEqual(d.filters["ingress/fixed"].last.admitted_per_s, 200);
});

test("history is bounded", async () => {
  const { context } = makeContext(() => ({ status: 200, body: null }));
  vm.runInContext(scripts[0], context);
  await settle();
  const d = context.window.sluiceDashboard;
  for (let i = 0; i < 500; i++) d.ingest(limits(i, 0), stats(i, 0), i * 1000);
  assert.strictEqual(d.filters["ingress/vegas"].series.limit.length, 120);
});

test("filters that disappear are dropped from the model and the page", async () => {
  const { context } = makeContext(() => ({ status: 200, body: null }));
  vm.runInContext(scripts[0], context);
  await settle();
  const d = context.window.sluiceDashboard;
  d.ingest(limits(1, 1), stats(1, 1), 1000);
  d.render();
  const card = d.filters["ingress/fixed"].card;
  d.ingest([limits(1, 1)[0]], stats(1, 1), 2000);
  assert.ok(!("ingress/fixed" in d.filters));
  assert.ok(card.removed);
});

test("a failing server counts errors and still renders", async () => {
  const { context, byId } = makeContext(() => new Error("connection refused"));
  vm.runInContext(scripts[0], context);
  await settle();
  const d = context.window.sluiceDashboard;
  assert.strictEqual(d.errors, 1);
  assert.strictEqual(d.polls, 0);
  assert.strictEqual(d.frames, 1);
  assert.match(byId.status.textContent, /unreachable/);
});

test("an HTTP error status counts as a failed poll", async () => {
  const { context } = makeContext(() => ({ status: 503, body: null }));
  vm.runInContext(scripts[0], context);
  await settle();
  assert.strictEqual(context.window.sluiceDashboard.errors, 1);
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
