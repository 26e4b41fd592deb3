// Dependency-free SVG charts for the library report: horizontal bar charts such as
// "blocks per repository" (unique blocks inside a track for all blocks) and "pass rate per
// stage" (percentages with Wilson 95% error whiskers). Output is a standalone, well-formed
// SVG 1.1 document; every piece of user text is XML-escaped.

export interface Bar {
  label: string;
  value: number;
  /** drawn as a lighter track behind the bar (e.g. total blocks, value = unique blocks) */
  max?: number;
  /** error whisker (e.g. Wilson interval bounds), same units as value */
  low?: number;
  high?: number;
  /** text printed after the bar; defaults to the formatted value (and "/ max") */
  note?: string;
}

export interface BarChartOptions {
  title: string;
  bars: readonly Bar[];
  /** values are proportions in [0, 1], drawn on a fixed 0–100% axis */
  percent?: boolean;
  /** total width in px (default 640) */
  width?: number;
  /** label of the value axis */
  axisLabel?: string;
}

/** Escape text for XML character data and attribute values. */
export function escapeXml(s: string): string {
  return (
    s
      // characters not allowed in XML 1.0 at all (C0 controls except tab/newline/CR, lone surrogates, U+FFFE/F)
      .replace(
        /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
        '\uFFFD',
      )
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/'/g, '&#39;')
  );
}

const fmtNum = (v: number) =>
  Number.isInteger(v) ? String(v) : Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3).replace(/\.?0+$/, '');
const fmtPct = (v: number) => `${(v * 100).toFixed(1)}%`;
const r2 = (v: number) => Math.round(v * 100) / 100;

/** The 1, 2 or 5 × 10^k closest to raw (by ratio). */
export function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  let best = p;
  for (const m of [1, 2, 5, 10]) if (Math.abs(Math.log((m * p) / raw)) < Math.abs(Math.log(best / raw))) best = m * p;
  return best;
}

/** Truncate long labels so they fit the label column (full text kept in a <title>). */
function clip(s: string, n: number): string {
  return s.length <= n ? s : s.slice(0, n - 1) + '…';
}

