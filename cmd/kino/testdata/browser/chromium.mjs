// The one way the browser tests start Debian's Chromium: headless, with
// the background networking this machine's closed network refuses turned
// off, and autoplay allowed.
import { chromium } from "playwright-core";

export function launch() {
  return chromium.launch({
    executablePath: process.env.KINO_CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-quic", "--no-first-run", "--disable-sync",
      "--autoplay-policy=no-user-gesture-required"],
  });
}
