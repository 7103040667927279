// Hand-written SVG charts: line charts (linear or log axes) and grouped bar charts with min–max
// whiskers. Plain SVG 1.1, no scripts, readable on GitHub in light and dark themes (own background).

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"];
const FONT = `font-family="-apple-system,Segoe UI,Helvetica,Arial,sans-serif"`;

function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function fmt(value: number): string {
  const abs = Math.abs(value);
  if (abs === 0) return "0";
  if (abs >= 1e6) return `${+(value / 1e6).toPrecision(3)}M`;
  if (abs >= 1e3) return `${+(value / 1e3).toPrecision(3)}k`;
  if (abs >= 1) return `${+value.toPrecision(3)}`;
  return `${+value.toPrecision(2)}`;
}

function niceStep(range: number, count: number): number {
  const raw = range / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  const nice = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10;
  return nice * mag;
}

interface Axis {
  min: number;
  max: number;
  log: boolean;
  ticks: number[];
}

function makeAxis(values: number[], log: boolean, forceZero: boolean, explicitTicks?: number[]): Axis {
  let min = Math.min(...values);
  let max = Math.max(...values);
  if (log) {
    const lo = 10 ** Math.floor(Math.log10(min));
    const hi = 10 ** Math.ceil(Math.log10(max));
    const ticks: number[] = [];
    const decades = Math.log10(hi / lo);
    for (let d = lo; d <= hi * 1.0001; d *= 10) {
      ticks.push(d);
      if (decades <= 2) for (const m of [2, 5]) if (d * m < hi) ticks.push(d * m);
    }
    return { min: lo, max: hi, log, ticks: explicitTicks ?? ticks.sort((a, b) => a - b) };
  }
  if (forceZero) min = Math.min(0, min);
  if (max === min) max = min + 1;
  const step = niceStep(max - min, 5);
  min = Math.floor(min / step) * step;
  max = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let v = min; v <= max + step / 1000; v += step) ticks.push(+v.toPrecision(12));
  return { min, max, log, ticks: explicitTicks ?? ticks };
}

function scale(axis: Axis, value: number, from: number, to: number): number {
  const t = axis.log ? (Math.log10(value) - Math.log10(axis.min)) / (Math.log10(axis.max) - Math.log10(axis.min)) : (value - axis.min) / (axis.max - axis.min);
  return from + t * (to - from);
}

interface LineSeries {
  name: string;
  points: [number, number][];
  dashed?: boolean;
  color?: string;
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: LineSeries[];
  logX?: boolean;
  logY?: boolean;
  xTicks?: number[];
  /** Horizontal reference lines (targets). */
  guides?: { y: number; label: string }[];
  markers?: boolean;
  width?: number;
  height?: number;
}

/** The opening of a chart: the svg element, a white background, the title, and the y axis's grid lines with their labels. */
function chartFrame(box: { width: number; height: number; left: number; right: number; title: string }, yAxis: Axis, py: (y: number) => number): string[] {
  const { width, height, left, right } = box;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="12">`);
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="600" fill="#222">${esc(box.title)}</text>`);
  for (const t of yAxis.ticks) {
    const y = py(t);
    out.push(`<line x1="${left}" x2="${width - right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${left - 8}" y="${(y + 4).toFixed(1)}" text-anchor="end" fill="#444">${fmt(t)}</text>`);
  }
  return out;
}

export function lineChart(o: LineChartOptions): string {
  const width = o.width ?? 760;
  const height = o.height ?? 420;
  const left = 78;
  const right = 24;
  const top = 48;
  const legendRows = Math.ceil(o.series.length / 3);
  const bottom = 58 + legendRows * 20;
  const xs = o.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = [...o.series.flatMap((s) => s.points.map((p) => p[1])), ...(o.guides ?? []).map((g) => g.y)];
  const xAxis = makeAxis(xs, !!o.logX, false, o.xTicks);
  const yAxis = makeAxis(ys, !!o.logY, true);
  const px = (x: number) => scale(xAxis, x, left, width - right);
  const py = (y: number) => scale(yAxis, y, height - bottom, top);
  const out = chartFrame({ width, height, left, right, title: o.title }, yAxis, py);
  for (const t of xAxis.ticks) {
    const x = px(t);
    out.push(`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${top}" y2="${height - bottom}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${x.toFixed(1)}" y="${height - bottom + 18}" text-anchor="middle" fill="#444">${fmt(t)}</text>`);
  }
  out.push(`<line x1="${left}" x2="${width - right}" y1="${height - bottom}" y2="${height - bottom}" stroke="#888"/>`);
  out.push(`<line x1="${left}" x2="${left}" y1="${top}" y2="${height - bottom}" stroke="#888"/>`);
  out.push(`<text x="${(left + width - right) / 2}" y="${height - bottom + 38}" text-anchor="middle" fill="#222">${esc(o.xLabel)}</text>`);
  out.push(`<text transform="translate(18 ${(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle" fill="#222">${esc(o.yLabel)}</text>`);
  for (const g of o.guides ?? []) {
    const y = py(g.y);
    out.push(`<line x1="${left}" x2="${width - right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#999" stroke-dasharray="2 4"/>`);
    out.push(`<text x="${width - right - 4}" y="${(y - 5).toFixed(1)}" text-anchor="end" fill="#666" font-size="11">${esc(g.label)}</text>`);
  }
  o.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length];
    const d = s.points.map((p, j) => `${j ? "L" : "M"}${px(p[0]).toFixed(1)} ${py(p[1]).toFixed(1)}`).join(" ");
    out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ` stroke-dasharray="6 4"` : ""}/>`);
    if (o.markers) for (const p of s.points) out.push(`<circle cx="${px(p[0]).toFixed(1)}" cy="${py(p[1]).toFixed(1)}" r="3.5" fill="${color}"/>`);
    const lx = left + (i % 3) * ((width - left - right) / 3);
    const ly = height - 16 - (legendRows - 1 - Math.floor(i / 3)) * 20;
    out.push(`<line x1="${lx}" x2="${lx + 22}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="3"${s.dashed ? ` stroke-dasharray="6 4"` : ""}/>`);
    out.push(`<text x="${lx + 28}" y="${ly}" fill="#222">${esc(s.name)}</text>`);
  });
  out.push(`</svg>`);
  return out.join("\n") + "\n";
}

