// kino's /play and /embed pages: plays the playlist named by the video's
// data-src with native HLS where the browser has it (Safari, iOS), hls.js
// elsewhere, and shows the storyboard's thumbnail (data-storyboard) over
// the seek bar while the pointer moves along it. A menu (#captions) lists
// the video's text tracks (its HLS subtitles renditions, as the video's
// textTracks) and shows the one chosen. Loaded from kino itself; the
// pages' CSP allows no inline script.
(function () {
  "use strict";
  var video = document.getElementById("player");
  if (!video) return;
  var src = video.getAttribute("data-src");
  if (window.Hls && window.Hls.isSupported()) {
    var hls = new window.Hls();
    window.kinoPlayer = hls;
    hls.loadSource(src);
    hls.attachMedia(video);
  } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
    video.src = src;
  }

  // The captions menu: "Off" and one entry per subtitles track, built as
  // the tracks appear (hls.js adds them once the master is parsed).
  var menu = document.createElement("select");
  menu.id = "captions";
  menu.setAttribute("aria-label", "Captions");
  menu.hidden = true;
  video.parentNode.insertBefore(menu, video.nextSibling);
  window.kinoCaptions = menu;
  function subtitleTracks() {
    var out = [];
    for (var i = 0; i < video.textTracks.length; i++) {
      var t = video.textTracks[i];
      if (t.kind === "subtitles" || t.kind === "captions") out.push(t);
    }
    return out;
  }
  function syncMenu() {
    var tracks = subtitleTracks();
    menu.textContent = "";
    var off = document.createElement("option");
    off.value = "-1";
    off.textContent = "Captions off";
    menu.appendChild(off);
    var chosen = -1;
    tracks.forEach(function (t, i) {
      var o = document.createElement("option");
      o.value = String(i);
      o.textContent = t.label || t.language || "Track " + (i + 1);
      menu.appendChild(o);
      if (t.mode === "showing") chosen = i;
    });
    menu.value = String(chosen);
    menu.hidden = tracks.length === 0;
  }
  menu.addEventListener("change", function () {
    var want = parseInt(menu.value, 10);
    subtitleTracks().forEach(function (t, i) { t.mode = i === want ? "showing" : "disabled"; });
  });
  video.textTracks.addEventListener("addtrack", syncMenu);
  video.textTracks.addEventListener("removetrack", syncMenu);
  video.textTracks.addEventListener("change", syncMenu);

  var storyboard = video.getAttribute("data-storyboard");
  if (!storyboard || !window.fetch) return;
  var cues = [];
  window.kinoStoryboard = cues;
  // "00:00:05.000 --> 00:00:10.000" then "storyboard.jpg#xywh=0,0,160,90"
  function seconds(t) {
    var p = t.trim().split(":").map(parseFloat);
    return p.length === 3 ? p[0] * 3600 + p[1] * 60 + p[2] : p[0] * 60 + p[1];
  }
  fetch(storyboard).then(function (r) { return r.ok ? r.text() : ""; }).then(function (text) {
    var lines = text.split(/\r?\n/);
    for (var i = 0; i < lines.length - 1; i++) {
      var m = lines[i].match(/^([\d:.]+)\s+-->\s+([\d:.]+)/);
      var ref = lines[i + 1].match(/^(.+)#xywh=(\d+),(\d+),(\d+),(\d+)$/);
      if (!m || !ref) continue;
      cues.push({ start: seconds(m[1]), end: seconds(m[2]), url: new URL(ref[1], storyboard).href,
        x: +ref[2], y: +ref[3], w: +ref[4], h: +ref[5] });
    }
  }).catch(function () {});

  var preview = document.createElement("div");
  preview.id = "preview";
  preview.hidden = true;
  video.parentNode.insertBefore(preview, video.nextSibling);
  window.kinoPreview = preview;
  // The native controls' seek bar runs along the video's bottom edge.
  video.addEventListener("mousemove", function (e) {
    var box = video.getBoundingClientRect();
    var t = (e.clientX - box.left) / box.width * (video.duration || 0);
    var cue = null;
    for (var i = 0; i < cues.length; i++) {
      if (t >= cues[i].start && t < cues[i].end) { cue = cues[i]; break; }
    }
    if (!cue || e.clientY < box.bottom - 48) { preview.hidden = true; return; }
    preview.hidden = false;
    preview.style.width = cue.w + "px";
    preview.style.height = cue.h + "px";
    preview.style.backgroundImage = "url(\"" + cue.url + "\")";
    preview.style.backgroundPosition = (-cue.x) + "px " + (-cue.y) + "px";
    var left = Math.min(Math.max(e.clientX - cue.w / 2, box.left), box.right - cue.w);
    preview.style.left = (left + window.scrollX) + "px";
    preview.style.top = (box.bottom - 56 - cue.h + window.scrollY) + "px";
  });
  video.addEventListener("mouseleave", function () { preview.hidden = true; });
})();
