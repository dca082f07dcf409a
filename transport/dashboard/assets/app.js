// kino's dashboard: a little plain JS over server-rendered pages. It
// writes only through kino's JSON API (same origin, the session cookie),
// driven by data- attributes in the templates:
//   form[data-api]      submits its fields as JSON, or data-multipart as
//                       multipart/form-data (data-method, default POST;
//                       data-json="tags" sends a comma-separated field as a list,
//                       data-json="gib" a number of GiB as bytes, empty as null);
//                       data-result="<id>" shows the answer's fields in that
//                       element ([data-field], once: keys and secrets),
//                       data-redirect goes there, otherwise the page reloads.
//   button[data-api]    the same for one action (data-confirm asks first;
//                       data-then = a path, or refresh:<id> to refresh a region).
//   [data-copy="<id>"]  copies that input's value.
//   [data-refresh="s"]  an element (with an id) re-read from the page every s seconds.
//   [data-list]         a list (with an id) re-read from the page after a form
//                       with data-result created something.
//   [data-live-videos]  the videos list: polls /v1/videos every 2 s while any
//                       video is PENDING or PROCESSING, updating it in place.
//   [data-live-video]   the video page: polls /v1/videos/{id} the same way
//                       (and shows the player once the video is playable).
//   #player[data-src]   plays HLS natively or with hls.js; data-signed asks
//                       for a playback token first (POST playback-tokens).
//   [data-cell=eta]     percent, time left and speed, or the queue position.
//   #storyboard         scene buttons from the player's storyboard track
//                       (WebVTT cues into one sprite sheet); a click seeks.
//   [data-uploader]     drag and drop, resumable uploads with tus-js-client.
//   button[data-discard] discards an unfinished upload (tus DELETE) and its row.
//   [data-preview-vtt]  shows a text track's WebVTT in its row (data-target).
//   [data-thumbnail-from] makes the player's current frame the thumbnail (PATCH thumbnailTime).
//   img[data-animated]  plays the video's animated preview while the pointer is on it.
//   [data-replay]       starts a rebuild/verify of the read models and shows its progress.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const live = (s) => s === "PENDING" || s === "PROCESSING";

  // liveText is templates.go's liveText: the queue position while
  // PENDING; percent, time left and speed while PROCESSING.
  function formatLeft(s) {
    const n = Math.ceil(Math.max(0, s));
    if (n < 60) return n + " s";
    if (n < 3600) return Math.floor((n + 59) / 60) + " min";
    return Math.floor(n / 3600) + " h " + Math.floor(((n % 3600) + 59) / 60) + " min";
  }
  function liveText(v) {
    if (v.status === "PENDING") {
      const q = v.queuePosition;
      if (q > 0) return q === 1 ? "Waiting: next in line" : "Waiting: " + (q - 1) + " in line before it";
      return "Waiting for a transcoder";
    }
    if (v.status !== "PROCESSING") return "";
    const parts = [Math.round(Math.max(0, Math.min(1, v.progress || 0)) * 100) + "%"];
    if (v.eta != null) parts.push("about " + formatLeft(v.eta) + " left");
    if (v.speed != null && v.speed > 0) parts.push(v.speed.toFixed(1) + "× real time");
    return parts.join(" · ");
  }

  // withToken is url with ?token=token (a playback token).
  function withToken(u, token) {
    const url = new URL(u, location.href);
    url.searchParams.set("token", token);
    return url.toString();
  }
  const title = (s) => (s ? s.charAt(0) + s.slice(1).toLowerCase() : "");

  // api calls kino's JSON API; it resolves to the answer's body (or null)
  // and rejects with the API's message.
  async function api(method, path, body) {
    const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
    if (body instanceof FormData) {
      init.body = body; // the browser writes the multipart Content-Type
    } else if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new Error("kino could not be reached: check your connection and try again.");
    }
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!resp.ok) {
      if (resp.status === 401 && !path.startsWith("/auth/")) {
        location.assign("/login?next=" + encodeURIComponent(location.pathname + location.search));
      }
      const err = new Error((data && data.message) || resp.status + " " + resp.statusText);
      err.status = resp.status;
      throw err;
    }
    return data;
  }
  window.kinoAPI = api;

  function showError(el, msg) {
    if (!el) el = $("#flash");
    if (!el) return alert(msg);
    el.classList.remove("ok");
    el.textContent = msg;
    el.hidden = false;
    el.scrollIntoView({ block: "nearest" });
  }

  // localPath accepts a path on this site only.
  const localPath = (p) => typeof p === "string" && p.startsWith("/") && !p.startsWith("//") && !p.includes("\\");

  function fieldValue(obj, path) {
    return path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
  }

  function formBody(form) {
    const body = {};
    for (const el of form.elements) {
      if (!el.name || el.disabled || el.type === "submit" || el.type === "button") continue;
      const kind = el.dataset.json;
      if (el.type === "checkbox") {
        if (kind === "list") {
          body[el.name] = body[el.name] || [];
          if (el.checked) body[el.name].push(el.value);
        } else if (el.checked || kind === "bool") {
          body[el.name] = kind === "bool" ? el.checked : el.value;
        }
        continue;
      }
      if (el.value === "" && "omitEmpty" in el.dataset) continue;
      if (kind === "gib") {
        body[el.name] = el.value === "" ? null : Math.round(Number(el.value) * 1073741824);
        continue;
      }
      if (kind === "tags") {
        body[el.name] = el.value.split(",").map((t) => t.trim()).filter((t) => t !== "");
        continue;
      }
      body[el.name] = kind === "number" ? Number(el.value) : el.value;
    }
    if (body.operator === true) delete body.account;
    if (body.operator === false) delete body.operator;
    return body;
  }

  function showResult(id, data) {
    const box = document.getElementById(id);
    if (!box) return;
    for (const el of $$("[data-field]", box)) {
      const v = fieldValue(data, el.dataset.field);
      if ("value" in el && el.tagName !== "BUTTON") el.value = v == null ? "" : v; else el.textContent = v == null ? "" : v;
    }
    for (const a of $$("[data-field-href]", box)) {
      a.href = a.dataset.fieldHref.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(data[k] ?? ""));
    }
    box.hidden = false;
    box.focus();
  }

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("form[data-api]");
    if (!form) return;
    ev.preventDefault();
    const err = $("[data-error]", form);
    if (err) err.hidden = true;
    if (!form.checkValidity()) {
      form.reportValidity();
      return;
    }
    const button = $("button[type=submit], button:not([type])", form);
    if (button) button.disabled = true;
    try {
      const body = "multipart" in form.dataset ? new FormData(form) : formBody(form);
      const data = await api(form.dataset.method || "POST", form.dataset.api, body);
      if (form.dataset.result) {
        showResult(form.dataset.result, data || {});
        form.reset();
        // The new thing shows in the page's lists at once, not after Done.
        for (const list of $$("[data-list]")) refresh(list);
      } else if (localPath(form.dataset.redirect)) {
        location.assign(form.dataset.redirect);
      } else if (data && localPath(data.redirect)) {
        location.assign(data.redirect);
      } else {
        location.reload();
      }
    } catch (e) {
      showError(err, e.message);
    } finally {
      if (button) button.disabled = false;
    }
  });

  const dialog = () => document.getElementById("confirm");
  function confirmAction(text) {
    const d = dialog();
    if (!d || typeof d.showModal !== "function") return Promise.resolve(window.confirm(text));
    $("#confirm-text", d).textContent = text;
    d.returnValue = "";
    return new Promise((resolve) => {
      d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true });
      d.showModal();
      $("#confirm-ok", d).focus();
    });
  }

  document.addEventListener("click", async (ev) => {
    const copy = ev.target.closest("[data-copy]");
    if (copy) {
      const src = document.getElementById(copy.dataset.copy);
      const text = src ? ("value" in src ? src.value : src.textContent) : "";
      try {
        await navigator.clipboard.writeText(text);
      } catch (e) {
        src.select();
        document.execCommand("copy");
      }
      const was = copy.textContent;
      copy.textContent = "Copied";
      setTimeout(() => { copy.textContent = was; }, 1500);
      return;
    }
    if (ev.target.closest("[data-reload]")) {
      location.reload();
      return;
    }
    const tf = ev.target.closest("button[data-thumbnail-from]");
    if (tf) {
      const player = document.getElementById(tf.dataset.thumbnailFrom);
      if (!player) return;
      const at = Math.round(player.currentTime * 10) / 10;
      tf.disabled = true;
      try {
        await api("PATCH", "/v1/videos/" + encodeURIComponent(tf.dataset.video), { thumbnailTime: at });
        flash("The thumbnail is now the frame at " + at.toFixed(1) + " s; it shows everywhere within a few minutes.");
      } catch (e) {
        showError(null, e.message);
      } finally {
        tf.disabled = false;
      }
      return;
    }
    const pv = ev.target.closest("button[data-preview-vtt]");
    if (pv) {
      const row = document.getElementById(pv.dataset.target);
      if (!row) return;
      if (!row.hidden) { row.hidden = true; return; }
      try {
        const resp = await fetch(pv.dataset.previewVtt, { headers: { Accept: "text/vtt" }, credentials: "same-origin" });
        if (!resp.ok) throw new Error(resp.status + " " + resp.statusText);
        $("pre", row).textContent = await resp.text();
        row.hidden = false;
      } catch (e) {
        showError(null, "The track could not be read: " + e.message);
      }
      return;
    }
    const btn = ev.target.closest("button[data-api]");
    if (!btn) return;
    ev.preventDefault();
    if (btn.dataset.confirm && !(await confirmAction(btn.dataset.confirm))) return;
    btn.disabled = true;
    const errEl = $("[data-error]", btn.closest("section, form, tr") || document) || null;
    try {
      await api(btn.dataset.method || "POST", btn.dataset.api, btn.dataset.body ? JSON.parse(btn.dataset.body) : undefined);
      const then = btn.dataset.then || "";
      if (then.startsWith("refresh:")) {
        refresh(document.getElementById(then.slice(8)));
        if (btn.dataset.done) flash(btn.dataset.done);
      } else if (localPath(then)) {
        location.assign(then);
      } else {
        location.reload();
      }
    } catch (e) {
      showError(errEl && !errEl.closest("form[data-api]") ? errEl : null, e.message);
    } finally {
      btn.disabled = false;
    }
  });

  function flash(msg) {
    const f = $("#flash");
    if (!f) return;
    f.textContent = msg;
    f.classList.add("ok");
    f.hidden = false;
  }

  // refresh re-reads the page and swaps in the element's new contents.
  async function refresh(el) {
    if (!el || !el.id) return;
    try {
      const resp = await fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!resp.ok) return;
      const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
      const fresh = doc.getElementById(el.id);
      if (fresh && fresh.innerHTML !== el.innerHTML) {
        el.innerHTML = fresh.innerHTML;
        localTimes(el);
        labelCells(el);
      }
    } catch (e) { /* the next round tries again */ }
  }
  for (const el of $$("[data-refresh]")) {
    const every = Math.max(2, Number(el.dataset.refresh) || 5) * 1000;
    setInterval(() => { if (!document.hidden) refresh(el); }, every);
  }

  // Times in the visitor's zone.
  function localTimes(root) {
    for (const t of $$("time[datetime]", root)) {
      const d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) {
        t.title = t.getAttribute("datetime");
        t.textContent = d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
      }
    }
  }
  localTimes(document);

  // On a phone tables stack into cards; each cell is labelled with its
  // column's heading (app.css shows it).
  function labelCells(root) {
    for (const table of $$("table", root)) {
      const heads = $$("thead th", table).map((th) => th.textContent.trim());
      for (const tr of $$("tbody tr", table)) {
        Array.from(tr.children).forEach((td, i) => { if (heads[i] && !td.classList.contains("right")) td.dataset.label = heads[i]; });
      }
    }
  }
  labelCells(document);

  for (const sel of $$("select[data-autosubmit]")) sel.addEventListener("change", () => sel.form.submit());

  // A new collection's slug follows its name until edited.
  for (const src of $$("[data-slug-source]")) {
    const slug = document.getElementById(src.dataset.slugSource);
    let edited = false;
    slug.addEventListener("input", () => { edited = true; });
    src.addEventListener("input", () => {
      if (!edited) slug.value = src.value.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
    });
  }

  function fmtDuration(d) {
    if (d == null) return "";
    const s = Math.round(d);
    const mm = String(Math.floor(s / 60) % 60).padStart(2, "0");
    const ss = String(s % 60).padStart(2, "0");
    return s >= 3600 ? Math.floor(s / 3600) + ":" + mm + ":" + ss : Math.floor(s / 60) + ":" + ss;
  }

  function paint(el, v) {
    el.dataset.status = v.status;
    const badge = $("[data-cell=status]", el);
    if (badge) {
      badge.textContent = title(v.status);
      badge.className = "badge " + v.status.toLowerCase();
    }
    const bar = $("progress[data-cell=progress]", el);
    if (bar) {
      const pct = Math.round((v.progress || 0) * 100);
      bar.value = pct;
      bar.textContent = pct + "%";
      bar.hidden = !live(v.status);
    }
    const eta = $("[data-cell=eta]", el);
    if (eta) eta.textContent = liveText(v);
    const dur = $("[data-cell=duration]", el);
    if (dur) dur.textContent = fmtDuration(v.duration);
    const thumb = $("[data-cell=thumb]", el);
    if (thumb && v.thumbnailUrl && v.playbackPolicy !== "signed" && thumb.tagName !== "IMG") {
      const img = document.createElement("img");
      img.src = v.thumbnailUrl;
      img.alt = "";
      img.dataset.cell = "thumb";
      thumb.replaceWith(img);
    }
  }

  // The videos list follows PENDING and PROCESSING videos without reloading.
  const list = $("[data-live-videos]");
  if (list) {
    const tick = async () => {
      const rows = $$("[data-video]", list);
      if (!rows.some((r) => live(r.dataset.status))) return;
      if (!document.hidden) {
        try {
          const data = await api("GET", "/v1/videos?" + list.dataset.query);
          const byID = new Map(data.videos.map((v) => [v.id, v]));
          for (const r of rows) {
            const v = byID.get(r.dataset.video);
            if (v) paint(r, v);
          }
        } catch (e) { /* try again */ }
      }
      setTimeout(tick, 2000);
    };
    setTimeout(tick, 2000);
  }

  // The video page follows its video. It reloads to show the player once
  // the video is playable (a playlistUrl while PROCESSING), and once
  // processing is over, unless the player was started: then it only says so.
  const one = $("[data-live-video]");
  if (one && live(one.dataset.status)) {
    const tick = async () => {
      try {
        const v = await api("GET", "/v1/videos/" + encodeURIComponent(one.dataset.liveVideo));
        const player = document.getElementById("player");
        if (!one.dataset.playable && v.playlistUrl) return location.reload();
        if (!live(v.status)) {
          // Reload for the outputs unless someone started the player.
          if (!player || (player.paused && player.currentTime === 0)) return location.reload();
          paint(one, v);
          const eta = $("[data-cell=eta]", one);
          if (eta) eta.textContent = v.status === "COMPLETED" ? "Processing finished: reload the page for every output." : "";
          return;
        }
        paint(one, v);
      } catch (e) { /* try again */ }
      setTimeout(tick, 2000);
    };
    setTimeout(tick, 2000);
  }

  // The player: native HLS (Safari) or hls.js. A signed video's media need
  // a playback token: the page asks kino for one (the session's account
  // owns the video) and plays the master playlist with it; kino lists every
  // URI of the playlists it serves with the same token.
  async function startPlayer(video) {
    let src = video.dataset.src;
    if (video.dataset.signed) {
      let t;
      try {
        t = await api("POST", "/v1/videos/" + encodeURIComponent(video.dataset.videoId) + "/playback-tokens", { ttl: 3600 });
      } catch (e) {
        showError(null, "This signed video cannot play: no playback token (" + e.message + ").");
        return;
      }
      src = withToken(src, t.token);
      video.dataset.token = t.token;
      if (video.dataset.poster) video.poster = withToken(video.dataset.poster, t.token);
      for (const a of $$("a[data-media-link]")) a.href = withToken(a.href, t.token);
      video.dataset.tokened = "true";
    }
    if (window.Hls && window.Hls.isSupported()) {
      // From the start, also when the playlist still grows (an EVENT
      // playlist of a video that plays while processing).
      const hls = new window.Hls({ startPosition: 0 });
      hls.loadSource(src);
      hls.attachMedia(video);
      window.kinoPlayer = hls;
    } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
      video.src = src;
    }
  }
  // The storyboard: a WebVTT track whose cues each name a region of a
  // sprite sheet (url#xywh=x,y,w,h); shown as up to 12 scene buttons that
  // seek the player. Sizes and positions are set through the CSSOM, which
  // the page's CSP allows (no inline style attributes).
  function vttTime(s) {
    const p = s.trim().split(":").map(Number);
    return p.reduce((acc, n) => acc * 60 + n, 0);
  }
  async function storyboard(video) {
    const box = document.getElementById("storyboard");
    if (!box || !video.dataset.storyboard) return;
    let url = video.dataset.storyboard;
    if (video.dataset.token) url = withToken(url, video.dataset.token);
    let text;
    try {
      const resp = await fetch(url, { credentials: "omit" });
      if (!resp.ok) return;
      text = await resp.text();
    } catch (e) { return; }
    const cues = [];
    for (const block of text.replace(/\r/g, "").split("\n\n")) {
      const lines = block.split("\n").filter((l) => l.trim() !== "");
      const i = lines.findIndex((l) => l.includes("-->"));
      if (i < 0 || !lines[i + 1]) continue;
      const m = /^(.*)#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec(lines[i + 1].trim());
      if (!m) continue;
      cues.push({ start: vttTime(lines[i].split("-->")[0]), img: new URL(m[1], url).toString(), x: +m[2], y: +m[3], w: +m[4], h: +m[5] });
    }
    if (!cues.length) return;
    const step = Math.max(1, Math.ceil(cues.length / 12));
    for (let i = 0; i < cues.length; i += step) {
      const c = cues[i];
      const b = document.createElement("button");
      b.type = "button";
      b.className = "scene";
      b.dataset.seek = String(c.start);
      b.setAttribute("aria-label", "Play from " + fmtDuration(c.start));
      const tile = document.createElement("span");
      tile.className = "tile";
      tile.setAttribute("aria-hidden", "true");
      tile.style.width = c.w + "px";
      tile.style.height = c.h + "px";
      tile.style.backgroundImage = 'url("' + c.img.replace(/["\\]/g, "") + '")';
      tile.style.backgroundPosition = -c.x + "px " + -c.y + "px";
      const t = document.createElement("span");
      t.className = "small";
      t.textContent = fmtDuration(c.start);
      b.append(tile, t);
      b.addEventListener("click", () => { video.currentTime = c.start; video.play().catch(() => {}); });
      box.append(b);
    }
    box.hidden = false;
  }

  const video = document.getElementById("player");
  if (video && video.dataset.src) startPlayer(video).then(() => storyboard(video));

  // Uploads: several files at once, each resumable with tus.
  const uploader = $("[data-uploader]");
  if (uploader && window.tus) {
    const drop = $("#drop", uploader);
    const input = $("#files", uploader);
    const listEl = $("#uploads", uploader);
    const collection = $("#collection", uploader);
    const policy = $("#up-policy", uploader);
    const download = $("#up-download", uploader);
    const tags = $("#up-tags", uploader);
    // Leaving the page stops the uploads running in it: the browser asks
    // first (a later visit resumes them, but the visitor may not know).
    const running = new Set();
    window.addEventListener("beforeunload", (e) => {
      if (running.size) { e.preventDefault(); e.returnValue = ""; }
    });
    const size = (n) => n >= 1e9 ? (n / 1e9).toFixed(2) + " GB" : n >= 1e6 ? (n / 1e6).toFixed(1) + " MB" : Math.ceil(n / 1e3) + " kB";
    const clock = (s) => { s = Math.round(s); const m = Math.floor(s / 60); return (m >= 60 ? Math.floor(m / 60) + ":" + String(m % 60).padStart(2, "0") : m) + ":" + String(s % 60).padStart(2, "0"); };
    const start = (files) => { for (const f of files) upload(f); };
    input.addEventListener("change", () => { start(input.files); input.value = ""; });
    for (const t of ["dragenter", "dragover"]) drop.addEventListener(t, (e) => { e.preventDefault(); drop.classList.add("over"); });
    for (const t of ["dragleave", "drop"]) drop.addEventListener(t, () => drop.classList.remove("over"));
    drop.addEventListener("drop", (e) => { e.preventDefault(); start(e.dataTransfer.files); });

    const apiMessage = (err) => {
      const res = err && err.originalResponse;
      if (res) {
        try { const b = JSON.parse(res.getBody()); if (b && b.message) return b.message; } catch (e) { /* not JSON */ }
      }
      return (err && err.message ? err.message.split("\n")[0] : "the upload failed");
    };

    // follow shows an uploaded video's processing until it is over.
    async function follow(id, li, state) {
      const seen = [];
      for (;;) {
        try {
          const v = await api("GET", "/v1/videos/" + encodeURIComponent(id));
          if (seen[seen.length - 1] !== v.status) seen.push(v.status);
          li.dataset.status = v.status;
          li.dataset.seen = seen.join(" ");
          if (v.status === "COMPLETED") { state.textContent = "ready to play"; return; }
          if (v.status === "FAILED") { state.textContent = "failed: " + (v.errorMessage || "kino could not process it"); return; }
          state.textContent = v.status === "PENDING" ? "uploaded: " + liveText(v).toLowerCase() : "processing " + liveText(v) + (v.playlistUrl ? " (plays already)" : "");
        } catch (e) { /* try again */ }
        await new Promise((r) => setTimeout(r, 2000));
      }
    }

    function upload(file) {
      const li = document.createElement("li");
      li.className = "upload";
      li.innerHTML = '<div class="row"><span class="name"></span><span class="muted small state">starting…</span></div>' +
        '<progress max="100" value="0"></progress><div class="row"><span class="small pct">0%</span><span class="links"></span><button type="button" class="small ghost toggle">Pause</button></div>';
      $(".name", li).textContent = file.name;
      const bar = $("progress", li);
      bar.setAttribute("aria-label", "Upload progress of " + file.name);
      const state = $(".state", li);
      const pct = $(".pct", li);
      const toggle = $(".toggle", li);
      listEl.prepend(li);
      const up = new window.tus.Upload(file, {
        endpoint: "/v1/uploads/tus",
        chunkSize: 8 * 1024 * 1024,
        retryDelays: [0, 1000, 3000, 5000, 10000],
        metadata: Object.assign({ filename: file.name, filetype: file.type, collection: collection.value },
          policy && policy.value ? { playbackPolicy: policy.value } : {},
          download && download.value ? { download: download.value } : {},
          tags && tags.value.trim() ? { tags: tags.value } : {}),
        removeFingerprintOnSuccess: true,
        onProgress(sent, total) {
          const p = total ? Math.floor((sent / total) * 100) : 0;
          bar.value = p;
          // Bytes, speed (smoothed over the last seconds) and time left.
          const now = performance.now();
          if (last && now > last.at) {
            const rate = (sent - last.sent) / ((now - last.at) / 1000);
            speed = speed == null ? rate : 0.7 * speed + 0.3 * rate;
          }
          last = { at: now, sent };
          let text = p + "% · " + size(sent) + " of " + size(total);
          if (speed > 0) text += " · " + size(speed) + "/s · " + clock((total - sent) / speed) + " left";
          pct.textContent = text;
          state.textContent = "uploading";
          running.add(up);
        },
        onSuccess() {
          running.delete(up);
          bar.value = 100;
          pct.textContent = "100% · " + size(file.size);
          state.textContent = "uploaded: kino is processing it";
          li.dataset.done = "true";
          toggle.remove();
          const id = up.url ? up.url.split("/").pop() : "";
          if (id) {
            li.dataset.video = id;
            const a = document.createElement("a");
            a.href = "/videos/" + encodeURIComponent(id);
            a.textContent = "Open video";
            $(".links", li).append(a);
            follow(id, li, state);
          }
        },
        onError(err) {
          running.delete(up);
          state.textContent = "failed";
          li.dataset.failed = "true";
          const p = document.createElement("p");
          p.className = "error";
          p.setAttribute("role", "alert");
          p.textContent = apiMessage(err);
          li.append(p);
          // A refusal of the file itself (too large, not a video, an
          // unknown collection) comes back the same: no Retry then.
          const res = err && err.originalResponse;
          const status = res ? res.getStatus() : 0;
          if ([400, 403, 404, 413, 415].includes(status)) {
            toggle.remove();
            li.dataset.permanent = "true";
          } else {
            toggle.textContent = "Retry";
          }
        },
      });
      let last = null;
      let speed = null;
      let going = true;
      toggle.addEventListener("click", () => {
        if (going) {
          running.delete(up);
          up.abort();
          state.textContent = "paused";
          toggle.textContent = "Resume";
        } else {
          const e = $(".error", li);
          if (e) e.remove();
          delete li.dataset.failed;
          last = null;
          up.start();
          toggle.textContent = "Pause";
        }
        going = !going;
      });
      up.findPreviousUploads().then((prev) => {
        if (prev.length) {
          up.resumeFromPreviousUpload(prev[0]);
          state.textContent = "resuming";
          // It is followed here now, not in the unfinished list.
          const id = String(prev[0].uploadUrl || "").split("/").pop();
          if (id) removeUnfinished(id);
        }
        up.start();
      });
    }
  }

  // Unfinished uploads (the upload page lists them): Discard terminates
  // one with tus (DELETE /v1/uploads/tus/{id}), after a confirmation.
  function removeUnfinished(id) {
    const box = $("[data-unfinished-list]");
    if (!box) return;
    const row = $$("tr[data-unfinished]", box).find((r) => r.dataset.unfinished === id);
    if (!row) return;
    row.remove();
    if (!$("tr[data-unfinished]", box)) {
      const wrap = $(".table-wrap", box);
      const p = document.createElement("p");
      p.className = "muted";
      p.textContent = "No unfinished uploads.";
      if (wrap) wrap.replaceWith(p);
    }
  }
  // forgetResume drops tus-js-client's record of an upload (localStorage
  // "tus::<fingerprint>::<n>"), so the same file starts afresh.
  function forgetResume(id) {
    try {
      for (let i = localStorage.length - 1; i >= 0; i--) {
        const k = localStorage.key(i);
        if (!k || !k.startsWith("tus::")) continue;
        let v = null;
        try { v = JSON.parse(localStorage.getItem(k)); } catch (e) { v = null; }
        if (v && typeof v.uploadUrl === "string" && v.uploadUrl.split("/").pop() === id) localStorage.removeItem(k);
      }
    } catch (e) { /* no storage: nothing to forget */ }
  }
  document.addEventListener("click", async (ev) => {
    const btn = ev.target.closest("button[data-discard]");
    if (!btn) return;
    ev.preventDefault();
    const box = btn.closest("[data-unfinished-list]");
    const err = box ? $("[data-error]", box) : null;
    if (btn.dataset.confirm && !(await confirmAction(btn.dataset.confirm))) return;
    const id = btn.dataset.discard;
    btn.disabled = true;
    try {
      const resp = await fetch("/v1/uploads/tus/" + encodeURIComponent(id), {
        method: "DELETE", credentials: "same-origin", headers: { "Tus-Resumable": "1.0.0", Accept: "application/json" },
      });
      // 404 or 410: it is gone already (expired, or finished elsewhere).
      if (!resp.ok && resp.status !== 404 && resp.status !== 410) {
        if (resp.status === 401) location.assign("/login?next=" + encodeURIComponent(location.pathname + location.search));
        let msg = resp.status + " " + resp.statusText;
        try { const b = await resp.json(); if (b && b.message) msg = b.message; } catch (e) { /* not JSON */ }
        throw new Error(msg);
      }
      if (err) err.hidden = true;
      forgetResume(id);
      removeUnfinished(id);
      flash("Upload discarded.");
      const title = $("#unfinished-title");
      if (title) { title.tabIndex = -1; title.focus(); }
    } catch (e) {
      showError(err, e.message === "Failed to fetch" ? "kino could not be reached: check your connection and try again." : e.message);
      btn.disabled = false;
    }
  });

  // Rebuild or verify the read models, with progress.
  for (const b of $$("[data-replay]")) {
    b.addEventListener("click", async () => {
      const verify = b.dataset.replay === "true";
      if (!verify && !(await confirmAction("Rebuild the read models from the event stream? Reads stay up; the new models swap in when done."))) return;
      const box = $("#replay");
      const bar = $("progress", box);
      const text = $("[data-replay-text]", box);
      box.hidden = false;
      text.textContent = "starting…";
      try {
        await api("POST", "/v1/admin/replay", { verify });
      } catch (e) {
        if (e.status !== 409) { text.textContent = e.message; return; }
      }
      const poll = async () => {
        try {
          const p = await api("GET", "/v1/admin/replay");
          const pctDone = p.total ? Math.floor((p.events / p.total) * 100) : 0;
          bar.value = p.state === "done" ? 100 : pctDone;
          if (p.state === "running") {
            text.textContent = (verify ? "Verifying" : "Rebuilding") + ": " + (p.events || 0) + " of " + (p.total || "?") + " events";
            setTimeout(poll, 1000);
          } else {
            const r = p.result && typeof p.result === "object" ? p.result : {};
            let msg = p.state === "done" ? "Done: " + (r.applied ?? p.events ?? 0) + " events replayed" : "Failed";
            if (p.state === "done") {
              const diffs = r.differences || [];
              if (r.verified !== undefined) msg += diffs.length ? "; " + diffs.length + " differences: " + JSON.stringify(diffs).slice(0, 400) : "; the read models match the stream";
              else msg += "; the rebuilt read models are in use";
            }
            if (p.error) msg += ": " + p.error;
            text.textContent = msg;
          }
        } catch (e) {
          text.textContent = e.message;
        }
      };
      poll();
    });
  }

  // Hover previews: a card's thumbnail plays the animated WebP while the
  // pointer is on it.
  document.addEventListener("mouseover", (ev) => {
    const img = ev.target.closest && ev.target.closest("img[data-animated]");
    if (!img || img.dataset.still) return;
    img.dataset.still = img.src;
    img.src = img.dataset.animated;
    img.addEventListener("mouseleave", () => { img.src = img.dataset.still; delete img.dataset.still; }, { once: true });
  });
})();
