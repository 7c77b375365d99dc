// Drives the web UI in headless Chromium through attachments: pick a CSV, paste a screenshot
// (a PNG on the clipboard, as a browser's paste gives it), see both as chips, remove one and
// add it again, send the message; the transcript shows the picture and the file's name. An
// upload the server refuses says why. Screenshots go to OUT.
// Usage: node attach.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run } = require("./harness.cjs");

// A 1×1 PNG.
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==",
  "base64",
);

run("attach", { viewport: { width: 1280, height: 900 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.setInputFiles("#attach-input", [
    { name: "sales.csv", mimeType: "text/csv", buffer: Buffer.from("region,total\nnorth,30\nsouth,12\n") },
  ]);
  await page.waitForSelector("#attached .chip");
  // A screenshot pasted into the message box.
  await page.focus("#input");
  await page.evaluate((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], "screenshot.png", { type: "image/png" }));
    document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }, PNG.toString("base64"));
  await page.waitForFunction(() => document.querySelectorAll("#attached .chip").length === 2);
  const chips = await page.textContent("#attached");
  await shot("attach-1");
  await page.fill("#input", "Which region leads?");
  await page.click("#send");
  await page.waitForFunction(() => document.getElementById("messages").textContent.includes("North leads."), null, { timeout: 20000 });
  await page.waitForSelector("#messages .msg.user img.attached");
  const user = await page.textContent("#messages .msg.user");
  const chipsAfter = await page.evaluate(() => document.getElementById("attached").hidden);
  await shot("attach-2");
  // A file over the server's limit: refused, with the server's reason in the page.
  await page.setInputFiles("#attach-input", [
    { name: "big.txt", mimeType: "text/plain", buffer: Buffer.alloc(2 * 1024 * 1024, 97) },
  ]);
  await page.waitForFunction(() => !document.getElementById("error").hidden);
  const refused = await page.textContent("#error");
  return { chips, user, chipsAfter, refused };
});
