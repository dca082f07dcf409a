// kino's /play page: plays the playlist named by the video's data-src with
// native HLS where the browser has it (Safari, iOS), hls.js elsewhere.
// Loaded from kino itself; the page's CSP allows no inline script.
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
})();
