// Nearest blocks of a block (`nnrag similar`, the catalog's "similar blocks"): the
// de-duplication signatures of dedup.ts — MinHash (OPH, K = 128) of the lexical token
// 5-gram shingles ("near": identifiers and literals kept) and of the structural 5-gram
// shingles (bound names → ID, strings → STR, floats → LIT) — stored per module content in
// `search_sigs`. Every block is scored by the MinHash estimates of both Jaccard
// similarities; the best candidates are re-scored with the exact Jaccard of their shingle
// sets, and ranked by the mean of the lexical and structural similarity.
import type { IndexStore } from '../store/store.js';
import { extractionText, extractionStamps } from '../store/records.js';
import { putSignatures, signatureBytes, signatureHashes, signatureStamp } from '../store/search.js';
import { computeSignature, MINHASH_K, similarity, type BlockSignature } from '../library/dedup.js';
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

/** Compute and store the signatures of every extraction whose module changed. */
export function syncSignatures(store: IndexStore): number {
  const have = signatureHashes(store);
  const rows = extractionStamps(store);
  const todo = rows.filter((r) => have.get(r.id) !== r.hash);
  const ids = new Set(rows.map((r) => r.id));
  const gone = [...have.keys()].filter((id) => !ids.has(id));
  if (!todo.length && !gone.length) return 0;
  const sigs = todo.map(({ id, hash }) => {
    const sig = computeSignature(extractionText(store, id));
    return { id, hash, ints: sig.ints, tokens: sig.tokens, near: sig.nearSig, structural: sig.structuralSig };
  });
  putSignatures(store, sigs, gone);
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

/** The k blocks most similar to `id` (call syncSignatures first). */
export function similarBlocks(store: IndexStore, id: string, k = 10): SimilarHit[] {
  const m = sigMatrix(store);
  const self = m.index.get(id);
  if (self === undefined) throw new NnragError(`no library block ${JSON.stringify(id)}`, 'unknown-block');
  if (!m.valid[self]) return [];
  const { near, structural, valid } = m;
  const base = self * K;
  const est: { i: number; s: number }[] = [];
  for (let i = 0; i < m.ids.length; i++) {
    if (i === self || !valid[i]) continue;
    // MinHash estimate of both Jaccard similarities: equal positions of the signatures
    let eq = 0;
    const o = i * K;
    for (let j = 0; j < K; j++) {
      if (near[o + j] === near[base + j]) eq++;
      if (structural[o + j] === structural[base + j]) eq++;
    }
    if (eq > 0) est.push({ i, s: eq });
  }
  est.sort((a, b) => b.s - a.s || a.i - b.i);
  // re-score the best candidates exactly (MinHash error ≈ 1/sqrt(K) ≈ 0.09)
  const finalists = est.slice(0, Math.max(k * 3, 15));
  const mine: BlockSignature = computeSignature(extractionText(store, id));
  const scored = finalists.map(({ i }) => {
    const other = m.ids[i];
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
