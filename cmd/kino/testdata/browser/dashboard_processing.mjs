// The dashboard's video page while the video is still PROCESSING (issue
// 14): a signed video that is already playable shows the player, which
// asks kino for a playback token and plays the growing playlist; the page
// shows percent and time left; when processing ends it does not reload
// under the playing video, and says so.
// Usage: node dashboard_processing.mjs '<json config>' (see dashboard_test.go)
// Prints one JSON line of findings; exits 1 when a check fails.
import { launch } from "./chromium.mjs";
import { join } from "node:path";
import { writeFileSync } from "node:fs";

const cfg = JSON.parse(process.argv[2]);
const base = cfg.url;
const T = 120000;
const result = { ok: false, step: "", console: [], violations: [] };
const browser = await launch();
function step(name) { result.step = name; }
function check(cond, msg) { if (!cond) throw new Error(msg); }

try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  page.on("console", (m) => { if (m.type() === "error") result.console.push(m.text()); });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.kinoViolations = window.kinoViolations || [];
      window.kinoViolations.push(e.violatedDirective + " " + e.blockedURI);
    });
  });

  step("log in");
  await page.goto(cfg.userLink);
  await page.fill("#password", cfg.password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/password")), page.click("button[type=submit]")]);

  step("the video page shows the player while PROCESSING");
  await page.goto(base + "/videos/" + cfg.video);
  const state = await page.evaluate(() => ({ status: document.querySelector("[data-live-video]").dataset.status, player: !!document.getElementById("player"),
    eta: document.querySelector("[data-cell=eta]")?.textContent || "" }));
  check(state.status === "PROCESSING" && state.player, "no player while processing: " + JSON.stringify(state));
  check(/^\d+%/.test(state.eta), "no percent shown: " + JSON.stringify(state));
  await page.waitForFunction(() => document.getElementById("player").dataset.tokened === "true", null, { timeout: T });
  await page.evaluate(() => { window.kinoNotReloaded = true; const v = document.getElementById("player"); v.muted = true; v.play().catch(() => {}); });
  await page.waitForFunction(() => document.getElementById("player").currentTime > 0.5, null, { timeout: T });
  result.statusAtPlay = await page.evaluate(async (id) => (await (await fetch("/v1/videos/" + id, { credentials: "same-origin" })).json()).status, cfg.video);
  check(result.statusAtPlay === "PROCESSING", "a frame played when the video was " + result.statusAtPlay);
  result.firstTime = await page.evaluate(() => document.getElementById("player").currentTime);
  writeFileSync(cfg.gate, ""); // seen playing while processing: the ladder may end
  await page.screenshot({ path: join(cfg.shots, "video-processing-desktop.png") });

  step("processing ends under the playing video: no reload");
  await page.waitForFunction(() => document.querySelector("[data-live-video]").dataset.status === "COMPLETED", null, { timeout: 240000 });
  check(await page.evaluate(() => window.kinoNotReloaded === true), "the page reloaded under the playing video");
  result.endNote = await page.textContent("[data-cell=eta]");
  check(result.endNote.includes("Processing finished"), "the page did not say processing finished: " + result.endNote);
  result.violations = await page.evaluate(() => window.kinoViolations || []);
  if (result.violations.length) throw new Error("CSP violations: " + result.violations.join("; "));
  result.ok = true;
} catch (e) {
  result.error = e.message.split("\n").slice(0, 3).join(" ");
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
