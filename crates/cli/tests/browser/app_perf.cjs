// The web app with big data, measured in Chromium: the initial transfer (the app's script and
// stylesheet, gzipped, as loaded), the time from a click on a conversation to its latest
// message on screen, how many messages the page draws then, and the longest frame while
// scrolling from the latest message to the first (the window of drawn messages moving as
// the top comes into view). Measured on a conversation of 10,000 messages ("Long") and, as
// the anchor in the same run, of 100 ("Short"). Prints figures; the test asserts only that
// the list is windowed and that scrolling reaches the first message.
// Usage: node app_perf.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run } = require("./harness.cjs");

run("app-perf", { viewport: { width: 1280, height: 800 } }, async ({ page, base }) => {
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  await page.waitForSelector(".topic");
  const transfer = await page.evaluate(() =>
    performance
      .getEntriesByType("resource")
      .filter((r) => /\/app\/app\.(js|css)$/.test(r.name))
      .reduce((n, r) => n + r.encodedBodySize, 0),
  );
  const listMs = await page.evaluate(() => performance.now());
  const measure = async (title, last, first) => {
    // From the click to the latest message drawn.
    const openMs = await page.evaluate(
      ([title, last]) =>
        new Promise((done) => {
          const button = [...document.querySelectorAll(".topic")].find((b) => b.querySelector(".title").textContent === title);
          const t0 = performance.now();
          button.click();
          const check = () => {
            const rows = document.querySelectorAll(".messages > li.message");
            const end = rows[rows.length - 1];
            if (end && end.textContent.includes(last)) done(performance.now() - t0);
            else requestAnimationFrame(check);
          };
          check();
        }),
      [title, last],
    );
    const drawn = await page.evaluate(() => document.querySelectorAll(".messages > li.message").length);
    await page.waitForTimeout(100);
    // Up to the first message, 1,000 px a frame; the longest gap between frames.
    const scroll = await page.evaluate(
      (first) =>
        new Promise((done) => {
          let last = performance.now();
          let worst = 0;
          let frames = 0;
          const slow = [];
          const step = (now) => {
            worst = Math.max(worst, now - last);
            if (now - last > 50) slow.push(Math.round(now - last));
            last = now;
            frames++;
            window.scrollBy(0, -1000);
            const top = document.querySelector(".messages > li.message");
            const reached = window.scrollY === 0 && !document.querySelector(".messages .earlier") && top && top.textContent.includes(first);
            const rows = document.querySelectorAll(".messages > li.message").length;
            if (reached || frames > 20000) done({ worst, frames, reached: !!reached, slow, rows });
            else requestAnimationFrame(step);
          };
          requestAnimationFrame((now) => {
            last = now;
            requestAnimationFrame(step);
          });
        }),
      first,
    );
    return { openMs: Math.round(openMs), drawn, longestFrameMs: Math.round(scroll.worst * 10) / 10, frames: scroll.frames, reached: scroll.reached, over50: scroll.slow.length, drawnAtTop: scroll.rows };
  };
  const short = await measure("Short", "Answer 50.", "Question 1.");
  const long = await measure("Long", "Answer 5000.", "Question 1.");
  // The viewport only: the whole page is 10,000 messages tall now.
  await page.screenshot({ path: `${process.argv[3]}/app-perf-top-of-long.png` });
  return { transfer, listMs: Math.round(listMs), short, long };
});
