// Drives kino's dashboard in a real Chromium (Debian's) as its people do:
// an account's user sets a password from the operator's link, logs in,
// creates a collection, uploads a clip through the page and watches it
// reach COMPLETED without reloading, plays it, creates a key (shown once),
// uses it and revokes it, creates a webhook and sees a test delivery; the
// operator creates an account and a user; the account's user gets 404 for
// another account's pages. Issue 14: a collection's playback policy and
// downloads (create, edit), a video made signed plays with a playback
// token the page asks for (its bare URLs answer 403), Retry on a FAILED
// video, and the Signing keys page (private key shown once, delete).
// Each page is screenshotted at 1280x800 and 390x844.
// Usage: node dashboard.mjs '<json config>' (see dashboard_test.go)
// Prints one JSON line of findings; exits 1 when a check fails.
import { launch } from "./chromium.mjs";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const cfg = JSON.parse(process.argv[2]);
const base = cfg.url;
const T = 120000; // generous: two cores shared with other work
const result = { ok: false, step: "", shots: [], console: [], violations: [] };
mkdirSync(cfg.shots, { recursive: true });

const browser = await launch();

async function newPage() {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await ctx.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base }).catch(() => {});
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  page.on("console", (m) => { if (m.type() === "error") result.console.push(m.text()); });
  page.on("pageerror", (e) => result.console.push("pageerror: " + e.message));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.kinoViolations = window.kinoViolations || [];
      window.kinoViolations.push(e.violatedDirective + " " + e.blockedURI);
    });
  });
  return page;
}

async function violations(page) {
  const v = await page.evaluate(() => window.kinoViolations || []);
  result.violations.push(...v);
  // Accessibility basics: every control has a name, every image an alt,
  // one h1, and the skip link leads to the main content.
  const a11y = await page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
      if (!el.labels?.length && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby")) out.push("unlabelled " + el.outerHTML.slice(0, 80));
    }
    for (const b of document.querySelectorAll("button, a[href]")) {
      if (!b.textContent.trim() && !b.getAttribute("aria-label") && !b.querySelector("img[alt]:not([alt=''])") && b.getAttribute("aria-hidden") !== "true") out.push("nameless " + b.outerHTML.slice(0, 80));
    }
    for (const img of document.querySelectorAll("img:not([alt])")) out.push("no alt " + img.outerHTML.slice(0, 80));
    if (document.querySelectorAll("h1").length !== 1) out.push(document.querySelectorAll("h1").length + " h1 elements");
    if (!document.querySelector("a.skip[href='#main']") || !document.getElementById("main")) out.push("no skip link to #main");
    if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push("wider than the viewport: " + document.documentElement.scrollWidth);
    return out.map((m) => location.pathname + ": " + m);
  });
  result.a11y = (result.a11y || []).concat(a11y);
}

