// Plays a kino video in a real Chromium with hls.js choosing the level by
// itself (ABR), then throttles the link with Chromium's own network
// emulation to between the lowest and the top level's BANDWIDTH:
//   - the levels differ enough for a player to choose (the top's
//     BANDWIDTH at least 1.4 times the lowest's);
//   - on the open link hls.js plays the top level;
//   - on the throttled link it steps down to the lowest level by itself
//     and keeps playing it, and once the link opens again it loads the
//     top level's segments again;
//   - no segment it loads (of at least half the 4 s target duration)
//     carries more bits per second than its level's BANDWIDTH.
// Usage: node abr.mjs PAGE_URL
// Prints one JSON line of findings; exits 1 when a check fails.
import { launch } from "./chromium.mjs";

const [pageURL] = process.argv.slice(2);
const browser = await launch();
const result = { ok: false };
let step = "load";
let page;
try {
  page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") (result.console ||= []).push(m.text()); });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  const throttle = (bitsPerSecond) => cdp.send("Network.emulateNetworkConditions",
    { offline: false, latency: 0, uploadThroughput: -1, downloadThroughput: bitsPerSecond > 0 ? bitsPerSecond / 8 : -1 });
  await page.goto(pageURL, { waitUntil: "domcontentloaded", timeout: 60000 });
  // Each wait ends early when hls.js fails or the video ends (it is
  // longer than the test plays: window.kino.over), and either one fails
  // the test, saying so.
  const wait = async (fn, arg, what) => {
    await page.waitForFunction(fn, arg, { timeout: 30000, polling: 200 })
      .catch((e) => { throw new Error(what + ": " + e.message.split("\n")[0]); });
    const state = await page.evaluate(() => ({ errors: window.kino.errors, ended: document.getElementById("main").ended }));
    if (state.errors.length) throw new Error(what + ": hls.js errors: " + state.errors.join("; "));
    if (state.ended) throw new Error(what + ": the video ended first");
  };

  step = "levels";
  await wait(() => window.kino.hls.levels.length > 0, null, "no levels");
  result.levels = await page.evaluate(() => window.kino.hls.levels.map((l) => ({ height: l.height, bandwidth: l.bitrate, average: l.averageBitrate })));
  const byRate = result.levels.map((l, i) => ({ ...l, i })).sort((a, b) => a.bandwidth - b.bandwidth);
  const low = byRate[0], top = byRate[byRate.length - 1];
  if (result.levels.length < 2) throw new Error("one level: nothing to switch between");
  if (top.bandwidth < 1.4 * low.bandwidth) throw new Error(`top level ${top.bandwidth} bit/s is not 1.4 times the lowest's ${low.bandwidth}`);

  step = "open link";
  await wait((l) => window.kino.over() || (window.kino.hls.autoLevelEnabled && window.kino.hls.currentLevel === l.i &&
    document.getElementById("main").currentTime > 0.5), top, "hls.js did not play the top level on an open link");

  step = "throttled";
  result.throttle = Math.round(Math.sqrt(low.bandwidth * top.bandwidth));
  await throttle(result.throttle);
  const loaded = await page.evaluate(() => window.kino.frags.length);
  await wait((a) => window.kino.over() || (window.kino.hls.autoLevelEnabled && window.kino.hls.currentLevel === a.low.i &&
    window.kino.frags.slice(a.loaded).some((f) => f.level === a.low.i) &&
    document.getElementById("main").videoHeight === a.low.height),
    { low, loaded }, "hls.js did not step down to the lowest level on a throttled link");
  const at = await page.evaluate(() => document.getElementById("main").currentTime);
  await wait((a) => window.kino.over() || Math.abs(document.getElementById("main").currentTime - a) > 1, at,
    "playback stalled on the lowest level");

  step = "open again";
  await throttle(0);
  const opened = await page.evaluate(() => window.kino.frags.length);
  await wait((a) => window.kino.over() || (window.kino.hls.autoLevelEnabled &&
    window.kino.frags.slice(a.opened).some((f) => f.level === a.top.i)), { top, opened },
    "hls.js did not step up to the top level once the link opened");

  step = "segments";
  const { frags, switches } = await page.evaluate(() => ({ frags: window.kino.frags, switches: window.kino.switches }));
  result.switches = switches.map((s) => result.levels[s.level].height);
  result.segments = frags.length;
  result.worst = 0;
  for (const f of frags) {
    if (f.duration < 2) continue;
    const ratio = (f.bytes * 8) / f.duration / result.levels[f.level].bandwidth;
    result.worst = Math.max(result.worst, Math.round(ratio * 1000) / 1000);
    if (ratio > 1) throw new Error(`segment ${f.sn} of ${result.levels[f.level].height}p carries ${Math.round((f.bytes * 8) / f.duration)} bit/s, over its BANDWIDTH ${result.levels[f.level].bandwidth}`);
  }
  result.ok = true;
} catch (e) {
  result.step = step;
  result.error = e.message;
  result.state = await page?.evaluate(() => ({ errors: window.kino.errors, level: window.kino.hls.currentLevel,
    auto: window.kino.hls.autoLevelEnabled, estimate: Math.round(window.kino.hls.bandwidthEstimate),
    time: document.getElementById("main").currentTime, frags: window.kino.frags.map((f) => [f.level, f.sn]),
    switches: window.kino.switches })).catch(() => undefined);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
