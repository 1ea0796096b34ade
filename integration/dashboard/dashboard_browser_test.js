// Opens sluice's admin dashboard (src/admin/dashboard.html, served at "/") in Debian's headless
// chromium, driven by playwright-core, against a sluice that is under load, and checks what a
// person would: the page loads without console errors and without any request leaving
// 127.0.0.1; its first frame already draws the server's history (--min-points samples per
// chart, not one poll's worth); every expected filter has the charts of its type; later polls
// fetch only newer samples (/history?since=); the charts redraw every second
// (window.sluiceDashboard.frames grows), the plotted values move, and the canvas pixels differ
// between two screenshots taken seconds apart. Screenshots are saved in --out. With --queue and
// --consumer (queue mode) it checks the same of each queue's and consumer's card: its charts,
// drawn from the history in the first frame, moving under load, and /queues' live totals.
//
// Usage: node dashboard_browser_test.js --url http://127.0.0.1:PORT/ --out DIR
//            --filter LISTENER/FILTER [--filter ...] [--queue NAME ...] [--consumer NAME ...]
//            [--seconds 4] [--min-points N]
// Environment: CHROMIUM_BIN (default /usr/bin/chromium).
// Prints one JSON object (what it measured) on stdout; exits 0 when every check passed, 1 with
// the failed checks on stderr, 2 when it could not run at all (no chromium, no playwright-core).
"use strict";

const fs = require("fs");
const path = require("path");
const zlib = require("zlib");

function parseArgs(argv) {
  const args = { filters: [], queues: [], consumers: [], seconds: 4, minPoints: 2 };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error("missing value for " + key);
    if (key === "--url") args.url = value;
    else if (key === "--out") args.out = value;
    else if (key === "--filter") args.filters.push(value);
    else if (key === "--queue") args.queues.push(value);
    else if (key === "--consumer") args.consumers.push(value);
    else if (key === "--seconds") args.seconds = Number(value);
    else if (key === "--min-points") args.minPoints = Number(value);
    else throw new Error("unknown argument " + key);
    i++;
  }
  if (!args.url || !args.out || !(args.filters.length + args.queues.length)) {
    throw new Error("usage: --url URL --out DIR --filter LISTENER/FILTER [--queue NAME] " +
                    "[--consumer NAME] [--seconds N]");
  }
  return args;
}

// Fails the run before anything starts, with what to install.
function cannotRun(message) {
  process.stderr.write("dashboard browser test cannot run: " + message + "\n");
  process.exit(2);
}

function loadPlaywright() {
  try {
    return require("playwright-core");
  } catch (e) {
    return cannotRun("the npm package playwright-core is not installed in " + __dirname +
                     " (run `npm ci` there; scripts/test.sh does): " + e.message);
  }
}

// ---- PNG decoding: enough for chromium's screenshots (8-bit RGB/RGBA, not interlaced) -------

