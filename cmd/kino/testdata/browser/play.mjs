// Plays a video on kino's own /play page in a real Chromium: hls.js comes
// from kino (/assets/hls.min.js), the page's CSP must let it play, and no
// request may leave localhost (each one is checked, and any other is
// aborted and reported).
// With an /embed URL, the page also shows the storyboard's thumbnail over
// the seek bar while the pointer moves along it.
// With LABELs, the page's captions menu must offer each of them, and
// choosing the first must show its cues.
// Usage: node play.mjs PAGE_URL [LABEL...]
// Prints one JSON line of findings; exits 1 when a check fails.
import { launch } from "./chromium.mjs";

const [pageURL, ...labels] = process.argv.slice(2);
const browser = await launch();
const result = { ok: false, requests: 0, elsewhere: [], console: [] };
const local = (u) => { const h = new URL(u).hostname; return h === "localhost" || h === "127.0.0.1" || h === "[::1]"; };
try {
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") result.console.push(m.text()); });
  await page.route("**/*", (route) => {
    const u = route.request().url();
    result.requests++;
    if (u.startsWith("blob:") || u.startsWith("data:") || local(u)) return route.continue();
    result.elsewhere.push(u);
    return route.abort();
  });
  await page.addInitScript(() => {
    window.kinoViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => window.kinoViolations.push(e.violatedDirective + " " + e.blockedURI));
  });
  page.setDefaultTimeout(60000);
  const resp = await page.goto(pageURL, { timeout: 60000 });
  result.csp = resp.headers()["content-security-policy"] || "";
  // The page does not autoplay; a viewer presses play.
  await page.evaluate(() => { const v = document.getElementById("player"); v.muted = true; v.play().catch(() => {}); });
  await page.waitForFunction(() => { const v = document.getElementById("player"); return v && v.currentTime > 1; }, null, { timeout: 60000 })
    .catch((e) => { throw new Error("the /play video did not play: " + e.message.split("\n")[0]); });
  result.playedTo = await page.evaluate(() => document.getElementById("player").currentTime);
  result.hlsjs = await page.evaluate(() => !!window.kinoPlayer);
  result.violations = await page.evaluate(() => window.kinoViolations);
  if (!result.csp.includes("script-src 'self'")) throw new Error("no strict CSP on /play");
  if (result.elsewhere.length) throw new Error("requests left localhost: " + result.elsewhere.join(" "));
  const refused = result.console.filter((m) => m.includes("Content Security Policy"));
  if (refused.length) throw new Error("CSP refusals: " + refused.join("; "));
  if (result.violations.length) throw new Error("CSP violations: " + result.violations.join("; "));
  if (!result.hlsjs) throw new Error("hls.js did not load from kino");
  if (labels.length) {
    await page.waitForFunction((n) => window.kinoCaptions && window.kinoCaptions.options.length > n, labels.length)
      .catch((e) => { throw new Error("no captions menu: " + e.message.split("\n")[0]); });
    result.menu = await page.evaluate(() => Array.from(window.kinoCaptions.options).map((o) => o.textContent));
    for (const l of labels) if (!result.menu.includes(l)) throw new Error("the captions menu lacks " + l + ": " + result.menu.join(", "));
    await page.selectOption("#captions", { label: labels[0] });
    await page.waitForFunction((l) => Array.from(document.getElementById("player").textTracks)
      .some((t) => t.label === l && t.mode === "showing" && t.cues && t.cues.length > 0), labels[0])
      .catch((e) => { throw new Error("choosing " + labels[0] + " showed no cues: " + e.message.split("\n")[0]); });
  }
  if (pageURL.includes("/embed/")) {
    const box = await page.evaluate(() => { const r = document.getElementById("player").getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; });
    // The storyboard track loads beside the video.
    await page.waitForFunction(() => { const v = document.getElementById("player"); return v && v.duration > 0 && window.kinoStoryboard.length > 0; });
    await page.mouse.move(box.x + box.w / 2, box.y + box.h - 20);
    const shown = await page.evaluate(() => { const p = window.kinoPreview; return p && !p.hidden ? p.style.backgroundImage : ""; });
    result.preview = shown;
    if (!shown.includes("storyboard.jpg")) throw new Error("no storyboard thumbnail over the seek bar: " + shown);
  }
  result.ok = true;
} catch (e) {
  result.error = e.message;
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
