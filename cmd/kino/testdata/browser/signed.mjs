// Plays a signed kino video with hls.js in a real Chromium, or sees it
// refused. Usage: node signed.mjs PAGE_URL play|refused
// play: the video plays past 1 s with no hls.js error, and the thumbnail
// loads. refused: hls.js reports a fatal network error and nothing plays.
// Prints one JSON line of findings (with every /cdn response: path, whether
// it carried a token, status); exits 1 when a check fails.
import { launch } from "./chromium.mjs";

const [pageURL, want] = process.argv.slice(2);
const browser = await launch();
const result = { ok: false, cdn: [] };
try {
  const page = await browser.newPage();
  page.on("response", (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith("/cdn/")) result.cdn.push([u.pathname.split("/").slice(3).join("/"), u.searchParams.has("token"), r.status()]);
  });
  await page.goto(pageURL, { waitUntil: "domcontentloaded", timeout: 60000 });
  const wait = (fn, what) => page.waitForFunction(fn, null, { timeout: 60000 })
    .catch((e) => { throw new Error(what + ": " + e.message.split("\n")[0]); });
  if (want === "play") {
    await wait(() => document.getElementById("main").currentTime > 1 || window.kino.errors.length > 0, "did not play");
    result.errors = await page.evaluate(() => window.kino.errors);
    if (result.errors.length) throw new Error("hls.js errors: " + result.errors.join("; "));
    await wait(() => { const i = document.getElementById("thumb"); return i.complete && i.naturalWidth > 0; }, "thumbnail did not load");
  } else {
    await wait(() => window.kino.errors.some((e) => e.startsWith("networkError")), "hls.js reported no network error");
    result.errors = await page.evaluate(() => window.kino.errors);
  }
  result.playedTo = await page.evaluate(() => document.getElementById("main").currentTime);
  if (want !== "play" && result.playedTo > 0) throw new Error("a refused video played");
  result.ok = true;
} catch (e) {
  result.error = e.message;
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
