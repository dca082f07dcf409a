// Plays a kino video while it is still PROCESSING, in a real Chromium
// with hls.js, and on to its end once it completed.
// Usage: node progressive.mjs PAGE_URL
// When a frame has played it GETs /played on the page's origin (the test
// records the video's status via the API at that moment), then waits for
// the "ended" event. Prints one JSON line of findings; exits 1 when a check
// fails.
import { launch } from "./chromium.mjs";

const [pageURL] = process.argv.slice(2);
const browser = await launch();
const result = { ok: false };
try {
  const page = await browser.newPage();
  // kino serves the playlists of a video still processing with
  // Cache-Control: no-cache; the test does not depend on it.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  page.on("console", (m) => { if (m.type() === "error") (result.console ||= []).push(m.text()); });
  await page.goto(pageURL, { waitUntil: "domcontentloaded", timeout: 60000 });
  const wait = (fn, what, timeout) => page.waitForFunction(fn, null, { timeout })
    .catch((e) => { throw new Error(what + ": " + e.message.split("\n")[0]); });

  await wait(() => document.getElementById("main").currentTime > 0.2 || window.kino.errors.length > 0, "did not play while processing", 120000);
  result.playedAt = await page.evaluate(() => document.getElementById("main").currentTime);
  result.firstTime = await page.evaluate(() => window.kino.firstTime);
  result.live = await page.evaluate(() => { const d = window.kino.hls.latestLevelDetails; return d ? d.live : null; });
  result.status = await page.evaluate(() => fetch("/played").then((r) => r.text()));
  await wait(() => window.kino.ended || window.kino.errors.length > 0, "did not play to its end", 180000);
  result.errors = await page.evaluate(() => window.kino.errors);
  if (result.errors.length) throw new Error("hls.js errors: " + result.errors.join("; "));
  result.endedAt = await page.evaluate(() => document.getElementById("main").currentTime);
  result.duration = await page.evaluate(() => document.getElementById("main").duration);
  result.stalls = await page.evaluate(() => window.kino.stalls);
  result.ok = true;
} catch (e) {
  result.error = e.message;
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
