// The one way the browser tests start Debian's Chromium: headless, with
// the background networking this machine's closed network refuses turned
// off, and autoplay allowed. Under go test one Chromium serves the whole
// package (browser_server.mjs, its address in KINO_CHROMIUM_WS): launch
// connects to it, and closing what it returns closes only this script's
// pages and contexts.
import { chromium } from "playwright-core";

export const options = {
  executablePath: process.env.KINO_CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-quic", "--no-first-run", "--disable-sync",
    "--autoplay-policy=no-user-gesture-required"],
};

export function launch() {
  if (process.env.KINO_CHROMIUM_WS) return chromium.connect(process.env.KINO_CHROMIUM_WS);
  return chromium.launch(options);
}
