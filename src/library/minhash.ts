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

/**
 * Shingle set of a token-hash sequence: hashes of every window of `k` consecutive tokens,
 * sorted ascending and de-duplicated. A sequence shorter than k gives one shingle (the whole
 * sequence); an empty sequence gives the empty set.
 */
export function shingles(tokens: Uint32Array, count: number, k = 5): Uint32Array {
  if (count === 0) return new Uint32Array(0);
  const w = Math.min(k, count);
  const m = count - w + 1;
  const out = new Uint32Array(m);
  for (let i = 0; i < m; i++) {
    let h = 0x9747b28c ^ w;
    for (let j = 0; j < w; j++) {
      h = Math.imul(h ^ tokens[i + j], 0x5bd1e995);
      h ^= h >>> 15;
    }
    out[i] = mix32(h);
  }
  out.sort();
  // de-duplicate in place
  let u = 0;
  for (let i = 0; i < m; i++) if (i === 0 || out[i] !== out[u - 1]) out[u++] = out[i];
  return u === m ? out : out.slice(0, u);
}

/** Exact Jaccard similarity |A∩B| / |A∪B| of two sorted, de-duplicated sets.
 *  Two empty sets have similarity 0 here: empty blocks are never duplicates. */
export function jaccard(a: Uint32Array, b: Uint32Array): number {
  const na = a.length, nb = b.length;
  if (na === 0 || nb === 0) return 0;
  let i = 0, j = 0, inter = 0;
  while (i < na && j < nb) {
    const x = a[i], y = b[j];
    if (x === y) { inter++; i++; j++; }
    else if (x < y) i++;
    else j++;
  }
  return inter / (na + nb - inter);
}

/** Upper bound of Jaccard from set sizes alone: min/max. Used to skip hopeless pairs. */
export function jaccardBound(na: number, nb: number): number {
  return na === 0 || nb === 0 ? 0 : Math.min(na, nb) / Math.max(na, nb);
}

const EMPTY = 0xffffffff;

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
  if (K & (K - 1) || K < 2 || K > 65536) throw new RangeError(`K must be a power of two, got ${K}`);
  const shift = 32 - Math.log2(K);
  const sig = out ?? new Uint32Array(K);
  sig.fill(EMPTY);
  let filled = 0;
  for (let i = 0; i < set.length; i++) {
    const h = mix32(set[i] ^ seed);
    const bin = h >>> shift;
    const v = h & ((1 << shift) - 1 || 0xffffffff); // value below the bin bits
    if (sig[bin] === EMPTY) filled++;
    if (v < sig[bin] || sig[bin] === EMPTY) sig[bin] = v;
  }
  if (filled < K) {
    // snapshot of which bins were filled by the set itself (borrow only from those)
    const orig = sig.slice();
    for (let i = 0; i < K; i++) {
      if (orig[i] !== EMPTY) continue;
      for (let attempt = 1; ; attempt++) {
        const j = mix32(Math.imul(i + 1, 0x9e3779b1) ^ Math.imul(attempt, 0x85ebca6b) ^ seed) >>> shift;
        if (orig[j] !== EMPTY) {
          // Shrivastava 2017 copies the value; adding the attempt number (his "offset" C)
          // keeps borrowed values distinguishable from real minima of bin i.
          sig[i] = (orig[j] + attempt * 0x3c6ef372) >>> 0;
          break;
        }
      }
    }
  }
  return sig;
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
  let h = 0x1b873593 ^ band;
  const base = band * r;
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
