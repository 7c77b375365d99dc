// An answer in Markdown in the web app (/app/): a table, a code block coloured by its language
// with a copy button, a
// link that opens elsewhere, and the HTML a model might write (a script, an image with an
// error handler, a javascript: link) shown harmlessly: no image is loaded at all (a URL a
// model chose can carry data out). Screenshots go to OUT.
// Usage: node app_markdown.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run, accessible } = require("./harness.cjs");

run("app-markdown", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  await page.fill("#message", "Show me a table.");
  await page.press("#message", "Enter");
  await page.waitForSelector(".markdown table", { timeout: 20000 });
  const cells = await page.$$eval(".markdown td", (c) => c.map((x) => x.textContent));
  if (JSON.stringify(cells) !== JSON.stringify(["17 * 23", "391"])) throw new Error("table: " + cells);
  if (!(await page.textContent(".markdown pre code")).includes("fn main()")) throw new Error("code block");
  // Coloured as Rust: `fn` a keyword, `main` a function's name.
  const keyword = await page.textContent(".markdown pre code.hljs .hljs-keyword");
  if (keyword !== "fn") throw new Error("not highlighted: " + (await page.innerHTML(".markdown pre code")));
  await page.click(".markdown pre button.copy");
  if ((await page.textContent(".markdown pre button.copy")) !== "Copied") throw new Error("copy button");
  const link = await page.$eval(".markdown a[href^='https://']", (a) => [a.target, a.rel]);
  if (link[0] !== "_blank" || !link[1].includes("noopener")) throw new Error("link: " + link);
  // Nothing the model wrote ran or stayed executable.
  const unsafe = await page.evaluate(() => ({
    ran: window.pwned === true,
    scripts: document.querySelectorAll(".markdown script").length,
    handlers: [...document.querySelectorAll(".markdown *")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
    js: [...document.querySelectorAll(".markdown a")].filter((a) => a.getAttribute("href")?.startsWith("javascript:")).length,
    images: document.querySelectorAll(".markdown img").length,
  }));
  if (unsafe.ran || unsafe.scripts || unsafe.handlers || unsafe.js || unsafe.images) throw new Error("unsafe: " + JSON.stringify(unsafe));
  await accessible(page, "an answer in Markdown");
  await shot("app-markdown");
});
