// Wilson intervals against published values and closed forms; quantiles and histograms
// against numpy's definitions (values computed with numpy 1.24 beforehand).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wilson, quantile, percentile, median, histogram, summarize, Z95 } from '../../src/library/stats.js';

const close = (a: number, b: number, eps = 5e-5) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);

test('wilson: published and closed-form values', () => {
  // 8 successes of 10: [0.4902, 0.9433] (Newcombe 1998, Table I style; widely tabulated)
  const a = wilson(8, 10);
  close(a.p, 0.8);
  close(a.low, 0.4902, 1e-4);
  close(a.high, 0.9433, 1e-4);
  // k = 0: interval [0, z²/(n + z²)]
  const z2 = Z95 * Z95;
  const b = wilson(0, 10);
  assert.equal(b.low, 0);
  close(b.high, z2 / (10 + z2), 1e-12);
  close(b.high, 0.2775, 1e-4);
  // k = n mirrors k = 0
  const c = wilson(10, 10);
  assert.equal(c.high, 1);
  close(c.low, 1 - b.high, 1e-12);
  // symmetry: low(k) = 1 - high(n - k)
  for (const [k, n] of [
    [3, 17],
    [81, 263],
    [1, 1000],
  ]) {
    close(wilson(k, n).low, 1 - wilson(n - k, n).high, 1e-12);
  }
  // the interval contains p̂ and narrows with n
  const d = wilson(500, 1000);
  assert.ok(d.low < 0.5 && d.high > 0.5);
  close(d.high - d.low, ((2 * Z95 * Math.sqrt(0.25 / 1000)) / (1 + z2 / 1000)) * Math.sqrt(1 + z2 / 1000), 1e-9);
  assert.ok(wilson(50, 100).high - wilson(50, 100).low > d.high - d.low);
  assert.deepEqual(wilson(0, 0), { p: 0, low: 0, high: 1 });
  assert.throws(() => wilson(5, 3));
  assert.throws(() => wilson(-1, 3));
});

test('quantiles follow numpy.percentile (linear)', () => {
  const v = [10, 1, 4, 3, 2];
  // numpy.percentile([1,2,3,4,10], [0,25,50,90,100]) = [1, 2, 3, 7.6, 10]
  assert.deepEqual(
    [0, 25, 50, 100].map((p) => percentile(v, p)),
    [1, 2, 3, 10],
  );
  close(percentile(v, 90), 7.6, 1e-12);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(quantile([], 0.5)));
  assert.throws(() => quantile(v, 1.5));
  const s = summarize(v);
  assert.equal(s.n, 5);
  assert.equal(s.min, 1);
  assert.equal(s.max, 10);
  assert.equal(s.mean, 4);
});

test('histogram follows numpy.histogram', () => {
  // numpy.histogram([1,2,2,3,4,5,5,5], bins=4) → counts [1,2,1,4], edges [1,2,3,4,5]
  const h = histogram([1, 2, 2, 3, 4, 5, 5, 5], 4);
  assert.deepEqual(
    h.map((b) => b.count),
    [1, 2, 1, 4],
  );
  assert.deepEqual(
    h.map((b) => b.lo),
    [1, 2, 3, 4],
  );
  assert.equal(h[3].hi, 5);
  // explicit edges, out-of-range values ignored, last bin closed
  const e = histogram([0, 10, 20, 30, 31, -1], [0, 10, 30]);
  assert.deepEqual(
    e.map((b) => b.count),
    [1, 3],
  );
  // constant data still gives bins
  assert.equal(
    histogram([7, 7, 7], 3).reduce((a, b) => a + b.count, 0),
    3,
  );
  assert.deepEqual(histogram([], 3), []);
});