function paeth(a, b, c) {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

function decodePng(buf) {
  const signature = "89504e470d0a1a0a";
  if (buf.subarray(0, 8).toString("hex") !== signature) throw new Error("not a PNG");
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat = [];
  for (let pos = 8; pos < buf.length;) {
    const len = buf.readUInt32BE(pos);
    const type = buf.toString("latin1", pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8];
      const color = data[9];
      const interlace = data[12];
      if (depth !== 8 || (color !== 2 && color !== 6) || interlace !== 0) {
        throw new Error(`unsupported PNG: depth ${depth} color ${color} interlace ${interlace}`);
      }
      channels = color === 6 ? 4 : 3;
    } else if (type === "IDAT") {
      idat.push(data);
    } else if (type === "IEND") {
      break;
    }
    pos += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = pixels.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? pixels.subarray((y - 1) * stride, y * stride) : Buffer.alloc(stride);
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? row[x - channels] : 0;
      const b = prev[x];
      const c = x >= channels ? prev[x - channels] : 0;
      let v = src[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) v += paeth(a, b, c);
      else if (filter !== 0) throw new Error("bad PNG filter " + filter);
      row[x] = v & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

// Pixels whose colour differs between two same-sized images, and the pixels that are not
// background (not near-white) in the second: a blank canvas "differs" from nothing.
function comparePngs(before, after) {
  const a = decodePng(before);
  const b = decodePng(after);
  if (a.width !== b.width || a.height !== b.height) {
    return { changed: a.width * a.height, inked: 0, size: `${a.width}x${a.height}` };
  }
  let changed = 0;
  let inked = 0;
  for (let i = 0; i < a.width * a.height; i++) {
    const pa = i * a.channels;
    const pb = i * b.channels;
    if (a.pixels[pa] !== b.pixels[pb] || a.pixels[pa + 1] !== b.pixels[pb + 1] ||
        a.pixels[pa + 2] !== b.pixels[pb + 2]) {
      changed++;
    }
    if (b.pixels[pb] + b.pixels[pb + 1] + b.pixels[pb + 2] < 3 * 200) inked++;
  }
  return { changed, inked, size: `${b.width}x${b.height}` };
}

// ---- the test ----------------------------------------------------------------------------------

// The charts each filter type gets (src/admin/dashboard.html), and the two that move under any
// load: the first (concurrency or queue) and admitted / shed.
const CHARTS = {
  queue_wait_budget: ["Queued", "Admitted / shed (/s)", "Queue wait p99, each second (ms)"],
  rtt_gradient: ["Concurrency", "RTT no-load vs smoothed (ms)", "Gradient (no-load / smoothed)",
                 "Queueing (share of slow samples)", "Admitted / shed (/s)"],
  fixed_semaphore: ["Concurrency", "Admitted / shed (/s)"],
  aimd: ["Concurrency", "p99 vs SLO (ms)", "Admitted / shed (/s)"],
};
const LIMITERS = new Set(["rtt_gradient", "fixed_semaphore", "aimd"]);
// Queue mode's cards: a queue's charts (its outcomes chart is index 3) and a consumer's.
const QUEUE_CHARTS = ["Backlog", "Estimated wait (ms)", "Drain rate (/s)", "Outcomes by reason (/s)",
                      "End-to-end p50 / p99, each second (ms)"];
const CONSUMER_CHARTS = ["Window vs in flight", "Completions (/s)"];
const RSS_PATH = "/stats?format=json&filter=%5Eserver%5C.memory_rss_bytes%24";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const chromiumBin = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
  if (!fs.existsSync(chromiumBin)) {
    cannotRun(`no chromium at ${chromiumBin}: install Debian's package chromium ` +
              "(scripts/setup.sh test does) or set CHROMIUM_BIN");
  }
  const { chromium } = loadPlaywright();
  fs.mkdirSync(args.out, { recursive: true });
  const failures = [];
  const check = (ok, what) => {
    if (!ok) failures.push(what);
    return ok;
  };
  const report = { url: args.url, chromium: chromiumBin };

  // A fresh profile each run, in the test's temp dir; the flags keep chromium off the network
  // (this machine has none, and a test must not depend on it).
  const profile = fs.mkdtempSync(path.join(args.out, "chromium-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumBin,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 900 },
    timeout: 30000,
  });
  try {
    report.browserVersion = context.browser() ? context.browser().version() : null;
    const page = context.pages()[0] || (await context.newPage());

    // Every request the page makes: only 127.0.0.1 may be reached; anything else is aborted and
    // fails the test.
    const requests = [];
    const external = [];
    const badResponses = [];
    await context.route("**/*", (route) => {
      const url = new URL(route.request().url());
      requests.push(url.pathname + url.search);
      if (url.hostname !== "127.0.0.1") {
        external.push(route.request().url());
        return route.abort("blockedbyclient");
      }
      return route.continue();
    });
    page.on("response", (res) => {
      if (res.status() >= 400) badResponses.push(`${res.status()} ${res.url()}`);
    });
    const consoleErrors = [];
    page.on("console", (msg) => {
      if (msg.type() === "error" || msg.type() === "warning") {
        consoleErrors.push(`${msg.type()}: ${msg.text()}`);
      }
    });
    page.on("pageerror", (err) => consoleErrors.push("pageerror: " + err.message));
    page.on("requestfailed", (req) => {
      consoleErrors.push(`requestfailed: ${req.url()} ${req.failure() && req.failure().errorText}`);
    });

    const response = await page.goto(args.url, { waitUntil: "load", timeout: 15000 });
    check(response && response.status() === 200, `GET ${args.url} answered ${response &&
                                                  response.status()}`);
    report.title = await page.title();
    check(report.title === "sluice admin", `page title is ${JSON.stringify(report.title)}`);

    // The first poll loads /history: the first frame already has the last seconds of every
    // series, drawn. Read at once, before more than a poll or two could have added points.
    await page.waitForFunction(() => window.sluiceDashboard && window.sluiceDashboard.polls >= 1 &&
                                     window.sluiceDashboard.frames >= 1, null, { timeout: 10000 });
    const first = await page.evaluate(([keys, queues, consumers]) => {
      const m = window.sluiceDashboard;
      const charts = (table, names) => Object.fromEntries(names.map(
          (k) => [k, table[k] ? table[k].charts : null]));
      return { polls: m.polls, frames: m.frames, samples: m.t.length,
               charts: charts(m.filters, keys), queues: charts(m.queues, queues),
               consumers: charts(m.consumers, consumers) };
    }, [args.filters, args.queues, args.consumers]);
    report.firstFrame = first;
    check(first.samples >= args.minPoints + first.polls - 1,
          `the first frame had ${first.samples} samples after ${first.polls} poll(s): ` +
              `/history should have given at least ${args.minPoints}`);
    for (const key of args.filters) {
      const charts = first.charts[key];
      if (!check(charts, `the first frame has no filter ${key}`)) continue;
      const points = Object.fromEntries(charts.map((c) => [c.title, c.points]));
      const lead = charts[0];
      check(lead && lead.points >= args.minPoints,
            `${key}: the first frame drew ${lead && lead.points} points in ${lead && lead.title}` +
                ` (want >= ${args.minPoints}): ${JSON.stringify(points)}`);
      const rates = charts.find((c) => c.title === "Admitted / shed");
      check(rates && rates.points >= args.minPoints - 1,
            `${key}: the first frame drew ${rates && rates.points} admitted/shed points`);
    }
    // Queue mode: the history's seconds in the first frame too (a gauge chart and a rate chart).
    for (const [kind, names, gauge, rate] of [["queue", args.queues, "Backlog", "Outcomes by reason"],
                                              ["consumer", args.consumers, "Window vs in flight",
                                               "Completions"]]) {
      for (const name of names) {
        const charts = first[kind === "queue" ? "queues" : "consumers"][name];
        if (!check(charts, `the first frame has no ${kind} ${name}`)) continue;
        const g = charts.find((c) => c.title === gauge);
        const r = charts.find((c) => c.title === rate);
        check(g && g.points >= args.minPoints,
              `${kind} ${name}: the first frame drew ${g && g.points} points in ${gauge}`);
        check(r && r.points >= args.minPoints - 1,
              `${kind} ${name}: the first frame drew ${r && r.points} points in ${rate}`);
      }
    }

    // Two polls: every filter has its card, and rates (which need two samples) have values.
    await page.waitForFunction(() => window.sluiceDashboard && window.sluiceDashboard.polls >= 2,
                               null, { timeout: 10000 });
    const types = await page.evaluate((keys) => Object.fromEntries(keys.map(
        (k) => [k, window.sluiceDashboard.filters[k] && window.sluiceDashboard.filters[k].type])),
                                      args.filters);
    const cards = await page.$$eval("section.card", (sections) => sections.map((s) => ({
      title: s.querySelector("h2").textContent,
      canvases: [...s.querySelectorAll("canvas")].map((c) => [c.width, c.height]),
      chartTitles: [...s.querySelectorAll(".chart .title")].map((t) => t.textContent),
    })));
    report.cards = cards;
    check(cards.some((c) => /^listener /.test(c.title)), "no listener card: " +
                                                           JSON.stringify(cards.map((c) => c.title)));
    const queueCards = args.queues.map((n) => ["queue " + n, QUEUE_CHARTS])
        .concat(args.consumers.map((n) => ["consumer " + n, CONSUMER_CHARTS]));
    for (const [title, want] of queueCards) {
      const card = cards.find((c) => c.title === title);
      if (!check(card, `no card "${title}": ` + JSON.stringify(cards.map((c) => c.title)))) continue;
      check(card.canvases.length === want.length &&
                card.canvases.every(([w, h]) => w > 100 && h > 50),
            `${title}: expected ${want.length} drawn canvases, got ${JSON.stringify(card.canvases)}`);
      check(JSON.stringify(card.chartTitles) === JSON.stringify(want),
            `${title}: chart titles ${JSON.stringify(card.chartTitles)}, want ${JSON.stringify(want)}`);
    }
    const throughputIndex = {};
    for (const key of args.filters) {
      const card = cards.find((c) => c.title === key);
      if (!check(card, `no chart card for filter ${key}`)) continue;
      const want = CHARTS[types[key]];
      if (!check(want, `${key}: unexpected type ${types[key]}`)) continue;
      throughputIndex[key] = want.indexOf("Admitted / shed (/s)");
      check(card.canvases.length === want.length &&
                card.canvases.every(([w, h]) => w > 100 && h > 50),
            `${key}: expected ${want.length} drawn canvases, got ${JSON.stringify(card.canvases)}`);
      check(JSON.stringify(card.chartTitles) === JSON.stringify(want),
            `${key}: chart titles ${JSON.stringify(card.chartTitles)}, want ${JSON.stringify(want)}`);
    }

    // Two screenshots of every chart canvas, args.seconds apart, while the model keeps updating.
    const shoot = async (tag) => {
      const shots = {};
      for (const key of args.filters.concat(queueCards.map(([title]) => title))) {
        const heading = page.getByRole("heading", { name: key, exact: true });
        const canvases = page.locator("section.card", { has: heading }).locator("canvas");
        const n = await canvases.count();
        for (let i = 0; i < n; i++) shots[`${key}#${i}`] = await canvases.nth(i).screenshot();
      }
      await page.screenshot({ path: path.join(args.out, `dashboard-${tag}.png`), fullPage: true });
      return shots;
    };
    const model = () => page.evaluate(([keys, queueNames, consumerNames]) => {
      const m = window.sluiceDashboard;
      const filters = {};
      for (const k of keys) {
        const f = m.filters[k];
        filters[k] = f ? { last: f.last, series: f.series } : null;
      }
      const queues = {};
      for (const k of queueNames) {
        const q = m.queues[k];
        queues[k] = q ? { last: q.last, series: q.series, outcomes: q.outcomes, live: q.live } : null;
      }
      const consumers = {};
      for (const k of consumerNames) {
        const c = m.consumers[k];
        consumers[k] = c ? { last: c.last, series: c.series, live: c.live } : null;
      }
      return { frames: m.frames, polls: m.polls, errors: m.errors, lastError: m.lastError,
               state: m.state, filters, queues, consumers };
    }, [args.filters, args.queues, args.consumers]);

    const before = await model();
    const shotsBefore = await shoot("before");
    await page.waitForTimeout(args.seconds * 1000);
    const after = await model();
    const shotsAfter = await shoot("after");

    report.frames = [before.frames, after.frames];
    report.polls = [before.polls, after.polls];
    report.errors = after.errors;
    check(after.frames >= before.frames + Math.floor(args.seconds) - 1,
          `frames went from ${before.frames} to ${after.frames} in ${args.seconds}s ` +
              "(one a second)");
    check(after.errors === 0, `the page counted ${after.errors} failed polls: ${after.lastError}`);
    check(after.state === "LIVE", `header state is ${after.state}`);

    report.filters = {};
    for (const key of args.filters) {
      const f = after.filters[key];
      if (!check(f, `the model has no filter ${key}`)) continue;
      const s = f.series;
      // The last few points, which cover the seconds this script watched.
      const recent = (name) => s[name].slice(-Math.max(2, Math.floor(args.seconds)));
      const distinct = (name) => new Set(recent(name).filter((v) => v !== null)).size;
      report.filters[key] = { last: f.last, points: s.limit.length,
                              distinct: Object.fromEntries(Object.keys(s).map(
                                  (n) => [n, distinct(n)])) };
      check(f.last.admitted_per_s > 0, `${key}: admitted/s is ${f.last.admitted_per_s}`);
      if (LIMITERS.has(f.last.type)) {  // it has a limit to plot
        check(typeof f.last.limit === "number" && f.last.limit >= 1,
              `${key}: limit ${f.last.limit}`);
      }
      check(typeof f.last.in_flight === "number", `${key}: in-flight ${f.last.in_flight}`);
      check(recent("admitted_per_s").every((v) => v !== null && v > 0),
            `${key}: admitted/s not plotted every second: ` +
                JSON.stringify(recent("admitted_per_s")));
      const moving = ["limit", "in_flight", "admitted_per_s", "shed_per_s", "rtt_smoothed_ms",
                      "queue_wait_p99_ms"].filter((n) => distinct(n) >= 2);
      check(moving.length >= 2, `${key}: plotted values did not move: ${JSON.stringify(
                                    report.filters[key].distinct)}`);
    }

    // Queue mode: /queues' live totals, and each second's values plotted and moving.
    const recentOf = (arr) => arr.slice(-Math.max(2, Math.floor(args.seconds)));
    const distinctOf = (arr) => new Set(recentOf(arr).filter((v) => v !== null)).size;
    report.queues = {};
    for (const name of args.queues) {
      const q = after.queues[name];
      if (!check(q, `the model has no queue ${name}`)) continue;
      report.queues[name] = { last: q.last, live: q.live && { requests: q.live.requests,
                                                              backlog: q.live.backlog,
                                                              e2e_ms_recent: q.live.e2e_ms_recent,
                                                              redis_info: q.live.redis_info } };
      check(q.live && q.live.requests && q.live.requests.ok > 0,
            `queue ${name}: /queues counts no ok calls: ${JSON.stringify(q.live)}`);
      check(q.live && q.live.e2e_ms_recent && q.live.e2e_ms_recent.count > 0,
            `queue ${name}: no recent end-to-end percentiles: ${JSON.stringify(q.live)}`);
      check(recentOf(q.outcomes.ok).every((v) => v !== null && v > 0),
            `queue ${name}: ok/s not plotted every second: ${JSON.stringify(recentOf(q.outcomes.ok))}`);
      check(typeof q.last.backlog === "number", `queue ${name}: backlog ${q.last.backlog}`);
      const moving = ["backlog", "estimated_wait_ms", "e2e_p50_ms", "e2e_p99_ms"].filter(
          (n) => distinctOf(q.series[n]) >= 2).concat(distinctOf(q.outcomes.ok) >= 2 ? ["ok"] : []);
      check(moving.length >= 2, `queue ${name}: plotted values did not move: ${JSON.stringify(moving)}`);
    }
    report.consumers = {};
    for (const name of args.consumers) {
      const c = after.consumers[name];
      if (!check(c, `the model has no consumer ${name}`)) continue;
      report.consumers[name] = { last: c.last,
                                 live: c.live && { completed_by_status: c.live.completed_by_status,
                                                   limit: c.live.limit, adjustments: c.live.adjustments } };
      check(c.live && c.live.completed_by_status && c.live.completed_by_status.OK > 0,
            `consumer ${name}: /queues counts no OK completions: ${JSON.stringify(c.live)}`);
      check(typeof c.last.limit === "number" && c.last.limit >= 1, `consumer ${name}: window ${c.last.limit}`);
      check(recentOf(c.series.completed_ok_per_s).every((v) => v !== null && v > 0),
            `consumer ${name}: completions/s not plotted every second: ` +
                JSON.stringify(recentOf(c.series.completed_ok_per_s)));
    }

    // Each new second adds a few pixels of line per series, and an axis rescale moves
    // everything; the first chart (concurrency or queue) and admitted / shed always have moving
    // data under load. A blank canvas is not "changed": it must also have ink.
    report.canvases = {};
    for (const [name, png] of Object.entries(shotsAfter)) {
      report.canvases[name] = shotsBefore[name] ? comparePngs(shotsBefore[name], png)
                                                : { changed: 0, inked: 0, size: "missing" };
    }
    const moved = args.filters.map((key) => [key, [0, throughputIndex[key]]])
        .concat(args.queues.map((n) => ["queue " + n, [0, 3]]),
                args.consumers.map((n) => ["consumer " + n, [0, 1]]));
    for (const [key, charts] of moved) {
      for (const i of charts) {
        const diff = report.canvases[`${key}#${i}`];
        check(diff && diff.changed > 20 && diff.inked > 100,
              `${key}: chart #${i} did not change between the screenshots: ` +
                  JSON.stringify(diff));
      }
    }

    report.requests = [...new Set(requests)].sort();
    check(external.length === 0, "requests left 127.0.0.1: " + JSON.stringify(external));
    const allowed = ["/", "/history", "/limits", "/config_dump", "/server_info", RSS_PATH]
        .concat(args.queues.length || args.consumers.length ? ["/queues"] : []);
    check(requests.every((r) => allowed.includes(r) || /^\/history\?since=\d+$/.test(r)),
          "unexpected requests: " + JSON.stringify(report.requests));
    // /queues only in queue mode, and then every second.
    const queuePolls = requests.filter((r) => r === "/queues").length;
    if (args.queues.length) {
      check(queuePolls >= Math.floor(args.seconds), `/queues was asked ${queuePolls} times`);
    }
    // The whole history once, then only what is new.
    check(requests.filter((r) => r === "/history").length === 1,
          "/history (the full history) should be fetched once: " + JSON.stringify(requests));
    check(requests.some((r) => r.startsWith("/history?since=")),
          "no incremental /history?since= poll: " + JSON.stringify(report.requests));
    check(badResponses.length === 0, "error responses: " + JSON.stringify(badResponses));
    check(consoleErrors.length === 0, "console errors: " + JSON.stringify(consoleErrors));
    report.screenshots = ["dashboard-before.png", "dashboard-after.png"].map(
        (f) => path.join(args.out, f));
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  report.failures = failures;
  process.stdout.write(JSON.stringify(report, null, 2) + "\n");
  if (failures.length) {
    process.stderr.write("dashboard browser test FAILED:\n  " + failures.join("\n  ") + "\n");
    process.exit(1);
  }
}

main().catch((e) => {
  process.stderr.write("dashboard browser test FAILED: " + (e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
