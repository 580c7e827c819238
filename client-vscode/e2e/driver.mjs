// Drives a code-server (VS Code in a browser) that has the cudalens .vsix installed, through
// headless Chromium with playwright-core, and checks what a user sees. Started by run.sh.
//
// Environment: E2E_URL (code-server, e.g. http://127.0.0.1:8080), E2E_WORKSPACE (folder with
// saxpy.cu, saxpy.cu.spec and broken.cu), E2E_SHOTS (screenshot folder), E2E_CHROMIUM
// (browser executable), E2E_CHECK_NVCC ("1": expect nvcc's compile-error squiggle),
// E2E_EXPECT (JSON from tests/data/lsp/expected.py: the device, the baseline's lens, and the
// best and next-best offers' labels, speedups and sources, and the kernel report's number of
// chart points, all from the optimizer's search run on saxpy against the model runner the
// server uses, tests/data/lsp/model_runner.py).
// The diff editor is checked as the user sees it: once a diff tab opens, the test waits (a
// condition over the DOM, at most 30 s) until the left pane shows the original's removed lines
// and the right pane the candidate's added lines, with Monaco's deleted/inserted marks, and
// the Accept and Reject buttons are visible; only then is the screenshot taken. A blank or
// half-rendered diff editor fails, naming the lines it lacks.
// Exits 1 on the first failed check, naming it; screenshots taken so far stay in E2E_SHOTS.
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const URL = process.env.E2E_URL;
const WS = process.env.E2E_WORKSPACE;
const SHOTS = process.env.E2E_SHOTS;
const SAXPY = join(WS, "saxpy.cu");
const ORIGINAL = readFileSync(SAXPY, "utf8");
const EXPECT = JSON.parse(process.env.E2E_EXPECT || "null");
if (!EXPECT) {
  console.error("e2e: expected E2E_EXPECT (JSON of tests/data/lsp/expected.py saxpy), found none");
  process.exit(2);
}
const t0 = Date.now();

function step(text) {
  console.log(`e2e [${((Date.now() - t0) / 1000).toFixed(1)} s] ${text}`);
}

