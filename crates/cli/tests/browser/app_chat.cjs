// A conversation in the web app (/app/) with what comes with it: a CSV attached with the
// picker, a screenshot pasted and a note dropped on the message box (chips, the image
// previewed, one removed), sent; the transcript shows the picture and the file's name; an
// upload the server refuses says why. Then the agent asks a question with options, answered
// by a click; an agent's file write and edit show as the lines they take out and put in; the
// inspector explains the last operation (a side panel, or a sheet on a phone); then the
// conversation is renamed and deleted. axe on every step. Run at 1280×800 and at 390×844
// (REIN_VIEWPORT). Screenshots go to OUT.
// Usage: node app_chat.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible } = require("./harness.cjs");

// A 1×1 PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";

run("app-chat", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot, dialogs, phone }) => {
  const says = (text) => page.waitForFunction((t) => document.querySelector(".transcript")?.textContent.includes(t), text, { timeout: 20000 });
  const idle = () => page.waitForSelector('.composer button[type=submit]:has-text("Send")', { timeout: 20000 });
  const chips = () => page.$$eval(".composer .chip", (cs) => cs.map((c) => c.textContent.replace("×", "").trim()));
  // Files as a paste or a drop gives them.
  const give = (event, files) =>
    page.evaluate(([ev, fs]) => {
      const data = new DataTransfer();
      for (const f of fs) data.items.add(new File([Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0))], f.name, { type: f.type }));
      const target = ev === "paste" ? document.getElementById("message") : document.querySelector(".composer");
      const e = ev === "paste" ? new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }) : new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true });
      target.dispatchEvent(e);
    }, [event, files]);
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  await page.waitForSelector(".composer .attach");
  // The message box keeps most of the width, on a phone too (the agent and Attach above it).
  const box = await page.evaluate(() => document.getElementById("message").getBoundingClientRect().width);
  if (box < page.viewportSize().width * (phone ? 0.7 : 0.4)) throw new Error(`a message box ${box} px wide`);
  // 1. Picker, paste, drop; one removed.
  await page.setInputFiles(".composer input[type=file]", [
    { name: "sales.csv", mimeType: "text/csv", buffer: Buffer.from("region,total\nnorth,30\nsouth,12\n") },
  ]);
  await page.waitForSelector(".composer .chip");
  await give("paste", [{ name: "screenshot.png", type: "image/png", b64: PNG }]);
  await page.waitForSelector(".composer .chip img");
  await give("drop", [{ name: "note.txt", type: "text/plain", b64: Buffer.from("dropped note").toString("base64") }]);
  await page.waitForFunction(() => document.querySelectorAll(".composer .chip").length === 3);
  const before = await chips();
  await accessible(page, "attachments");
  await shot("app-chat-1-attached");
  await page.click('.composer .chip button[aria-label="Remove note.txt"]');
  await page.waitForFunction(() => document.querySelectorAll(".composer .chip").length === 2);
  await page.fill("#message", "Which region leads?");
  await page.press("#message", "Enter");
  await says("North leads.");
  await idle();
  await page.waitForSelector(".message.user img.attached-image");
  const user = await page.textContent(".message.user");
  const chipsAfter = (await chips()).length;
  // 2. An upload over the server's limit: refused with why.
  await page.setInputFiles(".composer input[type=file]", [
    { name: "big.txt", mimeType: "text/plain", buffer: Buffer.alloc(2 * 1024 * 1024, 97) },
  ]);
  await page.waitForSelector(".composer [role=alert]");
  const refused = await page.textContent(".composer [role=alert]");
  // 3. A question with options, answered by a click.
  await page.fill("#message", "Ship it?");
  await page.press("#message", "Enter");
  await page.waitForSelector(".question .option", { timeout: 20000 });
  const asked = await page.textContent(".question .asked");
  const options = await page.$$eval(".question .option", (bs) => bs.map((b) => b.textContent));
  await accessible(page, "a question");
  await shot("app-chat-2-question");
  await page.click('.question .option[data-key="no"]');
  await says("Holding the release.");
  await idle();
  // 4. File edits as diffs (an agent that runs without asking).
  await page.selectOption(".composer select.agent", "writer");
  await page.fill("#message", "Write the notes.");
  await page.press("#message", "Enter");
  await says("Notes written.");
  await idle();
  await page.click('.tool[data-call="w2"] summary');
  const removed = (await page.textContent('.tool[data-call="w2"] .diff .del')).trim();
  const added = (await page.textContent('.tool[data-call="w2"] .diff .ins')).trim();
  await page.click('.tool[data-call="w1"] summary');
  const written = await page.$$eval('.tool[data-call="w1"] .diff .ins', (ls) => ls.map((l) => l.textContent.trim()));
  await accessible(page, "file edits as diffs");
  await shot("app-chat-3-diff");
  // 5. The inspector on the last operation: its steps as rows (as many as it counts), none
  // said to be running once it ended, what each model call admitted, usage per model.
  await page.click(".chat .inspect");
  await page.waitForSelector(".inspector .timeline tbody tr");
  const inspector = await page.evaluate(() => {
    const facts = Object.fromEntries([...document.querySelectorAll(".inspector .facts > div")].map((d) => [d.querySelector("dt").textContent, d.querySelector("dd").textContent]));
    const rows = [...document.querySelectorAll(".inspector .timeline tbody tr")].map((r) => [...r.children].map((c) => c.textContent));
    return {
      facts,
      rows,
      calls: document.querySelectorAll(".inspector .context details").length,
      items: [...document.querySelectorAll(".inspector .context details[open] tr[data-item]")].map((r) => r.dataset.item),
      usage: [...document.querySelectorAll(".inspector .usage-table tbody tr")].map((r) => r.children[0].textContent),
    };
  });
  // A sheet over the whole width on a phone, a panel beside the transcript on a desktop.
  const inspectorWidth = await page.evaluate(() => document.querySelector(".inspector").getBoundingClientRect().width);
  const width = page.viewportSize().width;
  if (phone ? inspectorWidth < width - 2 : inspectorWidth > width / 2) throw new Error(`the inspector is ${inspectorWidth} px wide on a ${width} px screen`);
  await accessible(page, "inspector");
  await shot("app-chat-4-inspector");
  await page.click(".inspector header button");
  // 6. Renamed, then deleted.
  await page.click(".topic-actions .rename");
  await page.fill('.topic-actions input[aria-label="Title"]', "Release talk");
  await page.click(".topic-actions button[type=submit]");
  await page.waitForFunction(() => document.querySelector(".transcript h2")?.textContent === "Release talk");
  await page.waitForFunction(() => [...document.querySelectorAll(".topic .title")].some((t) => t.textContent === "Release talk"));
  dialogs.push(true);
  await page.click(".topic-actions .delete");
  await page.waitForSelector(".chat > .pick, .chat .pick");
  await page.waitForFunction(() => !document.querySelector(".topic"));
  await shot("app-chat-5-deleted");
  return { before, user, chipsAfter, refused, asked, options, removed, added, written, inspector };
});
