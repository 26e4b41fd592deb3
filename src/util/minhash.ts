// MinHash machinery for near-duplicate detection of blocks:
//  - 32-bit hashing of tokens (FNV-1a) and of token k-grams ("shingles"),
//  - one-permutation hashing (OPH, Li, Owen & Zhang 2012) into K bins with optimal
//    densification of empty bins (Shrivastava 2017, "Optimal Densification for Fast and
//    Accurate Minwise Hashing", ICML), which keeps P[sig_a[i] = sig_b[i]] = Jaccard(a, b)
//    while hashing every shingle once instead of K times,
//  - LSH banding (b bands × r rows) to produce candidate pairs, and exact Jaccard on the
//    sorted shingle sets to verify them (MinHash only proposes; the threshold is exact).
// Pure functions over typed arrays; no dependencies.

/** FNV-1a, 32-bit, over UTF-16 code units of a string. */
export function fnv1a(s: string): number {
  return fnv1aRange(s, 0, s.length);
}

/** FNV-1a over s[start, end). */
export function fnv1aRange(s: string, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** One multiply–xorshift round (murmur-style) for combining hashes. */
export function mix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

let rawBuf = new Uint32Array(4096);
let counts = new Int32Array(1025);

/**
 * Shingle set of a token-hash sequence: hashes of every window of `k` consecutive tokens,
 * sorted ascending and de-duplicated. A sequence shorter than k gives one shingle (the whole
 * sequence); an empty sequence gives the empty set.
 * Window hashes are a rolling polynomial (Rabin–Karp, base = FNV prime, mod 2^32) of the
 * token hashes, finalised with `mix32`; sorting is a bucket pass on the top bits followed by
 * one insertion-sort pass (hash values are uniform, so buckets hold ~1 value each).
 */
export function shingles(tokens: Uint32Array, count: number, k = 5): Uint32Array {
  const out = new Uint32Array(Math.max(1, count));
  const u = shinglesInto(tokens, count, k, out);
  return u === out.length ? out : out.slice(0, u);
}

/** `shingles` into out[at, at + size) (out has room for max(1, count) values from `at`);
 *  returns the set size. */
export function shinglesInto(tokens: Uint32Array, count: number, k: number, out: Uint32Array, at = 0): number {
  if (count === 0) return 0;
  const w = Math.min(k, count);
  const m = count - w + 1;
  if (rawBuf.length < m) rawBuf = new Uint32Array(m * 2);
  const raw = rawBuf;
  const B = 0x01000193;
  let h = 0;
  let Bw = 1;
  for (let j = 0; j < w; j++) {
    h = (Math.imul(h, B) + tokens[j]) | 0;
    Bw = Math.imul(Bw, B);
  }
  raw[0] = mix32(h ^ w);
  for (let i = 1; i < m; i++) {
    h = (Math.imul(h, B) + tokens[i + w - 1] - Math.imul(tokens[i - 1], Bw)) | 0;
    raw[i] = mix32(h ^ w);
  }
  return sortUniqueInto(raw, m, out, at);
}

/** Sort the first m values of `raw` (uniformly distributed) into out[at, …), dropping
 *  repeats; returns the number of distinct values. */
function sortUniqueInto(raw: Uint32Array, m: number, out: Uint32Array, at: number): number {
  let bits = 4;
  while (1 << bits < m && bits < 16) bits++;
  const nb = 1 << bits;
  const shift = 32 - bits;
  if (counts.length < nb + 1) counts = new Int32Array(nb + 1);
  counts.fill(0, 0, nb + 1);
  for (let i = 0; i < m; i++) counts[(raw[i] >>> shift) + 1]++;
  counts[0] = at;
  for (let i = 1; i <= nb; i++) counts[i] += counts[i - 1];
  for (let i = 0; i < m; i++) {
    const v = raw[i];
    out[counts[v >>> shift]++] = v;
  }
  const end = at + m;
  for (let i = at + 1; i < end; i++) {
    const v = out[i];
    let j = i - 1;
    if (out[j] <= v) continue;
    while (j >= at && out[j] > v) {
      out[j + 1] = out[j];
      j--;
    }
    out[j + 1] = v;
  }
  let u = at;
  for (let i = at; i < end; i++) if (u === at || out[i] !== out[u - 1]) out[u++] = out[i];
  return u - at;
}

/** Exact Jaccard similarity |A∩B| / |A∪B| of two sorted, de-duplicated sets.
 *  Two empty sets have similarity 0 here: empty blocks are never duplicates. */
export function jaccard(a: Uint32Array, b: Uint32Array): number {
  return jaccardIn(a, 0, a.length, b, 0, b.length);
}

/** `jaccard` of a[ao, ao + na) and b[bo, bo + nb) (views without a typed-array object). */
export function jaccardIn(a: Uint32Array, ao: number, na: number, b: Uint32Array, bo: number, nb: number): number {
  if (na === 0 || nb === 0) return 0;
  let i = ao,
    j = bo,
    inter = 0;
  const ea = ao + na,
    eb = bo + nb;
  while (i < ea && j < eb) {
    const x = a[i],
      y = b[j];
    if (x === y) {
      inter++;
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return inter / (na + nb - inter);
}

/**
 * `jaccard(a, b) >= t`, the same answer, stopping as soon as the answer is known to be
 * false: the intersection can at most grow by the elements left of the shorter remainder,
 * and inter / (na + nb − inter) only grows with inter (a correctly rounded division of a
 * larger numerator by a smaller denominator is never smaller), so once
 * inter + left < need, where need is the least intersection that passes, no rest of the
 * merge can pass. A verification of dedup mostly fails (LSH proposes, the threshold
 * disposes), and fails early.
 */
export function jaccardAtLeast(a: Uint32Array, b: Uint32Array, t: number): boolean {
  return jaccardAtLeastIn(a, 0, a.length, b, 0, b.length, t);
}

/** `jaccardAtLeast` of a[ao, ao + na) and b[bo, bo + nb). */
export function jaccardAtLeastIn(
  a: Uint32Array,
  ao: number,
  na: number,
  b: Uint32Array,
  bo: number,
  nb: number,
  t: number,
): boolean {
  if (na === 0 || nb === 0) return 0 >= t;
  const need = leastIntersection(na, nb, t);
  if (need > Math.min(na, nb)) return false;
  let i = ao,
    j = bo,
    inter = 0;
  const ea = ao + na,
    eb = bo + nb;
  while (i < ea && j < eb) {
    const x = a[i],
      y = b[j];
    if (x === y) {
      inter++;
      i++;
      j++;
    } else {
      if (x < y) i++;
      else j++;
      // a miss: can the rest still bring the intersection to `need`?
      if (inter + Math.min(ea - i, eb - j) < need) return false;
    }
  }
  return inter >= need;
}

/** The least intersection of two sets of na and nb elements (both > 0) whose Jaccard, as
 *  `jaccard` computes it (inter / (na + nb − inter)), reaches t; more than min(na, nb)
 *  when none does. */
export function leastIntersection(na: number, nb: number, t: number): number {
  const tot = na + nb;
  const top = Math.min(na, nb);
  let need = Math.max(0, Math.floor((t * tot) / (1 + t)) - 2);
  while (need <= top && need / (tot - need) < t) need++;
  return need;
}

/** Upper bound of Jaccard from set sizes alone: min/max. Used to skip hopeless pairs. */
export function jaccardBound(na: number, nb: number): number {
  return na === 0 || nb === 0 ? 0 : Math.min(na, nb) / Math.max(na, nb);
}

/**
 * One-permutation hashing with optimal densification. Each shingle (already a well-mixed
 * 32-bit hash) is re-mixed with `seed`; the top log2(K) bits pick the bin, the value is kept
 * if smaller than the bin's current minimum. Every empty bin i then borrows the value of the
 * first non-empty bin along its own probe sequence h(i, 1), h(i, 2), … — the same sequence for
 * every set, so two sets agree on bin i with probability equal to their Jaccard similarity.
 * K must be a power of two (≤ 2^16). Returns null for the empty set.
 */
export function ophSignature(set: Uint32Array, K = 128, seed = 0x2545f491, out?: Uint32Array): Uint32Array | null {
  if (set.length === 0) return null;
  const sig = out ?? new Uint32Array(K);
  ophInto(set, set.length, K, seed, sig, 0);
  return sig;
}

let filledBuf = new Uint8Array(128);

/** `ophSignature` of set[at, at + len) into out[off, off + K); len must be > 0. */
export function ophInto(
  set: Uint32Array,
  len: number,
  K: number,
  seed: number,
  out: Uint32Array,
  off: number,
  at = 0,
): void {
  if (K & (K - 1) || K < 2 || K > 65536) throw new RangeError(`K must be a power of two, got ${K}`);
  const shift = 32 - Math.log2(K);
  const mask = (1 << shift) - 1 || 0xffffffff; // value = the bits below the bin bits
  if (filledBuf.length < K) filledBuf = new Uint8Array(K);
  const filled = filledBuf;
  filled.fill(0, 0, K);
  let nFilled = 0;
  for (let i = at; i < at + len; i++) {
    const h = mix32(set[i] ^ seed);
    const bin = h >>> shift;
    const v = h & mask;
    if (filled[bin] === 0) {
      filled[bin] = 1;
      nFilled++;
      out[off + bin] = v;
    } else if (v < out[off + bin]) out[off + bin] = v;
  }
  if (nFilled < K) {
    // borrow only from bins the set filled itself (never overwritten below)
    for (let i = 0; i < K; i++) {
      if (filled[i]) continue;
      for (let attempt = 1; ; attempt++) {
        const j = mix32(Math.imul(i + 1, 0x9e3779b1) ^ Math.imul(attempt, 0x85ebca6b) ^ seed) >>> shift;
        if (filled[j]) {
          // Shrivastava 2017 copies the value; adding the attempt number (his "offset" C)
          // keeps borrowed values distinguishable from real minima of bin i.
          out[off + i] = (out[off + j] + Math.imul(attempt, 0x3c6ef372)) >>> 0;
          break;
        }
      }
    }
  }
}

/** Fraction of equal positions: the MinHash estimate of Jaccard. */
export function estimateJaccard(a: Uint32Array, b: Uint32Array): number {
  const K = Math.min(a.length, b.length);
  if (K === 0) return 0;
  let eq = 0;
  for (let i = 0; i < K; i++) if (a[i] === b[i]) eq++;
  return eq / K;
}

/** Hash of rows [band*r, band*r + r) of a signature: the LSH bucket key of that band. */
export function bandKey(sig: Uint32Array, band: number, r: number): number {
  return bandKeyIn(sig, 0, band, r);
}

/** `bandKey` of the signature at sig[off, off + K). */
export function bandKeyIn(sig: Uint32Array, off: number, band: number, r: number): number {
  let h = 0x1b873593 ^ band;
  const base = off + band * r;
  for (let i = 0; i < r; i++) {
    h = Math.imul(h ^ sig[base + i], 0xcc9e2d51);
    h = (h << 15) | (h >>> 17);
  }
  return mix32(h);
}

/**
 * Probability that a pair with Jaccard s becomes a candidate with b bands of r rows:
 * 1 − (1 − s^r)^b. Used to choose (b, r) for a threshold (see `chooseBands`).
 */
export function candidateProbability(s: number, b: number, r: number): number {
  return 1 - Math.pow(1 - Math.pow(s, r), b);
}

/**
 * The banding (b × r ≤ K, r | K not required) with the fewest expected false candidates
 * among those that still propose a pair at exactly the threshold with probability ≥ recall.
 * For K = 128: threshold 0.90 → 16 × 8; 0.95 → 10 × 12 (recall ≥ 0.999).
 */
export function chooseBands(K: number, threshold: number, recall = 0.999): { b: number; r: number } {
  let best: { b: number; r: number; cost: number } | null = null;
  for (let r = 1; r <= K; r++) {
    const b = Math.floor(K / r);
    if (b < 1) break;
    if (candidateProbability(threshold, b, r) < recall) continue;
    // cost: expected candidate rate for unrelated-but-similar pairs (s = threshold − 0.3)
    const cost = candidateProbability(Math.max(0, threshold - 0.3), b, r);
    if (!best || cost < best.cost) best = { b, r, cost };
  }
  return best ? { b: best.b, r: best.r } : { b: K, r: 1 };
}