/** A horizontal bar chart as an SVG string. */
export function barChart(opts: BarChartOptions): string {
  const width = opts.width ?? 640;
  const bars = opts.bars;
  for (const b of bars) {
    for (const v of [b.value, b.max, b.low, b.high]) {
      if (v !== undefined && !Number.isFinite(v)) throw new RangeError(`barChart: non-finite value for ${b.label}`);
    }
  }
  const labelChars = Math.min(28, Math.max(4, ...bars.map((b) => b.label.length)));
  const labelW = Math.round(labelChars * 7 + 12);
  const noteW = 150;
  const plotX = labelW;
  const plotW = Math.max(60, width - labelW - noteW);
  const rowH = 22;
  const top = 34;
  const axisH = opts.axisLabel ? 34 : 22;
  const height = top + Math.max(1, bars.length) * rowH + axisH;
  const dataMax = Math.max(0, ...bars.map((b) => Math.max(b.value, b.max ?? 0, b.high ?? 0))) || 1;
  // ticks at multiples of a "nice" step (1, 2 or 5 × 10^k), about four of them
  const step = opts.percent ? 0.25 : niceStep(dataMax / 4);
  const scaleMax = opts.percent ? 1 : Math.ceil(dataMax / step - 1e-9) * step;
  const nTicks = Math.round(scaleMax / step);
  const x = (v: number) => r2(plotX + (Math.max(0, Math.min(v, scaleMax)) / scaleMax) * plotW);

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(opts.title)}">`,
    `<title>${escapeXml(opts.title)}</title>`,
    `<style>text{font-family:sans-serif;font-size:12px;fill:#222}.t{font-size:14px;font-weight:bold}.n{fill:#555}</style>`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#fff"/>`,
    `<text class="t" x="8" y="20">${escapeXml(opts.title)}</text>`,
  );
  if (bars.length === 0) {
    out.push(`<text class="n" x="${plotX}" y="${top + 15}">(no data)</text>`);
  }
  bars.forEach((b, i) => {
    const y = top + i * rowH;
    const barY = y + 4;
    const barH = rowH - 8;
    out.push(`<g>`);
    out.push(`<title>${escapeXml(b.label)}</title>`);
    out.push(`<text x="${labelW - 6}" y="${y + 15}" text-anchor="end">${escapeXml(clip(b.label, labelChars))}</text>`);
    if (b.max !== undefined) {
      out.push(`<rect x="${plotX}" y="${barY}" width="${r2(x(b.max) - plotX)}" height="${barH}" fill="#c6dbef"/>`);
    }
    out.push(`<rect x="${plotX}" y="${barY}" width="${r2(x(b.value) - plotX)}" height="${barH}" fill="#3182bd"/>`);
    if (b.low !== undefined && b.high !== undefined) {
      const cy = barY + barH / 2;
      const lo = x(Math.min(b.low, b.high));
      const hi = x(Math.max(b.low, b.high));
      out.push(
        `<path d="M${lo} ${cy}H${hi}M${lo} ${barY + 2}V${barY + barH - 2}M${hi} ${barY + 2}V${barY + barH - 2}" stroke="#222" stroke-width="1.2" fill="none"/>`,
      );
    }
    const note =
      b.note ?? (opts.percent ? fmtPct(b.value) : fmtNum(b.value) + (b.max !== undefined ? ` / ${fmtNum(b.max)}` : ''));
    out.push(`<text class="n" x="${plotX + plotW + 6}" y="${y + 15}">${escapeXml(note)}</text>`);
    out.push(`</g>`);
  });
  // value axis: baseline and ticks
  const axisY = top + Math.max(1, bars.length) * rowH + 2;
  out.push(`<path d="M${plotX} ${axisY}H${plotX + plotW}" stroke="#888" fill="none"/>`);
  for (let t = 0; t <= nTicks; t++) {
    const v = step * t;
    const tx = x(v);
    out.push(`<path d="M${tx} ${axisY}V${axisY + 4}" stroke="#888" fill="none"/>`);
    out.push(
      `<text class="n" x="${tx}" y="${axisY + 16}" text-anchor="middle">${opts.percent ? `${t * 25}%` : fmtNum(r2(v))}</text>`,
    );
  }
  if (opts.axisLabel) {
    out.push(
      `<text class="n" x="${plotX + plotW / 2}" y="${axisY + 30}" text-anchor="middle">${escapeXml(opts.axisLabel)}</text>`,
    );
  }
  out.push(`</svg>`);
  return out.join('\n') + '\n';
}

/** "Blocks per repository": unique blocks drawn inside a track of all blocks. */
export function blocksPerRepoChart(
  perRepo: Record<string, { total: number; unique: number }>,
  title = 'Blocks per repository',
): string {
  const bars = Object.entries(perRepo)
    .sort((a, b) => b[1].total - a[1].total || (a[0] < b[0] ? -1 : 1))
    .map(([repo, v]) => ({ label: repo, value: v.unique, max: v.total, note: `${v.unique} unique / ${v.total}` }));
  return barChart({ title, bars, axisLabel: 'blocks' });
}

/** "Pass rate per stage": proportions with their 95% interval as whiskers. */
export function passRateChart(
  stages: readonly { stage: string; passed: number; total: number; low: number; high: number }[],
  title = 'Pass rate per stage',
): string {
  return barChart({
    title,
    percent: true,
    axisLabel: 'pass rate (Wilson 95% interval)',
    bars: stages.map((s) => ({
      label: s.stage,
      value: s.total ? s.passed / s.total : 0,
      low: s.low,
      high: s.high,
      note: `${s.total ? fmtPct(s.passed / s.total) : '–'} (${s.passed}/${s.total})`,
    })),
  });
}