interface Bar {
  name: string;
  value: number;
  min?: number;
  max?: number;
}

export interface BarChartOptions {
  title: string;
  yLabel: string;
  groups: { label: string; bars: Bar[] }[];
  guides?: { y: number; label: string }[];
  /** Print each bar's value above it. */
  labels?: (value: number) => string;
  width?: number;
  height?: number;
}

export function barChart(o: BarChartOptions): string {
  const width = o.width ?? 760;
  const height = o.height ?? 400;
  const names = [...new Set(o.groups.flatMap((g) => g.bars.map((b) => b.name)))];
  const legendRows = names.length > 1 ? Math.ceil(names.length / 3) : 0;
  const left = 78;
  const right = 24;
  const top = 48;
  const bottom = 46 + legendRows * 20;
  const values = [...o.groups.flatMap((g) => g.bars.map((b) => b.max ?? b.value)), ...(o.guides ?? []).map((g) => g.y)];
  const yAxis = makeAxis([0, ...values], false, true);
  const py = (y: number) => scale(yAxis, y, height - bottom, top);
  const groupWidth = (width - left - right) / o.groups.length;
  const barWidth = Math.min(56, (groupWidth * 0.8) / names.length);
  const out = chartFrame({ width, height, left, right, title: o.title }, yAxis, py);
  out.push(`<text transform="translate(18 ${(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle" fill="#222">${esc(o.yLabel)}</text>`);
  o.groups.forEach((g, gi) => {
    const gx = left + gi * groupWidth + (groupWidth - barWidth * names.length) / 2;
    g.bars.forEach((b) => {
      const i = names.indexOf(b.name);
      const color = PALETTE[i % PALETTE.length];
      const x = gx + i * barWidth;
      const y = py(b.value);
      out.push(`<rect x="${(x + 2).toFixed(1)}" y="${y.toFixed(1)}" width="${(barWidth - 4).toFixed(1)}" height="${(height - bottom - y).toFixed(1)}" fill="${color}" opacity="0.85"/>`);
      if (b.min !== undefined && b.max !== undefined && b.max > b.min) {
        const cx = x + barWidth / 2;
        out.push(`<path d="M${cx.toFixed(1)} ${py(b.min).toFixed(1)} V${py(b.max).toFixed(1)} M${(cx - 5).toFixed(1)} ${py(b.min).toFixed(1)} h10 M${(cx - 5).toFixed(1)} ${py(b.max).toFixed(1)} h10" stroke="#222" stroke-width="1.2" fill="none"/>`);
      }
      if (o.labels) out.push(`<text x="${(x + barWidth / 2).toFixed(1)}" y="${(py(b.max ?? b.value) - 6).toFixed(1)}" text-anchor="middle" fill="#222" font-size="11">${esc(o.labels(b.value))}</text>`);
    });
    out.push(`<text x="${(left + gi * groupWidth + groupWidth / 2).toFixed(1)}" y="${height - bottom + 18}" text-anchor="middle" fill="#222">${esc(g.label)}</text>`);
  });
  out.push(`<line x1="${left}" x2="${width - right}" y1="${height - bottom}" y2="${height - bottom}" stroke="#888"/>`);
  for (const g of o.guides ?? []) {
    const y = py(g.y);
    out.push(`<line x1="${left}" x2="${width - right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#666" stroke-dasharray="4 4"/>`);
    out.push(`<text x="${left + 4}" y="${(y - 5).toFixed(1)}" text-anchor="start" fill="#444" font-size="11">${esc(g.label)}</text>`);
  }
  if (names.length > 1) {
    names.forEach((name, i) => {
      const lx = left + (i % 3) * ((width - left - right) / 3);
      const ly = height - 14 - (legendRows - 1 - Math.floor(i / 3)) * 20;
      out.push(`<rect x="${lx}" y="${ly - 11}" width="14" height="12" fill="${PALETTE[i % PALETTE.length]}" opacity="0.85"/>`);
      out.push(`<text x="${lx + 20}" y="${ly}" fill="#222">${esc(name)}</text>`);
    });
  }
  out.push(`</svg>`);
  return out.join("\n") + "\n";
}
