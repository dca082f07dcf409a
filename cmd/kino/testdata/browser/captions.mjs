// Shows a video's text tracks in hls.js, shaka-player and video.js in a
// real Chromium, each on captions.html (another origin than kino's /cdn):
// every player must list every track label, and give the browser the cues
// of each track (their times and text), which are reported for the test
// to compare with the tracks' WebVTT.
// Usage: node captions.mjs SITE_URL PLAYLIST_URL LABEL...
// Prints one JSON line: {ok, players: {name: {labels, cues: {label: [...]}}}}.
import { launch } from "./chromium.mjs";

const [site, playlist, ...labels] = process.argv.slice(2);
const browser = await launch();
const result = { ok: false, players: {} };
try {
  for (const name of ["hls.js", "shaka", "video.js"]) {
    result.step = name;
    const page = await browser.newPage();
    const found = { labels: [], cues: {}, errors: [] };
    result.players[name] = found;
    page.on("pageerror", (e) => found.errors.push(e.message));
    await page.goto(site + "/?" + new URLSearchParams({ player: name, playlist }), { timeout: 60000 });
    found.labels = await page.evaluate(() => window.kinoLabels());
    for (const label of labels) {
      result.step = name + ": " + label;
      found.cues[label] = await page.evaluate((l) => window.kinoCues(l), label);
    }
    found.errors.push(...await page.evaluate(() => window.kino.errors));
    await page.close();
  }
  delete result.step;
  result.ok = true;
} catch (e) {
  result.error = e.message.split("\n")[0];
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