function check(ok, what) {
  if (!ok) {
    throw new Error(`check failed: ${what}`);
  }
  step(`ok: ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.E2E_CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
let shot = 0;
async function screenshot(name) {
  shot += 1;
  const file = join(SHOTS, `${String(shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file });
  step(`screenshot ${file}`);
}

async function openFile(name) {
  const tab = page.locator(`.tab[data-resource-name="${name}"]`);
  if (await tab.count() === 0) {
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible" });
    await input.fill(name);
    await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor();
    await page.keyboard.press("Enter");
  } else {
    await tab.first().click();
  }
  await page.locator(`.tab.active[data-resource-name="${name}"]`).waitFor();
}

async function runCommand(title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
  await page.keyboard.press("Enter");
}

const lens = (text) => page.locator(".codelens-decoration a, .codelens-decoration span", { hasText: text });
const status = page.locator(".statusbar-item", { hasText: "cudalens:" });
const toast = (text) => page.locator(".notifications-toasts .notification-toast", { hasText: text });
const candidateTab = (label) => `saxpy.cu ↔ ${label} (candidate, read-only)`;

/** Waits until the first "show diff" lens is one element that stays in the page for 500 ms
 * (VS Code replaces the lens elements when it re-renders them after a refresh, and a click on
 * an element being replaced is lost). */
async function stableOfferLens() {
  const first = () => lens("faster candidate: show diff").first().elementHandle({ timeout: 20000 });
  let handle = await first();
  for (let i = 0; i < 40; i += 1) {
    await page.waitForTimeout(500);
    const now = await first();
    if (await handle.evaluate((a, b) => a === b && a.isConnected, now)) {
      return;
    }
    step("the lens was re-rendered; waiting for it to settle");
    handle = now;
  }
  throw new Error("check failed: the 'show diff' lens was re-rendered for 20 s without settling");
}

/** The non-blank lines of `a` (trimmed) that `b` does not have: what a diff from `a` to `b`
 * shows as removed, or from `b` to `a` as added. */
function linesOnlyIn(a, b) {
  const other = new Set(b.split("\n").map((l) => l.trim()));
  return a.split("\n").map((l) => l.trim()).filter((l) => l && !other.has(l));
}

/** The diff editor's two panes as the user sees them: each pane's rendered lines (Monaco's
 * `.view-line` elements, in screen order, spaces normalized) and how many lines it marks as
 * inserted (right) or deleted (left). */
async function diffPanes() {
  return page.evaluate(() => {
    const norm = (t) => t.replace(/\u00a0/g, " ").trim();
    const pane = (side, mark) => {
      const ed = document.querySelector(`.monaco-diff-editor .editor.${side}`);
      if (!ed) {
        return null;
      }
      const rows = [...ed.querySelectorAll(".view-lines .view-line")]
        .map((e) => ({ top: parseFloat(e.style.top || "0"), text: norm(e.textContent) }))
        .sort((x, y) => x.top - y.top).map((r) => r.text);
      const box = ed.getBoundingClientRect();
      return { lines: rows, marked: ed.querySelectorAll(mark).length,
        width: Math.round(box.width), height: Math.round(box.height) };
    };
    return { left: pane("original", ".line-delete, .char-delete"),
      right: pane("modified", ".line-insert, .char-insert") };
  });
}

/** Whether one of the rendered `lines` holds `text`: a rendered line also carries what the
 * editor adds to it (the inlay hint after the kernel's signature, in the left pane). */
function shows(lines, text) {
  return lines.some((l) => l.includes(text));
}

/** Waits (at most 30 s) until the diff editor has rendered the candidate: the left pane shows
 * every line of `original` the candidate removes and the right pane every line `candidate`
 * adds, both panes are on screen and carry the diff's deleted/inserted marks. Fails naming
 * the missing lines otherwise (a blank or half-rendered editor). */
async function checkDiffRendered(original, candidate, label) {
  const removed = linesOnlyIn(original, candidate);
  const added = linesOnlyIn(candidate, original);
  check(added.length > 0, `the candidate ${label} changes lines of saxpy.cu (${added.length} added, ${removed.length} removed)`);
  const rendered = (panes, want) => {
    const { left, right } = panes;
    return left !== null && right !== null && left.width > 100 && right.width > 100 &&
      left.height > 100 && right.height > 100 && right.marked > 0 &&
      (want.removed.length === 0 || left.marked > 0) &&
      want.removed.every((l) => shows(left.lines, l)) &&
      want.added.every((l) => shows(right.lines, l));
  };
  const want = { removed, added };
  const deadline = Date.now() + 30000;
  let panes = await diffPanes();
  while (!rendered(panes, want) && Date.now() < deadline) {
    await page.waitForTimeout(250);
    panes = await diffPanes();
  }
  if (!rendered(panes, want)) {
    const missingLeft = panes.left ? removed.filter((l) => !shows(panes.left.lines, l)) : removed;
    const missingRight = panes.right ? added.filter((l) => !shows(panes.right.lines, l)) : added;
    throw new Error(`check failed: the diff editor did not render ${label} within 30 s: ` +
      `left pane ${JSON.stringify(panes.left && { ...panes.left, lines: panes.left.lines.length })}, ` +
      `missing ${JSON.stringify(missingLeft)}; right pane ` +
      `${JSON.stringify(panes.right && { ...panes.right, lines: panes.right.lines.length })}, ` +
      `missing ${JSON.stringify(missingRight)}`);
  }
  check(true, `the diff editor's left pane shows the original's ${removed.length} removed lines ` +
    `(${panes.left.marked} marked deleted), the right pane the candidate's ${added.length} added ` +
    `lines (${panes.right.marked} marked inserted), e.g. '${added[0]}'`);
  for (const [name, text] of [["Accept", "Accept Candidate"], ["Reject", "Reject Candidate"]]) {
    // a button on screen: laid out with a size, inside the window, not hidden by CSS (the
    // title bar re-renders its actions, so the condition is polled over the DOM)
    const box = await page.waitForFunction((label) => {
      for (const a of document.querySelectorAll(`.editor-actions a[aria-label^='${label}']`)) {
        const r = a.getBoundingClientRect();
        const style = getComputedStyle(a);
        if (r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight &&
            r.left >= 0 && r.right <= window.innerWidth && style.visibility !== "hidden" &&
            style.display !== "none" && a.checkVisibility()) {
          return { x: Math.round(r.left), y: Math.round(r.top), width: Math.round(r.width),
            height: Math.round(r.height) };
        }
      }
      return null;
    }, text, { timeout: 10000 }).then((h) => h.jsonValue(), () => null);
    check(box !== null, `the ${name} button is visible in the diff editor's title bar (${JSON.stringify(box)})`);
  }
}

/** Clicks the first "show diff" lens; the active diff tab's title once it is open. A click
 * that lands while VS Code re-renders the lenses (after a refresh) is lost: it waits for the
 * lens to settle (stableOfferLens) and clicks again, for at most 20 s. */
async function openOfferedDiff() {
  const tab = page.locator(".tab.active", { hasText: "(candidate, read-only)" });
  const deadline = Date.now() + 20000;
  for (;;) {
    await stableOfferLens();
    await lens("faster candidate: show diff").first().click();
    try {
      await tab.waitFor({ timeout: 3000 });
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        throw err;
      }
      step("the lens click opened no diff (lenses re-rendering?); clicking again");
    }
  }
  return (await tab.locator(".label-name").first().textContent()).trim();
}

