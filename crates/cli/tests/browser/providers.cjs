// Drives the web UI in headless Chromium through the providers dialog: store a key for a
// provider (the field is a password field, emptied after saving), see it listed as "your key"
// without the key, be told why a bad base URL is refused, remove a provider. Screenshots go
// to OUT.
// Usage: node providers.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run } = require("./harness.cjs");

run("providers", { viewport: { width: 1280, height: 900 } }, async ({ page, base, shot }) => {
  // The test reads it from this line: what it types is what must not come back.
  const key = "sk-ui-3c9f0e2a71d4";
  await page.goto(base + "/");
  await page.waitForSelector("#app:not([hidden])");
  await page.click("#providers-open");
  await page.waitForSelector("#providers-view[open]");
  const empty = await page.textContent("#pv-list");
  const keyType = await page.getAttribute("#pv-key", "type");
  await page.fill("#pv-provider", "openai");
  await page.fill("#pv-key", key);
  await page.click("#pv-save");
  await page.waitForSelector("#pv-list li[data-provider=openai]");
  const saved = await page.textContent("#pv-said");
  const keyAfter = await page.inputValue("#pv-key");
  const listed = await page.textContent("#pv-list");
  await shot("providers-1");
  await page.fill("#pv-provider", "my-gateway");
  await page.fill("#pv-base", "https://user:pw@gw.example/v1");
  await page.click("#pv-save");
  await page.waitForFunction(() => /credentials/.test(document.querySelector("#pv-said").textContent));
  const refused = await page.textContent("#pv-said");
  await page.click("#pv-list li[data-provider=openai] .remove");
  await page.waitForSelector("#pv-list li.empty");
  const html = await page.content();
  return { empty, keyType, saved, keyAfter, listed, refused, pageHoldsKey: html.includes(key) };
});