// shot screenshots the page at both sizes.
async function shot(page, name, { keepScroll = false } = {}) {
  await violations(page);
  if (!keepScroll) await page.evaluate(() => window.scrollTo(0, 0));
  for (const [w, h, tag] of [[1280, 800, "desktop"], [390, 844, "mobile"]]) {
    await page.setViewportSize({ width: w, height: h });
    if (tag === "mobile") await violations(page); // no sideways scrolling on a phone
    const file = join(cfg.shots, `${name}-${tag}.png`);
    await page.screenshot({ path: file });
    result.shots.push(file);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

function step(name) { result.step = name; }
function check(cond, msg) { if (!cond) throw new Error(msg); }

async function setPassword(page, link, password) {
  await page.goto(link);
  await page.fill("#password", password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/password")), page.click("button[type=submit]")]);
}

try {
  const ana = await newPage();

  step("logged out: a page redirects to /login with next");
  let resp = await ana.goto(base + "/keys");
  check(new URL(ana.url()).pathname === "/login" && new URL(ana.url()).searchParams.get("next") === "/keys", "not redirected to /login?next=/keys: " + ana.url());
  check((resp.headers()["content-security-policy"] || "").includes("frame-ancestors 'none'"), "no strict CSP on /login");
  await shot(ana, "login");

  step("set password from the link");
  await ana.goto(cfg.userLink);
  await shot(ana, "password");
  await setPassword(ana, cfg.userLink, cfg.password);

  step("log out and in again");
  await Promise.all([ana.waitForURL((u) => u.pathname === "/login"), ana.click("text=Log out")]);
  await ana.goto(base + "/login?next=" + encodeURIComponent("//evil.example/"));
  await ana.fill("#email", "nobody@example.com");
  await ana.fill("#password", "wrong password here");
  await ana.click("button[type=submit]");
  await ana.locator("[data-error]:not([hidden])").waitFor();
  await ana.fill("#email", cfg.userEmail);
  await ana.fill("#password", cfg.password);
  await Promise.all([ana.waitForURL((u) => u.pathname === "/"), ana.press("#password", "Enter")]);
  check(new URL(ana.url()).host === new URL(base).host, "login followed an open redirect: " + ana.url());
  await shot(ana, "videos-empty");
  // The keyboard: the first Tab reaches the skip link, which leads to the main content.
  await ana.reload();
  await ana.keyboard.press("Tab");
  check(await ana.evaluate(() => document.activeElement?.classList.contains("skip")), "the first Tab does not reach the skip link");
  await ana.keyboard.press("Enter");
  check(await ana.evaluate(() => document.activeElement?.id === "main"), "the skip link does not lead to the main content");

  step("create a collection");
  await ana.goto(base + "/collections");
  await ana.fill("#c-name", "Demo clips");
  check(await ana.inputValue("#c-slug") === "demo-clips", "the slug did not follow the name");
  await ana.click("text=Create collection");
  await ana.locator("tr[data-collection=demo-clips]").waitFor();

  step("a collection's playback policy and downloads: create and edit");
  await ana.fill("#c-name", "Members only");
  await ana.selectOption("#c-policy", "signed");
  await ana.uncheck("#c-downloads");
  await ana.click("text=Create collection");
  await ana.locator("tr[data-collection=members-only]").waitFor();
  const collJSON = (slug) => ana.evaluate(async (s) => (await fetch("/v1/collections/" + s, { credentials: "same-origin" })).json(), slug);
  let coll = await collJSON("members-only");
  check(coll.playbackPolicy === "signed" && coll.downloads === false, "the new collection's settings: " + JSON.stringify(coll));
  check(await ana.inputValue("#pp-members-only") === "signed" && !(await ana.isChecked("#dl-members-only")), "the list does not show the settings");
  coll = await collJSON("demo-clips");
  check(coll.playbackPolicy === "public" && coll.downloads === true, "the defaults: " + JSON.stringify(coll));
  await ana.check("#dl-members-only");
  await ana.selectOption("#pp-members-only", "public");
  await Promise.all([ana.waitForEvent("load"), ana.click("tr[data-collection=members-only] >> text=Save")]);
  coll = await collJSON("members-only");
  check(coll.playbackPolicy === "public" && coll.downloads === true && coll.name === "Members only", "the edited settings: " + JSON.stringify(coll));
  check(await ana.inputValue("#pp-members-only") === "public" && await ana.isChecked("#dl-members-only"), "the list does not show the edited settings");
  await shot(ana, "collections");
  await ana.click("tr[data-collection=members-only] >> text=Delete");
  await Promise.all([ana.waitForEvent("load"), ana.click("#confirm-ok")]);

  step("upload a clip through the page");
  await ana.goto(base + "/upload");
  await ana.selectOption("#collection", "demo-clips");
  await ana.fill("#up-tags", "demo, clip");
  await ana.setInputFiles("#files", cfg.clip);
  await ana.locator("#uploads li.upload").waitFor();
  await ana.waitForFunction(() => {
    const li = document.querySelector("#uploads li.upload");
    return li && (li.dataset.done === "true" || li.dataset.failed === "true");
  }, null, { timeout: T });
  const up = await ana.evaluate(() => {
    const li = document.querySelector("#uploads li.upload");
    return { done: li.dataset.done, video: li.dataset.video, bar: li.querySelector("progress").value, text: li.textContent };
  });
  check(up.done === "true" && up.video && up.bar === 100, "the upload did not finish: " + JSON.stringify(up));
  check(/100% · [\d.]+ (kB|MB)/.test(up.text), "the upload does not say its size: " + up.text);
  result.video = up.video;
  const uploadedTags = await ana.evaluate(async (id) => (await (await fetch("/v1/videos/" + id, { credentials: "same-origin" })).json()).tags, up.video);
  check(JSON.stringify(uploadedTags) === '["demo","clip"]', "the upload's tags: " + JSON.stringify(uploadedTags));
  await shot(ana, "upload");
  // The videos list, opened in a second tab while kino processes the
  // video, follows it to COMPLETED without reloading.
  const list = await ana.context().newPage();
  list.setDefaultTimeout(T);
  await list.goto(base + "/");
  await list.evaluate(() => { window.kinoNotReloaded = true; });
  const row = `[data-video="${up.video}"]`;
  result.statusSeenFirst = await list.getAttribute(row, "data-status");
  // The upload page follows the video it uploaded: first PENDING or
  // PROCESSING (it has just arrived), then COMPLETED, without reloading.
  await ana.evaluate(() => { window.kinoNotReloaded = true; });
  await ana.waitForFunction(() => document.querySelector("#uploads li.upload")?.dataset.status === "COMPLETED", null, { timeout: 240000 });
  result.uploadStatuses = await ana.evaluate(() => document.querySelector("#uploads li.upload").dataset.seen);
  check(await ana.evaluate(() => window.kinoNotReloaded === true), "the upload page reloaded");
  check(/^(PENDING|PROCESSING)\b/.test(result.uploadStatuses) && result.uploadStatuses.endsWith("COMPLETED"),
    "the upload page did not follow the video from processing to completed: " + result.uploadStatuses);
  await shot(ana, "upload-done");

  step("a file kino refuses for good offers no Retry");
  await ana.setInputFiles("#files", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("not a video") });
  await ana.waitForFunction(() => document.querySelector("#uploads li.upload")?.dataset.failed === "true", null, { timeout: T });
  const refusedFile = await ana.evaluate(() => { const li = document.querySelector("#uploads li.upload"); return { permanent: li.dataset.permanent, retry: !!li.querySelector(".toggle"), text: li.textContent }; });
  check(refusedFile.permanent === "true" && !refusedFile.retry, "a refused file offers Retry: " + JSON.stringify(refusedFile));

  step("the upload page's playback and download choices override the collection's");
  await ana.selectOption("#up-policy", "signed");
  await ana.selectOption("#up-download", "false");
  const tiny = Buffer.alloc(3000, 7);
  Buffer.from([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0, 0x69, 0x73, 0x6f, 0x6d, 0x69, 0x73, 0x6f, 0x32]).copy(tiny);
  await ana.setInputFiles("#files", { name: "private.mp4", mimeType: "video/mp4", buffer: tiny });
  await ana.waitForFunction(() => document.querySelector("#uploads li.upload")?.dataset.video, null, { timeout: T });
  const chosen = await ana.evaluate(async () => {
    const id = document.querySelector("#uploads li.upload").dataset.video;
    const v = await (await fetch("/v1/videos/" + id, { credentials: "same-origin" })).json();
    const ev = await (await fetch("/v1/videos/" + id + "/events", { credentials: "same-origin" })).json();
    await fetch("/v1/videos/" + id, { method: "DELETE", credentials: "same-origin" });
    return { policy: v.playbackPolicy, download: ev.events[0].data.download ?? null };
  });
  check(chosen.policy === "signed" && chosen.download !== true, "the upload's choices: " + JSON.stringify(chosen));

  step("an unfinished upload is listed on the upload page, and Discard removes it");
  // A tab closed mid-upload leaves this behind: created (with the session),
  // a quarter of its bytes in.
  const created = await ana.evaluate(async () => {
    const b64 = (s) => btoa(unescape(encodeURIComponent(s)));
    const r = await fetch("/v1/uploads/tus", { method: "POST", credentials: "same-origin", body: new Uint8Array(1000), headers: {
      "Tus-Resumable": "1.0.0", "Upload-Length": "4000", "Content-Type": "application/offset+octet-stream",
      "Upload-Metadata": "filename " + b64("half <img src=x onerror=alert(1)>.mp4") + ",collection " + b64("demo-clips") } });
    return { status: r.status, location: r.headers.get("Location") || "" };
  });
  check(created.status === 201, "tus creation with the session: " + JSON.stringify(created));
  const partial = created.location.split("/").pop();
  await ana.goto(base + "/upload");
  const prow = `tr[data-unfinished="${partial}"]`;
  await ana.locator(prow).waitFor();
  const seen = await ana.evaluate((sel) => {
    const tr = document.querySelector(sel);
    return { name: tr.querySelector(".name").textContent, bar: tr.querySelector("progress").value, html: tr.innerHTML };
  }, prow);
  check(seen.name === "half <img src=x onerror=alert(1)>.mp4" && !seen.html.includes("<img") && seen.bar === 25, "the unfinished upload's row: " + JSON.stringify(seen));
  await shot(ana, "upload-unfinished");
  await ana.click(prow + " >> text=Discard");
  await ana.locator("#confirm[open]").waitFor();
  await ana.click("#confirm-ok");
  await ana.locator(prow).waitFor({ state: "detached" });
  await ana.locator("#flash:not([hidden])").waitFor();
  const left = await ana.evaluate(async () => (await (await fetch("/v1/uploads", { credentials: "same-origin" })).json()).data.length);
  check(left === 0, left + " unfinished uploads left after Discard");
  check(await ana.locator("#unfinished >> text=No unfinished uploads.").count() === 1, "the emptied list says nothing");

  step("a collection holding a video offers no Delete, and says why");
  await ana.goto(base + "/collections");
  check(await ana.locator("tr[data-collection=demo-clips] >> text=Delete").count() === 0, "Delete is offered on a collection holding a video");
  result.refusedDelete = await ana.textContent("tr[data-collection=demo-clips] >> text=holds videos");

  step("the videos list reaches COMPLETED without reloading");
  await list.waitForFunction((sel) => document.querySelector(sel)?.dataset.status === "COMPLETED", row, { timeout: 240000 });
  check(await list.evaluate(() => window.kinoNotReloaded === true), "the videos page reloaded");
  check((await list.textContent(row + " [data-cell=status]")).trim() === "Completed", "the badge did not say Completed");
  await list.close();
  await ana.goto(base + "/"); // thumbnails load on a fresh page
  await ana.waitForFunction((sel) => { const i = document.querySelector(sel + " img"); return i && i.complete && i.naturalWidth > 0; }, row);
  await shot(ana, "videos");
  await ana.goto(base + "/?status=FAILED");
  check(await ana.locator(row).count() === 0, "the status filter kept a COMPLETED video");
  await ana.goto(base + "/?collection=demo-clips");
  check(await ana.locator(row).count() === 1, "the collection filter lost the video");

  step("play it");
  await ana.goto(base + "/videos/" + up.video);
  await ana.evaluate(() => { const v = document.getElementById("player"); v.muted = true; v.play().catch(() => {}); });
  await ana.waitForFunction(() => { const v = document.getElementById("player"); return v && v.currentTime > 0.5; }, null, { timeout: T });
  result.hlsjs = await ana.evaluate(() => !!window.kinoPlayer);
  check(result.hlsjs, "hls.js did not play it");
  check(await ana.locator("#u-playlist").inputValue() !== "", "no playlist URL");
  check(await ana.locator(".timeline li").count() >= 3, "the event timeline is short");
  // The storyboard's scenes (when the video has one) seek the player.
  if (await ana.evaluate(() => !!document.getElementById("player").dataset.storyboard)) {
    await ana.locator("#storyboard .scene").first().waitFor();
    const scenes = await ana.locator("#storyboard .scene").count();
    const last = ana.locator("#storyboard .scene").last();
    const at = Number(await last.getAttribute("data-seek"));
    await last.click();
    await ana.waitForFunction((t) => document.getElementById("player").currentTime >= t - 0.5, at, { timeout: T });
    result.scenes = scenes;
    check(scenes > 1 && at > 0, "storyboard scenes: " + scenes + ", last at " + at);
  }
  await ana.evaluate(() => document.getElementById("player").pause());
  await shot(ana, "video");
  check((await ana.locator("#u-embed").inputValue()).includes("/embed/" + up.video), "no embed code for a public video");

  step("captions: upload an SRT, preview it, delete it");
  await ana.locator("details.edit summary", { hasText: "Upload a caption file" }).click();
  await ana.setInputFiles("#c-file", { name: "talk.srt", mimeType: "text/plain",
    buffer: Buffer.from("1\r\n00:00:00,500 --> 00:00:01,500\r\nHello there\r\n") });
  await ana.locator("#c-label").fill("English (SRT)");
  await Promise.all([ana.waitForEvent("load"), ana.locator("form[aria-label='Upload captions'] button[type=submit]").click()]);
  const track = ana.locator("tr[data-track]", { hasText: "English (SRT)" });
  check(await track.count() === 1 && (await track.textContent()).includes("Ready"), "the uploaded track is not listed READY");
  await track.locator("button", { hasText: "Preview" }).click();
  await ana.waitForFunction(() => { const p = document.querySelector("tr[id^=vtt-]:not([hidden]) pre"); return p && p.textContent.includes("Hello there"); }, null, { timeout: T });
  await track.locator("button", { hasText: "Delete" }).click();
  await Promise.all([ana.waitForEvent("load"), ana.click("#confirm-ok")]);
  check(await ana.locator("tr[data-track]").count() === 0, "the deleted track is still listed");

  step("the player's frame becomes the thumbnail");
  await ana.evaluate(() => { document.getElementById("player").currentTime = 1; });
  await ana.waitForFunction(() => Math.abs(document.getElementById("player").currentTime - 1) < 0.2, null, { timeout: T });
  await ana.locator("[data-thumbnail-from]").click();
  await ana.waitForFunction(() => { const f = document.getElementById("flash"); return f && !f.hidden && f.textContent.includes("1.0 s"); }, null, { timeout: T });
  const thumbAt = await ana.evaluate(async (id) => (await (await fetch("/v1/videos/" + id, { credentials: "same-origin" })).json()).thumbnailTime, up.video);
  check(thumbAt === 1, "thumbnailTime is " + thumbAt + ", not 1");

  step("edit the video's title and tags; the search box and a tag find it");
  await ana.locator("details.edit summary", { hasText: "Edit title" }).click();
  await ana.locator("#e-title").fill("Launch talk");
  await ana.locator("#e-tags").fill("launch, keynote");
  await ana.locator("form[aria-label=\"Edit the video's details\"] button[type=submit]").click();
  await ana.waitForFunction(() => document.querySelector("h1").textContent === "Launch talk", null, { timeout: T });
  await ana.goto(base + "/");
  await ana.locator("#f-q").fill("launch ta");
  await ana.locator("#f-q").press("Enter");
  await ana.waitForURL(/q=launch/);
  check(await ana.locator(".video .title", { hasText: "Launch talk" }).count() === 1, "the search did not find the video");
  await ana.locator(".video .chip", { hasText: "keynote" }).first().click();
  await ana.waitForURL(/tag=keynote/);
  check(await ana.locator(".video .title", { hasText: "Launch talk" }).count() === 1, "the tag did not find the video");
  await ana.goto(base + "/videos/" + up.video);

  step("make the video signed: its URLs answer 403, and the page plays it with a playback token");
  const bare = await ana.locator("#u-playlist").inputValue();
  await Promise.all([ana.waitForEvent("load"), ana.click("text=Make signed")]);
  check(await ana.getAttribute("[data-policy]", "data-policy") === "signed", "the video is not signed");
  const bareStatus = (await fetch(bare)).status;
  check(bareStatus === 403, "the signed video's bare playlist answered " + bareStatus);
  await ana.waitForFunction(() => document.getElementById("player")?.dataset.tokened === "true", null, { timeout: T });
  await ana.evaluate(() => { const v = document.getElementById("player"); v.muted = true; v.play().catch(() => {}); });
  await ana.waitForFunction(() => { const v = document.getElementById("player"); return v && v.currentTime > 0.5; }, null, { timeout: T });
  const signedPage = await ana.evaluate(() => ({ poster: document.getElementById("player").poster, playlist: document.getElementById("u-playlist").value,
    links: Array.from(document.querySelectorAll("a[data-media-link]")).map((a) => a.href), play: document.querySelector("a[data-play-link]")?.href || "" }));
  check(signedPage.poster.includes("token=") && !signedPage.playlist.includes("token="), "the poster has no token, or the URL field has one: " + JSON.stringify(signedPage));
  check(signedPage.links.every((h) => h.includes("token=")) && signedPage.play.includes("/play/" + up.video + "?token="), "media links without a token: " + JSON.stringify(signedPage));
  // The player page plays the signed video with the token it was given.
  const play = await ana.context().newPage();
  play.setDefaultTimeout(T);
  await play.goto(signedPage.play);
  await play.evaluate(() => { const v = document.querySelector("video"); v.muted = true; v.play().catch(() => {}); });
  await play.waitForFunction(() => { const v = document.querySelector("video"); return v && v.currentTime > 0.5; }, null, { timeout: T });
  await play.close();
  result.signedLinks = signedPage.links.length;
  // With the download and storyboard outputs, their links carry the token
  // and work; the bare URLs do not.
  const signedVideo = await ana.evaluate(async (id) => (await fetch("/v1/videos/" + id, { credentials: "same-origin" })).json(), up.video);
  for (const bareURL of [signedVideo.downloadUrl, signedVideo.storyboardUrl].filter(Boolean)) {
    const link = signedPage.links.find((h) => h.startsWith(bareURL + "?"));
    check(link, "no link to " + bareURL + ": " + JSON.stringify(signedPage.links));
    const [withTok, without] = [(await fetch(link)).status, (await fetch(bareURL)).status];
    check(withTok === 200 && without === 403, bareURL + ": " + withTok + " with the page's token, " + without + " without");
  }
  await ana.evaluate(() => document.getElementById("player").pause());
  await shot(ana, "video-signed");
  await ana.click("text=Make public");
  await Promise.all([ana.waitForEvent("load"), ana.click("#confirm-ok")]);
  check(await ana.getAttribute("[data-policy]", "data-policy") === "public", "the video is not public again");
  check((await fetch(bare)).status === 200, "the public video's playlist is refused");

  step("Retry a FAILED video");
  const broken = await ana.evaluate(async () => {
    const fd = new FormData();
    fd.append("collection", "demo-clips");
    const bytes = new Uint8Array(4000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) & 255;
    bytes.set([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0, 0x69, 0x73, 0x6f, 0x6d, 0x69, 0x73, 0x6f, 0x32]);
    fd.append("file", new Blob([bytes]), "broken.mp4");
    const r = await fetch("/v1/videos", { method: "POST", body: fd, credentials: "same-origin" });
    return (await r.json()).video.id;
  });
  // The open page reloads itself when a video it shows changes status: a
  // fetch begun in it then may lose its page; ask again in the new one.
  const videoJSON = async (id) => {
    for (let i = 0; ; i++) {
      try {
        return await ana.evaluate(async (i) => (await fetch("/v1/videos/" + i, { credentials: "same-origin" })).json(), id);
      } catch (e) {
        if (i >= 10 || !String(e).includes("Execution context was destroyed")) throw e;
        await ana.waitForLoadState();
      }
    }
  };
  const failed = async () => {
    for (let i = 0; i < 600; i++) {
      const v = await videoJSON(broken);
      if (v.status === "FAILED") return v;
      await ana.waitForTimeout(250);
    }
    throw new Error("the broken video never FAILED");
  };
  await failed();
  await ana.goto(base + "/videos/" + broken);
  check(await ana.locator("button:has-text('Retry')").count() === 1, "no Retry button on a FAILED video");
  await shot(ana, "video-failed");
  await Promise.all([ana.waitForEvent("load"), ana.click("button:has-text('Retry')")]);
  await failed();
  // The open page reloads itself when it sees the video FAILED again,
  // which aborts a navigation begun at that moment, and a reload under way
  // may abort the next one too: go again until a navigation is ours.
  for (let i = 0; ; i++) {
    try {
      await ana.goto(base + "/videos/" + broken);
      break;
    } catch (e) {
      if (i >= 10 || !/ERR_ABORTED|interrupted by another navigation/.test(String(e))) throw e;
      await ana.waitForLoadState();
    }
  }
  check(await ana.locator(".timeline .evt:text-is('TranscodeRetried')").count() === 1, "the timeline has no TranscodeRetried");
  await ana.click("button:has-text('Delete video')");
  await Promise.all([ana.waitForURL((u) => u.pathname === "/"), ana.click("#confirm-ok")]);

  step("signing keys: create (the private key shown once), list, delete");
  await ana.goto(base + "/signing-keys");
  await shot(ana, "signing-keys-empty");
  await ana.fill("#s-label", "web backend");
  await ana.click("text=Create signing key");
  await ana.locator("#signing-key-created:not([hidden])").waitFor();
  const privateKey = await ana.inputValue("#new-private-key");
  const signingKeyID = await ana.inputValue("#new-signing-key-id");
  check(privateKey.startsWith("-----BEGIN PRIVATE KEY-----") && signingKeyID.length === 26, "no private key or id shown: " + signingKeyID);
  await ana.click("[data-copy=new-private-key]");
  const copied = await ana.evaluate(() => navigator.clipboard.readText().catch(() => ""));
  check(copied === "" || copied === privateKey, "the copy button copied something else");
  await shot(ana, "signing-key-created");
  await ana.reload();
  check(!(await ana.content()).includes(privateKey.split("\n")[1]), "the private key is shown again after a reload");
  await ana.locator(`tr[data-signing-key="${signingKeyID}"]`).waitFor();
  await shot(ana, "signing-keys");
  await ana.click(`tr[data-signing-key="${signingKeyID}"] >> text=Delete`);
  await Promise.all([ana.waitForEvent("load"), ana.click("#confirm-ok")]);
  check(await ana.locator(`tr[data-signing-key="${signingKeyID}"]`).count() === 0, "the deleted signing key is still listed");

  step("create a key, use it, revoke it");
  await ana.goto(base + "/keys");
  await ana.fill("#k-label", "ci server");
  await ana.click("text=Create key");
  await ana.locator("#key-created:not([hidden])").waitFor();
  const key = await ana.inputValue("#new-key-value");
  check(key.length > 20, "no key shown");
  // The list shows the new key at once, before Done.
  await ana.locator("tr[data-key]", { hasText: "ci server" }).waitFor({ timeout: T });
  await shot(ana, "key-created");
  await ana.reload();
  const html = await ana.content();
  check(!html.includes(key), "the full key is shown again after a reload");
  const prefix = await ana.textContent("tr[data-key] code");
  check(key.startsWith(prefix.replace("…", "")), "the list does not show the key's prefix: " + prefix);
  const use = await fetch(base + "/v1/videos", { headers: { Authorization: "Bearer " + key } });
  check(use.status === 200, "the new key got " + use.status);
  await shot(ana, "keys");
  await ana.click("tr[data-key] >> text=Revoke");
  await ana.locator("#confirm[open]").waitFor();
  await shot(ana, "confirm");
  await Promise.all([ana.waitForEvent("load"), ana.click("#confirm-ok")]);
  const revoked = await fetch(base + "/v1/videos", { headers: { Authorization: "Bearer " + key } });
  check(revoked.status === 401, "the revoked key got " + revoked.status);

  step("create a webhook, send a test, see the delivery");
  await ana.goto(base + "/webhooks");
  await ana.fill("#w-url", cfg.receiver);
  await ana.click("text=Create webhook");
  await ana.locator("#hook-created:not([hidden])").waitFor();
  check((await ana.inputValue("#new-secret")).length > 10, "no secret shown");
  await Promise.all([ana.waitForURL(/\/webhooks\/[^/]+$/), ana.click("text=Open the webhook")]);
  await ana.click("text=Send a test");
  await ana.waitForFunction(() => {
    const tr = document.querySelector("#deliveries tr[data-delivery]");
    return tr && tr.textContent.includes("webhook.test") && tr.textContent.includes("delivered");
  }, null, { timeout: T });
  await shot(ana, "webhook");

  step("a delivery that gave up is sent again");
  await ana.goto(base + "/webhooks");
  await ana.fill("#w-url", cfg.failingReceiver);
  await ana.click("text=Create webhook");
  await ana.locator("#hook-created:not([hidden])").waitFor();
  await Promise.all([ana.waitForURL(/\/webhooks\/[^/]+$/), ana.click("text=Open the webhook")]);
  await ana.click("text=Send a test");
  await ana.locator("#deliveries button:has-text('Redeliver')").waitFor();
  await ana.click("#deliveries button:has-text('Redeliver')");
  await ana.waitForFunction(() => Array.from(document.querySelectorAll("#deliveries tr[data-delivery]")).some((tr) => tr.textContent.includes("delivered")), null, { timeout: T });
  await shot(ana, "webhook-redelivered");
  await ana.goto(base + "/webhooks");
  await shot(ana, "webhooks");

  step("usage");
  resp = await ana.goto(base + "/usage");
  check(resp.status() === 200, "/usage answered " + resp.status());
  await shot(ana, "usage");

  step("another account's pages are 404");
  for (const p of ["/videos/" + cfg.other.video, "/keys/" + cfg.other.key, "/webhooks/" + cfg.other.webhook, "/admin"]) {
    resp = await ana.goto(base + p);
    check(resp.status() === 404, p + " answered " + resp.status());
    check((await ana.textContent("h1")).includes("Not found"), p + " is not a not-found page");
  }
  await shot(ana, "not-found");
  await violations(ana);

  step("the operator creates an account and a user");
  const op = await newPage();
  await setPassword(op, cfg.operatorLink, cfg.password);
  check(new URL(op.url()).pathname === "/admin", "the operator landed on " + op.url());
  await op.locator("#health .stat").first().waitFor();
  await op.fill("#a-slug", "gamma");
  await op.selectOption("#a-plan", "pro");
  await op.click("text=Create account");
  await op.locator("tr[data-account=gamma]").waitFor();
  await op.selectOption("#plan-gamma", "business");
  await Promise.all([op.waitForEvent("load"), op.click("tr[data-account=gamma] >> text=Change")]);
  check(await op.inputValue("#plan-gamma") === "business", "the plan did not change");
  await op.fill("#u-email", "gil@gamma.example");
  await op.selectOption("#u-account", "gamma");
  await op.click("text=Create user");
  await op.locator("#user-created:not([hidden])").waitFor();
  const link = await op.inputValue("#new-link");
  check(link.includes("/password?token="), "no set-password link: " + link);
  await shot(op, "admin-user-link", { keepScroll: true });
  await op.reload();
  await op.locator("#health .stat").first().waitFor();
  await shot(op, "admin");
  await op.goto(base + "/admin/accounts/gamma");
  await op.fill("#k-label", "gamma ops");
  await op.click("text=Create key");
  await op.locator("#key-created:not([hidden])").waitFor();
  await shot(op, "admin-account");
  // Its own storage quota (GiB), then its plan's again (empty).
  await op.goto(base + "/admin/accounts/gamma");
  await op.fill("#quota-gib", "2.5");
  await Promise.all([op.waitForEvent("load"), op.click("text=Set quota")]);
  check(await op.inputValue("#quota-gib") === "2.5", "the quota field shows " + await op.inputValue("#quota-gib"));
  const facts = await op.textContent(".facts");
  check(facts.includes("2.5 GiB") && facts.includes("its own quota"), "the account's facts: " + facts);
  await op.fill("#quota-gib", "");
  await Promise.all([op.waitForEvent("load"), op.click("text=Set quota")]);
  check(await op.inputValue("#quota-gib") === "" && (await op.textContent(".facts")).includes("the plan's"), "the plan's quota is not back");

  step("the operator verifies the read models");
  await op.goto(base + "/admin");
  await op.click("text=Verify read models");
  await op.waitForFunction(() => /^(Done|Failed)/.test(document.querySelector("[data-replay-text]")?.textContent || ""), null, { timeout: T });
  result.verify = await op.textContent("[data-replay-text]");
  check(result.verify.startsWith("Done"), "verify: " + result.verify);
  await shot(op, "admin-verified");
  await violations(op);

  if (result.violations.length) throw new Error("CSP violations: " + result.violations.join("; "));
  if (result.a11y.length) throw new Error("accessibility: " + [...new Set(result.a11y)].join("; "));
  const refused = result.console.filter((m) => m.includes("Content Security Policy"));
  if (refused.length) throw new Error("CSP refusals: " + refused.join("; "));
  result.ok = true;
} catch (e) {
  result.error = e.message.split("\n").slice(0, 3).join(" ");
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
