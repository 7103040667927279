// The first paint as a person sees it: Playwright opens the Pi Pruner view the way a person does (a
// click on its activity-bar icon) and an observer in the page notes the moment the Sessions view's
// first row shows its reclaim (`…k→…`) in the rendered workbench. Times are epoch milliseconds at
// sub-millisecond precision (timeOrigin + now), comparable with the extension host's on one machine.
// The same init script runs in every frame Playwright sees, so in the context timeline's webview
// too, where it notes the moment the chart holds every request (the page's `data-drawn`).

const CONTAINER = ".activitybar .action-item a[aria-label^='Pi Pruner']";
const SESSIONS_HEADER = ".pane-header[aria-label^='Sessions']";
// The bench's one-item floor (test/vscode/floor/one-item), opened and watched the same way.
const FLOOR_CONTAINER = ".activitybar .action-item a[aria-label^='Floor One Item']";
const FLOOR_HEADER = ".pane-header[aria-label^='Floor Items']";

/**
 * Runs in each frame before its scripts. In the workbench: reports the first top-level row of the
 * view under `header` whose description holds `mark` (the Sessions row with its reclaim) once
 * through `window[report]`. In a frame holding the timeline's chart: reports once, through
 * `window[timelineReport]`, the frame that draws the chart with all its points.
 */
export function paintObserver({ report, header, mark = "→", timelineReport }) {
  const now = () => performance.timeOrigin + performance.now();
  // The document itself, which exists before its first element does.
  const observeDocument = (observer, options) => observer.observe(document, { childList: true, subtree: true, ...options });
  if (window !== window.top) {
    let reported = false;
    // `by`: whether the observer saw the change as it happened or the 20 ms check found it after.
    const drawn = (by) => {
      if (reported) return;
      const count = document.body?.dataset.drawn;
      if (!count || !document.getElementById("chart")) return;
      reported = true;
      const seenAt = now();
      timelineObserver.disconnect();
      requestAnimationFrame(() => window[timelineReport](JSON.stringify({ seenAt, paintedAt: now(), requests: Number(count), by })));
    };
    const timelineObserver = new MutationObserver(() => drawn("observer"));
    // A page written into the frame later (a webview's is) comes with a new document, and the
    // observer is not carried over to it: watched again whenever the document is a new one.
    let watched;
    const watch = setInterval(() => {
      if (reported) return clearInterval(watch);
      if (document !== watched) {
        watched = document;
        timelineObserver.disconnect();
        observeDocument(timelineObserver, { attributes: true, attributeFilter: ["data-drawn"] });
      }
      drawn("poll");
    }, 20);
    return;
  }
  let done = false;
  const check = () => {
    if (done) return;
    const panes = [...document.querySelectorAll(header)].map((h) => h.closest(".pane")).filter(Boolean);
    for (const d of panes.flatMap((pane) => [...pane.querySelectorAll(".monaco-list-row[aria-level='1'] .label-description")])) {
      const text = d.textContent ?? "";
      const box = d.getBoundingClientRect();
      if (!text.includes(mark) || box.width <= 0 || box.height <= 0) continue;
      done = true;
      const seenAt = now();
      observer.disconnect();
      // The frame that draws it: the next animation frame after the DOM holds the row.
      requestAnimationFrame(() => window[report](JSON.stringify({ seenAt, paintedAt: now(), text })));
      return;
    }
  };
  const observer = new MutationObserver(check);
  observeDocument(observer, { characterData: true });
}

/**
 * Opens the Pi Pruner container once its icon is there (clicking only while the Sessions view is
 * hidden, since a second click would close it). `onClick` hears the epoch ms of each click;
 * `container` and `header` open another view container the same way (the bench's floor).
 */
export async function openPiPrunerView(page, { onClick = () => {}, timeoutMs = 60_000, container = CONTAINER, header: headerSelector = SESSIONS_HEADER } = {}) {
  const deadline = Date.now() + timeoutMs;
  const icon = page.locator(container).first();
  const header = page.locator(headerSelector).first();
  while (Date.now() < deadline) {
    if (await header.isVisible().catch(() => false)) return;
    if (await icon.isVisible().catch(() => false)) {
      const at = performance.timeOrigin + performance.now();
      if (await icon.click({ timeout: 5000 }).then(() => true, () => false)) onClick(at);
      await header.waitFor({ state: "visible", timeout: 3000 }).catch(() => {});
    } else await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the view under ${headerSelector} did not open within ${timeoutMs} ms`);
}

export const PAINT_REPORT = "piPrunerPaintSeen";
export const TIMELINE_REPORT = "piPrunerTimelineSeen";
export const paintObserverArgs = { report: PAINT_REPORT, header: SESSIONS_HEADER, timelineReport: TIMELINE_REPORT };
/** The same probe on the one-item floor: its icon, its view, and the mark its one row carries. */
export const floorProbe = { container: FLOOR_CONTAINER, header: FLOOR_HEADER, observerArgs: { ...paintObserverArgs, header: FLOOR_HEADER, mark: "▪" } };
