// Nearest blocks of a block (`nnrag similar`, the catalog's "similar blocks"): the
// de-duplication signatures of dedup.ts — MinHash (OPH, K = 128) of the lexical token
// 5-gram shingles ("near": identifiers and literals kept) and of the structural 5-gram
// shingles (bound names → ID, strings → STR, floats → LIT) — stored per module content in
// `search_sigs`. Every block is scored by the MinHash estimates of both Jaccard
// similarities; the best candidates are re-scored with the exact Jaccard of their shingle
// sets, and ranked by the mean of the lexical and structural similarity.
import type { IndexStore } from '../index/store.js';
import { computeSignature, similarity, type BlockSignature, type DupKind } from '../library/dedup.js';
import { estimateJaccard } from '../library/minhash.js';
import { NnragError } from '../util/errors.js';
import { getDoc } from './index.js';

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

const toBlob = (a: Uint32Array | null) => (a ? Buffer.from(a.buffer, a.byteOffset, a.byteLength) : null);
const fromBlob = (b: Buffer | null) => (b ? new Uint32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)) : null);

/** Compute and store the signatures of every extraction whose module changed. */
export function syncSignatures(store: IndexStore): number {
  const have = new Map((store.stmt('SELECT id, hash FROM search_sigs').all() as { id: string; hash: string }[]).map((r) => [r.id, r.hash]));
  const rows = store.stmt('SELECT id, hash FROM extractions').all() as { id: string; hash: string }[];
  const todo = rows.filter((r) => have.get(r.id) !== r.hash);
  const ids = new Set(rows.map((r) => r.id));
  const gone = [...have.keys()].filter((id) => !ids.has(id));
  if (!todo.length && !gone.length) return 0;
  const text = store.stmt('SELECT text FROM extractions WHERE id = ?').pluck();
  const sigs = todo.map((r) => ({ ...r, sig: computeSignature(text.get(r.id) as string) }));
  store.write(() => {
    const ins = store.stmt('INSERT OR REPLACE INTO search_sigs(id, hash, ints, tokens, near, structural) VALUES (?, ?, ?, ?, ?, ?)');
    for (const { id, hash, sig } of sigs) ins.run(id, hash, sig.ints, sig.tokens, toBlob(sig.nearSig), toBlob(sig.structuralSig));
    for (const id of gone) store.stmt('DELETE FROM search_sigs WHERE id = ?').run(id);
  });
  return todo.length + gone.length;
}

/** The k blocks most similar to `id` (call syncSignatures first). */
export function similarBlocks(store: IndexStore, id: string, k = 10): SimilarHit[] {
  const rows = store.stmt('SELECT id, near, structural FROM search_sigs').all() as { id: string; near: Buffer | null; structural: Buffer | null }[];
  const self = rows.find((r) => r.id === id);
  if (!self) throw new NnragError(`no library block ${JSON.stringify(id)}`, 'unknown-block');
  const sn = fromBlob(self.near);
  const ss = fromBlob(self.structural);
  if (!sn || !ss) return [];
  const est: { id: string; s: number }[] = [];
  for (const r of rows) {
    if (r.id === id || !r.near || !r.structural) continue;
    const n = estimateJaccard(sn, fromBlob(r.near)!);
    const s = estimateJaccard(ss, fromBlob(r.structural)!);
    if (n + s > 0) est.push({ id: r.id, s: (n + s) / 2 });
  }
  est.sort((a, b) => b.s - a.s || (a.id < b.id ? -1 : 1));
  // re-score the best candidates exactly (MinHash error ≈ 1/sqrt(K) ≈ 0.09)
  const finalists = est.slice(0, Math.max(k * 4, 20));
  const text = store.stmt('SELECT text FROM extractions WHERE id = ?').pluck();
  const mine: BlockSignature = computeSignature(text.get(id) as string);
  const hits: SimilarHit[] = finalists.map(({ id: other }) => {
    const sim = similarity(mine, computeSignature(text.get(other) as string));
    const doc = getDoc(store, other);
    return {
      id: other,
      score: round((sim.near + sim.structural) / 2),
      lexical: round(sim.near),
      structural: round(sim.structural),
      duplicate: sim.duplicate,
      status: doc?.status ?? null,
      category: doc?.category ?? null,
      summary: doc?.summary ?? null,
    };
  });
  hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
  return hits.filter((h) => h.score > 0).slice(0, k);
}

const round = (x: number) => Math.round(x * 1e4) / 1e4;
