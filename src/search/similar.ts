// Nearest blocks of a block (`nnrag similar`, the catalog's "similar blocks"): the
// de-duplication signatures of dedup.ts — MinHash (OPH, K = 128) of the lexical token
// 5-gram shingles ("near": identifiers and literals kept) and of the structural 5-gram
// shingles (bound names → ID, strings → STR, floats → LIT) — stored per module content in
// `search_sigs`. The candidates are the blocks sharing an LSH band with the block (BANDING:
// 32 bands of 4 rows per signature kind, keys in `search_bands`, found by its index: a pair
// of Jaccard 0.5 shares a band with probability 0.87 per kind, 0.3 with 0.23), scored by the
// MinHash estimates of both Jaccard similarities; the best are re-scored with the exact
// Jaccard of their shingle sets, and ranked by the mean of the lexical and structural
// similarity. `{ scan: true }` scores every stored signature instead (the reference the
// index is tested against; a block whose best candidates all share a band gets the same
// answer both ways).
import type { IndexStore } from '../store/store.js';
import { extractionText, extractionStamps } from '../store/records.js';
import {
  putSignatures,
  rebuildBands,
  signatureBytes,
  signatureHashes,
  signatureOf,
  bandMembers,
  signaturesByRowid,
  signatureStamp,
  storedBanding,
} from '../store/search.js';
import {
  computeSignature,
  MINHASH_K,
  SIGNATURE_VERSION,
  similarity,
  storedMinHash,
  type BlockSignature,
} from '../library/dedup.js';
import { dedupSignatureOf } from '../store/dedup-sigs.js';
import { bandKey } from '../util/minhash.js';
import type { DupKind } from '../records/spec.js';
import { NnragError } from '../util/errors.js';
import { getDoc } from './fts.js';

export interface SimilarHit {
  id: string;
  /** mean of lexical and structural Jaccard */
  score: number;
  lexical: number;
  structural: number;
  /** the relation dedup would report, if the two are duplicates */
  duplicate: DupKind | null;
  status: string | null;
  category: string | null;
  summary: string | null;
}

/** The LSH banding of the similarity index: rows per band and bands per signature kind
 *  (lexical, structural). Recorded in the store with the keys; a store banded otherwise is
 *  re-banded from its stored signatures on the next sync. */
const ROWS = 4;
const BANDS = MINHASH_K / ROWS;
export const BANDING = `oph${MINHASH_K}-r${ROWS}-b${BANDS}-v1`;

/** members of one band bucket read for a block's candidates, and candidates (those sharing
 *  the most bands) whose MinHash estimates are computed */
const BUCKET = 256;
const SHORTLIST = 512;

/** this many new signatures are banded in one pass after they are stored */
const BULK_BANDS = 20_000;

/** A signature blob of K values as 32-bit words (null when absent or of another size). */
function words(b: Uint8Array | null): Uint32Array | null {
  if (!b || b.byteLength !== K * 4) return null;
  // the blob's bytes are not necessarily 4-aligned in their buffer: copy
  return new Uint32Array(Uint8Array.from(b).buffer);
}

/** Band keys of a signature: kind (bit 32) and band index (bits 33+) above the band's
 *  32-bit hash, so keys of different bands and kinds never collide (< 2^39: exact in a
 *  double and an SQLite integer). An invalid signature (either kind missing) has none, as
 *  it has no score. */
export function bandKeys(near: Uint8Array | null, structural: Uint8Array | null): number[] {
  const n = words(near);
  const s = words(structural);
  if (!n || !s) return [];
  const out: number[] = [];
  for (const [kind, sig] of [
    [0, n],
    [1, s],
  ] as const) {
    for (let b = 0; b < BANDS; b++) out.push((b * 2 + kind) * 2 ** 32 + bandKey(sig, b, ROWS));
  }
  return out;
}

/** Compute and store the signatures of every extraction whose module changed (with their
 *  band keys); re-band the stored signatures when the store's banding is not BANDING. */
export function syncSignatures(store: IndexStore): number {
  const have = signatureHashes(store);
  const rows = extractionStamps(store);
  const todo = rows.filter((r) => have.get(r.id) !== r.hash);
  const ids = new Set(rows.map((r) => r.id));
  const gone = [...have.keys()].filter((id) => !ids.has(id));
  // many new signatures (a library loaded at once): stored without keys, then every key
  // inserted in key order (rebuildBands), far cheaper than random inserts into the index
  const bulk = todo.length >= BULK_BANDS;
  if (!bulk && storedBanding(store) !== BANDING) rebuildBands(store, bandKeys, BANDING);
  for (let i = 0; i < todo.length || (i === 0 && gone.length); i += BULK_BANDS) {
    const sigs = todo.slice(i, i + BULK_BANDS).map(({ id, hash }) => {
      // from the module's de-duplication signature, stored when it was extracted (its
      // shingle sets: the MinHash is computed from them, ~1/10 of a signature from the text)
      const stored = dedupSignatureOf(store, hash, SIGNATURE_VERSION);
      const sig = (stored && storedMinHash(stored.data, stored.error)) ?? computeSignature(extractionText(store, id));
      return { id, hash, ints: sig.ints, tokens: sig.tokens, near: sig.nearSig, structural: sig.structuralSig };
    });
    putSignatures(store, sigs, i === 0 ? gone : [], bulk ? () => [] : bandKeys);
  }
  if (bulk) rebuildBands(store, bandKeys, BANDING);
  return todo.length + gone.length;
}

