// Small statistics for the library report: Wilson score intervals for pass rates,
// percentiles (linear interpolation between closest ranks, the "R-7"/numpy default),
// and equal-width histograms. Pure functions, no dependencies.

/** z for a two-sided 95% interval: the 0.975 quantile of the standard normal. */
export const Z95 = 1.959963984540054;

export interface Interval {
  /** point estimate k/n (0 when n = 0) */
  p: number;
  low: number;
  high: number;
}

/**
 * Wilson score interval for a binomial proportion (Wilson 1927; Newcombe 1998, method 3):
 *   centre = (p̂ + z²/2n) / (1 + z²/n)
 *   half   = z / (1 + z²/n) · sqrt(p̂(1−p̂)/n + z²/4n²)
 * Unlike the normal (Wald) interval it stays inside [0, 1] and is sensible at k = 0 or k = n.
 * n = 0 gives the uninformative interval [0, 1].
 */
export function wilson(k: number, n: number, z = Z95): Interval {
  if (!Number.isFinite(k) || !Number.isFinite(n) || n < 0 || k < 0 || k > n) {
    throw new RangeError(`wilson: need 0 <= k <= n, got k=${k} n=${n}`);
  }
  if (n === 0) return { p: 0, low: 0, high: 1 };
  const p = k / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (z / denom) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // clamp tiny floating-point excursions; exact at the boundaries k = 0 and k = n
  return {
    p,
    low: k === 0 ? 0 : Math.max(0, centre - half),
    high: k === n ? 1 : Math.min(1, centre + half),
  };
}

/** The q-quantile (0 ≤ q ≤ 1) of the values, linear interpolation between order
 *  statistics (Hyndman & Fan type 7, numpy.percentile default). NaN for no values. */
export function quantile(values: readonly number[], q: number): number {
  if (q < 0 || q > 1 || Number.isNaN(q)) throw new RangeError(`quantile: q=${q} not in [0,1]`);
  if (values.length === 0) return NaN;
  const s = Float64Array.from(values).sort();
  const h = (s.length - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  return s[lo] + (h - lo) * (s[hi] - s[lo]);
}

/** The p-th percentile, p in [0, 100]. */
export function percentile(values: readonly number[], p: number): number {
  return quantile(values, p / 100);
}

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  let s = 0;
  for (const v of values) s += v;
  return s / values.length;
}

/** Summary used in reports: count, min, p50, p90, p99, max, mean. */
export function summarize(values: readonly number[]): {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
} {
  const n = values.length;
  if (n === 0) return { n, min: NaN, p50: NaN, p90: NaN, p99: NaN, max: NaN, mean: NaN };
  let min = Infinity,
    max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return {
    n,
    min,
    p50: quantile(values, 0.5),
    p90: quantile(values, 0.9),
    p99: quantile(values, 0.99),
    max,
    mean: mean(values),
  };
}

export interface Bin {
  /** inclusive lower edge */
  lo: number;
  /** exclusive upper edge, except the last bin, which includes its upper edge */
  hi: number;
  count: number;
}

/**
 * Histogram. `bins` is either a number of equal-width bins spanning [min, max] of the data
 * (default 10), or an explicit ascending list of edges (n+1 edges → n bins; values outside
 * the edges are not counted). Like numpy.histogram, every bin is half-open [lo, hi) except
 * the last, which is closed.
 */
export function histogram(values: readonly number[], bins: number | readonly number[] = 10): Bin[] {
  let edges: number[];
  if (typeof bins === 'number') {
    if (!Number.isInteger(bins) || bins < 1) throw new RangeError(`histogram: bins=${bins}`);
    if (values.length === 0) return [];
    let min = Infinity,
      max = -Infinity;
    for (const v of values) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
    if (min === max) {
      min -= 0.5;
      max += 0.5;
    }
    edges = Array.from({ length: bins + 1 }, (_, i) => min + ((max - min) * i) / bins);
    edges[bins] = max;
  } else {
    edges = [...bins];
    for (let i = 1; i < edges.length; i++) {
      if (!(edges[i] > edges[i - 1])) throw new RangeError('histogram: edges must be strictly ascending');
    }
    if (edges.length < 2) throw new RangeError('histogram: need at least two edges');
  }
  const out: Bin[] = [];
  for (let i = 0; i + 1 < edges.length; i++) out.push({ lo: edges[i], hi: edges[i + 1], count: 0 });
  const last = out.length - 1;
  for (const v of values) {
    if (!(v >= edges[0] && v <= edges[last + 1])) continue;
    // binary search for the bin with lo <= v < hi
    let a = 0,
      b = last;
    while (a < b) {
      const m = (a + b + 1) >> 1;
      if (edges[m] <= v) a = m;
      else b = m - 1;
    }
    out[Math.min(a, last)].count++;
  }
  return out;
}
