// Speech in the web app (/app/): an answer read aloud with its play button (the server's
// speech model, the audio played to its end), and a message spoken into the microphone (a
// fake one: Chromium's test tone) written into the message box by the transcription model.
// Screenshots go to OUT.
// Usage: node app_speech.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run, accessible } = require("./harness.cjs");

const fakeMicrophone = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream", "--autoplay-policy=no-user-gesture-required"];

run("app-speech", { viewport: { width: 1280, height: 900 }, args: fakeMicrophone }, async ({ page, base, shot }) => {
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  // The microphone is offered: the server writes down.
  await page.waitForSelector(".composer .mic", { timeout: 20000 });
  await page.fill("#message", "What is the answer?");
  await page.press("#message", "Enter");
  await page.waitForSelector(".message.assistant >> text=The answer is forty-two.", { timeout: 20000 });
  // Listen: the answer spoken, played to its end without an error.
  const listen = ".message.assistant .listen";
  await page.click(listen);
  await page.waitForSelector(listen + '[aria-pressed="true"]', { timeout: 20000 });
  await page.waitForSelector(listen + '[aria-pressed="false"]:not([disabled])', { timeout: 20000 });
  const failed = await page.$(".listen-error");
  if (failed) throw new Error("listen: " + (await failed.textContent()));
  // Speak: record a moment of the fake microphone, then have it written down.
  await page.click(".composer .mic");
  await page.waitForSelector('.composer .mic[aria-pressed="true"]', { timeout: 10000 });
  await page.waitForTimeout(1200);
  await page.click(".composer .mic");
  await page.waitForFunction(() => document.querySelector("#message").value === "Hello from the microphone.", null, {
    timeout: 20000,
  });
  await accessible(page, "the play and microphone buttons");
  await shot("app-speech");
});