interface SigMatrix {
  stamp: string;
  ids: string[];
  index: Map<string, number>;
  /** K values per block, row i at [i*K, (i+1)*K); `valid[i]` = 0 for empty/invalid blocks */
  near: Uint32Array;
  structural: Uint32Array;
  valid: Uint8Array;
}

const K = MINHASH_K;
const matrices = new WeakMap<IndexStore, SigMatrix>();

/** All stored signatures as two flat matrices, cached per store until search_sigs changes. */
function sigMatrix(store: IndexStore): SigMatrix {
  const stamp = signatureStamp(store);
  const cached = matrices.get(store);
  if (cached && cached.stamp === stamp) return cached;
  const rows = signatureBytes(store);
  const n = rows.length;
  const m: SigMatrix = {
    stamp,
    ids: [],
    index: new Map(),
    near: new Uint32Array(n * K),
    structural: new Uint32Array(n * K),
    valid: new Uint8Array(n),
  };
  const nearBytes = new Uint8Array(m.near.buffer);
  const structBytes = new Uint8Array(m.structural.buffer);
  rows.forEach(([id, a, b], i) => {
    m.ids.push(id);
    m.index.set(id, i);
    if (a && b && a.byteLength === K * 4 && b.byteLength === K * 4) {
      nearBytes.set(a, i * K * 4);
      structBytes.set(b, i * K * 4);
      m.valid[i] = 1;
    }
  });
  matrices.set(store, m);
  return m;
}

/** The k blocks most similar to `id` (call syncSignatures first): candidates from the band
 *  index, or every stored signature with `scan`. */
export function similarBlocks(store: IndexStore, id: string, k = 10, opts: { scan?: boolean } = {}): SimilarHit[] {
  const est = opts.scan ? scanEstimates(store, id) : bandEstimates(store, id);
  if (!est) return [];
  // re-score the best candidates exactly (MinHash error ≈ 1/sqrt(K) ≈ 0.09)
  const finalists = est.slice(0, Math.max(k * 3, 15));
  return rescore(store, id, finalists, k);
}

/** Blocks with equal MinHash positions: [id, count of equal positions of both signatures],
 *  most first, ties in id order (null: the block's signature is invalid). */
type Estimates = [string, number][] | null;

/** Estimates of every stored signature (the matrix of all of them, cached per store). */
function scanEstimates(store: IndexStore, id: string): Estimates {
  const m = sigMatrix(store);
  const self = m.index.get(id);
  if (self === undefined) throw new NnragError(`no library block ${JSON.stringify(id)}`, 'unknown-block');
  if (!m.valid[self]) return null;
  const { near, structural, valid } = m;
  const base = self * K;
  const est: [string, number][] = [];
  for (let i = 0; i < m.ids.length; i++) {
    if (i === self || !valid[i]) continue;
    // MinHash estimate of both Jaccard similarities: equal positions of the signatures
    let eq = 0;
    const o = i * K;
    for (let j = 0; j < K; j++) {
      if (near[o + j] === near[base + j]) eq++;
      if (structural[o + j] === structural[base + j]) eq++;
    }
    if (eq > 0) est.push([m.ids[i], eq]);
  }
  // m.ids is in id order and the sort is stable: ties stay in id order
  return est.sort((a, b) => b[1] - a[1]);
}

/** Estimates of the blocks sharing a band key with `id` (the index on search_bands). */
function bandEstimates(store: IndexStore, id: string): Estimates {
  const own = signatureOf(store, id);
  if (!own) throw new NnragError(`no library block ${JSON.stringify(id)}`, 'unknown-block');
  const n0 = words(own[0]);
  const s0 = words(own[1]);
  if (!n0 || !s0) return null;
  // the blocks sharing the most bands with it (a bucket read up to BUCKET members: a block
  // copied thousands of times has buckets of thousands, of which the panel shows eight)
  const shared = new Map<number, number>();
  for (const members of bandMembers(store, bandKeys(own[0], own[1]), BUCKET))
    for (const m of members) shared.set(m, (shared.get(m) ?? 0) + 1);
  const best = [...shared].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, SHORTLIST);
  const est: [string, number][] = [];
  for (const [other, nb, sb] of signaturesByRowid(
    store,
    best.map(([r]) => r),
    id,
  )) {
    const n = words(nb);
    const s = words(sb);
    if (!n || !s) continue;
    let eq = 0;
    for (let j = 0; j < K; j++) {
      if (n[j] === n0[j]) eq++;
      if (s[j] === s0[j]) eq++;
    }
    if (eq > 0) est.push([other, eq]);
  }
  // the rows come in id order and the sort is stable: ties stay in id order, as the scan's
  return est.sort((a, b) => b[1] - a[1]);
}

/** The finalists re-scored with the exact Jaccard of their shingle sets: the best k. */
function rescore(store: IndexStore, id: string, finalists: [string, number][], k: number): SimilarHit[] {
  const mine: BlockSignature = computeSignature(extractionText(store, id));
  const scored = finalists.map(([other]) => {
    const sim = similarity(mine, computeSignature(extractionText(store, other)));
    return { other, sim, score: round((sim.near + sim.structural) / 2) };
  });
  scored.sort((a, b) => b.score - a.score || (a.other < b.other ? -1 : 1));
  return scored
    .filter((h) => h.score > 0)
    .slice(0, k)
    .map(({ other, sim, score }) => {
      const doc = getDoc(store, other);
      return {
        id: other,
        score,
        lexical: round(sim.near),
        structural: round(sim.structural),
        duplicate: sim.duplicate,
        status: doc?.status ?? null,
        category: doc?.category ?? null,
        summary: doc?.summary ?? null,
      };
    });
}

const round = (x: number) => Math.round(x * 1e4) / 1e4;
