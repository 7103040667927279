// The first paint as a person sees it: Playwright opens the Pi Pruner view the way a person does (a
// click on its activity-bar icon) and an observer in the page notes the moment the Sessions view's
// first row shows its reclaim (`…k→…`) in the rendered workbench. Times are epoch milliseconds at
// sub-millisecond precision (timeOrigin + now), comparable with the extension host's on one machine.

const CONTAINER = ".activitybar .action-item a[aria-label^='Pi Pruner']";
const SESSIONS_HEADER = ".pane-header[aria-label^='Sessions']";

/** Runs in the page before the workbench's scripts; reports once through `window[report]`. */
export function paintObserver({ report, header }) {
  const now = () => performance.timeOrigin + performance.now();
  let done = false;
  const check = () => {
    if (done) return;
    const panes = [...document.querySelectorAll(header)].map((h) => h.closest(".pane")).filter(Boolean);
    for (const d of panes.flatMap((pane) => [...pane.querySelectorAll(".monaco-list-row[aria-level='1'] .label-description")])) {
      const text = d.textContent ?? "";
      const box = d.getBoundingClientRect();
      if (!text.includes("→") || box.width <= 0 || box.height <= 0) continue;
      done = true;
      const seenAt = now();
      observer.disconnect();
      // The frame that draws it: the next animation frame after the DOM holds the row.
      requestAnimationFrame(() => window[report](JSON.stringify({ seenAt, paintedAt: now(), text })));
      return;
    }
  };
  const observer = new MutationObserver(check);
  const start = () => observer.observe(document.documentElement, { childList: true, subtree: true, characterData: true });
  if (document.documentElement) start();
  else document.addEventListener("readystatechange", start, { once: true });
}

/**
 * Opens the Pi Pruner container once its icon is there (clicking only while the Sessions view is
 * hidden, since a second click would close it). `onClick` hears the epoch ms of each click.
 */
export async function openPiPrunerView(page, { onClick = () => {}, timeoutMs = 60_000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  const icon = page.locator(CONTAINER).first();
  const header = page.locator(SESSIONS_HEADER).first();
  while (Date.now() < deadline) {
    if (await header.isVisible().catch(() => false)) return;
    if (await icon.isVisible().catch(() => false)) {
      const at = performance.timeOrigin + performance.now();
      if (await icon.click({ timeout: 5000 }).then(() => true, () => false)) onClick(at);
      await header.waitFor({ state: "visible", timeout: 3000 }).catch(() => {});
    } else await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the Pi Pruner view did not open within ${timeoutMs} ms`);
}

export const PAINT_REPORT = "piPrunerPaintSeen";
export const paintObserverArgs = { report: PAINT_REPORT, header: SESSIONS_HEADER };