/** The frame of the kernel report's webview (VS Code nests the page in two iframes). */
async function reportFrame(timeout) {
  const deadline = Date.now() + timeout;
  for (;;) {
    for (const frame of page.frames()) {
      try {
        if (await frame.locator("#chart svg").count() > 0) {
          return frame;
        }
      } catch {
        // a frame that went away meanwhile
      }
    }
    if (Date.now() > deadline) {
      throw new Error(`no webview frame with the report's chart after ${timeout} ms`);
    }
    await page.waitForTimeout(300);
  }
}

let failed = false;
try {
  await page.goto(`${URL}/?folder=${encodeURIComponent(WS)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
  step("workbench loaded");

  // 1. the code lens above the kernel, and the runner's status
  await openFile("saxpy.cu");
  await lens("Optimize").first().waitFor({ timeout: 60000 });
  check(await lens("Optimize").count() === 1, "one 'Optimize' code lens above the kernel");
  await status.waitFor({ timeout: 20000 });
  await page.waitForFunction(() => [...document.querySelectorAll(".statusbar-item")]
    .some((e) => e.textContent.includes("cudalens: idle")), null, { timeout: 20000 });
  check((await status.first().textContent()).includes("cudalens: idle"),
    "the status bar says the runner is idle");
  await screenshot("code-lens");

  // 2. nvcc's compile error as a squiggle on the broken line
  if (process.env.E2E_CHECK_NVCC === "1") {
    await openFile("broken.cu");
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ timeout: 90000 });
    await page.keyboard.press("Control+Shift+M");
    const problem = page.locator(".markers-panel .monaco-list-row", { hasText: "missing_factor" });
    await problem.first().waitFor({ timeout: 20000 });
    const text = await problem.first().textContent();
    check(/identifier "missing_factor" is undefined/.test(text) && text.includes("[Ln 8"),
      `nvcc's error is on line 8 of broken.cu (problems panel: ${text.trim()})`);
    await screenshot("compile-error");
    await page.keyboard.press("Control+Shift+M");
  } else {
    step("SKIPPED: the compile-error squiggle (nvcc is not on PATH)");
  }

  // 3. optimize the kernel under the cursor, against the model runner
  await openFile("saxpy.cu");
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+G");
  await page.keyboard.type("6");
  await page.keyboard.press("Enter");
  await runCommand("cudalens: Optimize Kernel at Cursor");
  await toast("Optimize saxpy").first().waitFor({ timeout: 30000 });
  await toast("Optimize saxpy").first().locator(".monaco-button", { hasText: "Cancel" }).first()
    .waitFor({ timeout: 10000 });
  check(true, "a progress notification 'Optimize saxpy' with a Cancel button appeared");
  await page.waitForFunction(() => [...document.querySelectorAll(".statusbar-item")]
    .some((e) => e.textContent.includes("optimizing saxpy")), null, { timeout: 20000 });
  check(true, "the status bar says 'optimizing saxpy' while it runs");
  await page.waitForTimeout(600); // let the notification finish sliding in
  await screenshot("optimizing");
  await lens("faster candidate: show diff").first().waitFor({ timeout: 120000 });
  const idle = `idle · ${EXPECT.device}`;
  await page.waitForFunction((want) => [...document.querySelectorAll(".statusbar-item")]
    .some((e) => e.textContent.includes(want)), idle, { timeout: 20000 });
  check(true, `after the run the status bar names the GPU: '${idle}'`);
  const measured = (await page.locator(".codelens-decoration").first().textContent()).trim();
  check(measured.startsWith(EXPECT.measuredLens),
    `the lens shows the baseline's modelled time '${EXPECT.measuredLens}' (${measured})`);
  const offer = (await lens("faster candidate: show diff").first().textContent()).trim();
  check(offer === EXPECT.best.lens,
    `the lens offers the winner's speedup, ${EXPECT.best.x} (${offer})`);
  await screenshot("results");

  // 3b. the kernel report in a webview beside the editor, from the stored run; then closed
  await lens("Show kernel report").first().click();
  const reportTab = page.locator(".tab", { hasText: "cudalens report: saxpy" });
  await reportTab.first().waitFor({ timeout: 20000 });
  const report = await reportFrame(30000);
  const points = await report.locator("#chart svg g[id^='point-']").count();
  check(points === EXPECT.reportPoints,
    `the report's roofline has ${EXPECT.reportPoints} points, the original and each verified candidate (${points})`);
  const winner = await report.locator("#chart svg g[id^='point-'][data-role='winner']").getAttribute("data-label");
  check(winner === EXPECT.best.label, `the report marks the winner ${EXPECT.best.label} (${winner})`);
  const header = await report.locator("header").textContent();
  check(header.includes(EXPECT.device), `the report names the device '${EXPECT.device}'`);
  await reportTab.first().click();
  await page.keyboard.press("Control+K"); // View: Toggle Maximized Editor Group, for the picture
  await page.keyboard.press("Control+M");
  await page.waitForTimeout(800);
  await screenshot("report");
  await page.keyboard.press("Control+W");
  await reportTab.first().waitFor({ state: "detached", timeout: 10000 });
  await openFile("saxpy.cu");

  // 4. the diff editor over a read-only candidate document; reject leaves the file as it was
  const firstTab = await openOfferedDiff();
  await page.locator(".monaco-diff-editor").first().waitFor({ timeout: 20000 });
  const diffTab = page.locator(".tab.active", { hasText: "(candidate, read-only)" });
  check(firstTab === candidateTab(EXPECT.best.label),
    `the diff editor opened on the winner: ${firstTab}`);
  await checkDiffRendered(ORIGINAL, EXPECT.best.source, EXPECT.best.label);
  await screenshot("diff");
  await page.locator(".editor-actions a[aria-label^='Reject Candidate']").first().click();
  await toast("Rejected").first().waitFor({ timeout: 20000 });
  await diffTab.waitFor({ state: "detached", timeout: 10000 });
  check(readFileSync(SAXPY, "utf8") === ORIGINAL, "after reject the file on disk is unchanged");
  await screenshot("rejected");

  // 5. the next candidate: accept writes it to disk. Both offers may read the same in the
  // lens ("1.28x faster"); the diff tab names the candidate. VS Code may show its cached
  // lenses for a moment when the file comes back into view, so a tab of the rejected
  // candidate is closed and the lens clicked again, for at most 20 s.
  const want = candidateTab(EXPECT.second.label);
  const deadline = Date.now() + 20000;
  let secondTab = await openOfferedDiff();
  while (secondTab !== want && Date.now() < deadline) {
    step(`a stale lens opened '${secondTab}'; closing it and asking again`);
    await page.keyboard.press("Control+W");
    await page.locator(".tab", { hasText: "(candidate, read-only)" }).first()
      .waitFor({ state: "detached", timeout: 10000 });
    await page.waitForTimeout(500);
    secondTab = await openOfferedDiff();
  }
  check(secondTab === want, `the next-best candidate is offered: ${secondTab} (want ${want})`);
  await checkDiffRendered(ORIGINAL, EXPECT.second.source, EXPECT.second.label);
  await screenshot("diff-second");
  await page.locator(".editor-actions a[aria-label^='Accept Candidate']").first().click();
  await toast("Applied").first().waitFor({ timeout: 20000 });
  await page.locator(".tab", { hasText: "(candidate, read-only)" }).first()
    .waitFor({ state: "detached", timeout: 10000 });
  const now = readFileSync(SAXPY, "utf8");
  check(now === EXPECT.second.source && now !== ORIGINAL,
    `after accept the file on disk is the source sent for ${EXPECT.second.label}`);
  await lens("(applied candidate)").first().waitFor({ timeout: 20000 });
  check(await page.locator(".tab.dirty", { hasText: "saxpy.cu" }).count() === 0,
    "the editor is saved: its text is the file on disk, and the lens measures the applied candidate");
  await screenshot("accepted");
} catch (err) {
  failed = true;
  console.error(`e2e FAILED: ${err.message}`);
  try {
    await screenshot("failure");
  } catch {
    // the page is gone
  }
} finally {
  await browser.close();
}
step(failed ? "failed" : "all checks passed");
process.exit(failed ? 1 : 0);
