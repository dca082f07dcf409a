// Plays a video in hls.js, shaka-player and video.js in a real Chromium,
// each on players.html (another origin than kino's /cdn): every player
// must list every text track label and give the browser the cues of each
// track (their times and text), then play every rung it lists, held on it
// from the start; what each showed is reported for the test to compare
// with the tracks' WebVTT and the video's resolutions.
// Usage: node players.mjs SITE_URL PLAYLIST_URL LABEL...
// Prints one JSON line: {ok, players: {name: {labels, cues: {label: [...]},
// rungs: [{rung, first, height, playedTo, frames}]}}}: first is the height
// of the first picture shown, height the one shown past 0.5 s.
import { launch } from "./chromium.mjs";

const [site, playlist, ...labels] = process.argv.slice(2);
const browser = await launch();
const result = { ok: false, players: {} };
try {
  for (const name of ["hls.js", "shaka", "video.js"]) {
    result.step = name;
    const page = await browser.newPage();
    const found = { labels: [], cues: {}, rungs: [], errors: [] };
    result.players[name] = found;
    page.on("pageerror", (e) => found.errors.push(e.message));
    await page.goto(site + "/?" + new URLSearchParams({ player: name, playlist }), { timeout: 60000 });
    found.labels = await page.evaluate(() => window.kinoLabels());
    for (const label of labels) {
      result.step = name + ": " + label;
      found.cues[label] = await page.evaluate((l) => window.kinoCues(l), label);
    }
    // Then every rung, each on a page of its own that holds the player on
    // it from the first segment.
    for (const h of await page.evaluate(() => window.kinoHeights())) {
      result.step = name + ": " + h + "p";
      const rp = await browser.newPage();
      rp.on("pageerror", (e) => found.errors.push(h + "p: " + e.message));
      await rp.goto(site + "/?" + new URLSearchParams({ player: name, playlist, rung: h }), { timeout: 60000 });
      found.rungs.push({ rung: h, ...await rp.evaluate(() => window.kinoRungShown()) });
      found.errors.push(...(await rp.evaluate(() => window.kino.errors)).map((e) => h + "p: " + e));
      await rp.close();
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
