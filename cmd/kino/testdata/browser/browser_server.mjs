// Starts one Chromium for every browser test of the package and prints
// the address scripts connect to (KINO_CHROMIUM_WS) on a line of its own.
// It runs until its standard input closes: when go test ends, however it
// ends.
// Usage: node browser_server.mjs
import { chromium } from "playwright-core";
import { options } from "./chromium.mjs";

const server = await chromium.launchServer(options);
console.log(server.wsEndpoint());
process.stdin.on("data", () => {});
process.stdin.on("end", async () => {
  await server.close();
  process.exit(0);
});
