// Plays a kino video in a real Chromium and checks what a viewer would see.
// Usage: node playback.mjs PAGE_URL EXPECTED_HEIGHTS (e.g. "360,240")
// Prints one JSON line of findings; exits 1 when a check fails.
import { launch } from "./chromium.mjs";

const [pageURL, heightsArg] = process.argv.slice(2);
const expected = heightsArg.split(",").map(Number);
const browser = await launch();
const result = { ok: false };
try {
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") (result.console ||= []).push(m.text()); });
  await page.goto(pageURL, { waitUntil: "domcontentloaded", timeout: 60000 });
  const wait = (fn, arg, what) => page.waitForFunction(fn, arg, { timeout: 60000 })
    .catch((e) => { throw new Error(what + ": " + e.message.split("\n")[0]); });

  // It plays: currentTime passes 1 s.
  await wait(() => document.getElementById("main").currentTime > 1 || window.kino.errors.length > 0, null, "main video did not play");
  result.errors = await page.evaluate(() => window.kino.errors);
  if (result.errors.length) throw new Error("hls.js errors: " + result.errors.join("; "));
  result.playedTo = await page.evaluate(() => document.getElementById("main").currentTime);

  // The levels hls.js sees are the video's resolutions.
  result.levels = await page.evaluate(() => window.kino.hls.levels.map((l) => l.height));
  const got = [...result.levels].sort((a, b) => b - a);
  if (JSON.stringify(got) !== JSON.stringify(expected)) throw new Error(`levels ${got} want ${expected}`);

  // A forced switch to the lowest level plays that level's frames, from
  // the start again: on a loaded machine the first check may come when
  // the short clip is near its end (or past it, paused).
  const lowest = await page.evaluate(() => {
    const levels = window.kino.hls.levels;
    const i = levels.reduce((lo, l, j) => (l.height < levels[lo].height ? j : lo), 0);
    const video = document.getElementById("main");
    window.kino.hls.currentLevel = i;
    video.currentTime = 0;
    video.play().catch((e) => window.kino.errors.push("play: " + e));
    return { i, height: levels[i].height };
  });
  await wait((l) => window.kino.hls.currentLevel === l.i && document.getElementById("main").currentTime > 0.5 &&
    document.getElementById("main").videoHeight === l.height,
    lowest, "playback stalled after switching to the lowest level");
  result.lowestLevel = await page.evaluate(() => document.getElementById("main").videoHeight);

  // The thumbnail loads as an image; the preview plays in a plain <video>.
  await wait(() => { const i = document.getElementById("thumb"); return i.complete && i.naturalWidth > 0; }, null, "thumbnail did not load");
  result.thumbnail = await page.evaluate(() => [document.getElementById("thumb").naturalWidth, document.getElementById("thumb").naturalHeight]);
  await wait(() => document.getElementById("preview").currentTime > 0.5, null, "preview did not play");
  result.ok = true;
} catch (e) {
  result.error = e.message;
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
