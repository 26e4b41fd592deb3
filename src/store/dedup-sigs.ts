// The de-duplication signatures of module contents (migration 13, table `dedup_sigs`): one
// row per emitted module content hash (extractions.hash) with what `nnrag dedup` computes
// per block, encoded by src/library/dedup.ts (`encodeSignatures`; this module only keeps the
// bytes). Written when a block is extracted (putExtraction) or a shard is merged, and by
// dedup for any content it found without a current signature; read by dedup, which then
// only clusters. Content-addressed: a changed module has a new hash and gets its own row,
// the rows of other contents stay valid. A row's `version` is the signature version it was
// computed with; readers ask for theirs and never see the others.
import type { IndexStore } from './store.js';

export interface DedupSignatureRow {
  /** module content hash (store/records.ts textHash) */
  hash: string;
  /** signature version (src/library/dedup.ts SIGNATURE_VERSION) */
  version: number;
  /** lexical error of a module that cannot be tokenized */
  error: string | null;
  data: Uint8Array;
}

/** Store signatures (a row of the same content hash is replaced), in one transaction. */
export function putDedupSignatures(store: IndexStore, rows: readonly DedupSignatureRow[]): void {
  if (!rows.length) return;
  store.write(() => {
    const ins = store.stmt('INSERT OR REPLACE INTO dedup_sigs(hash, version, error, data) VALUES (?, ?, ?, ?)');
    for (const r of rows)
      ins.run(r.hash, r.version, r.error, Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength));
  });
}

/** Hand every stored signature of `version` whose hash is in `hashes` to `each`, streamed
 *  (one row in memory at a time). Returns how many were handed over. */
export function eachDedupSignature(
  store: IndexStore,
  version: number,
  hashes: { has(hash: string): boolean },
  each: (hash: string, error: string | null, data: Uint8Array) => void,
): number {
  let n = 0;
  const rows = store.stmt('SELECT hash, error, data FROM dedup_sigs WHERE version = ?').raw().iterate(version);
  for (const [hash, error, data] of rows as Iterable<[string, string | null, Uint8Array]>) {
    if (!hashes.has(hash)) continue;
    each(hash, error, data);
    n++;
  }
  return n;
}

/** The stored signature of one module content and version (undefined: none). */
export function dedupSignatureOf(
  store: IndexStore,
  hash: string,
  version: number,
): { error: string | null; data: Uint8Array } | undefined {
  return store.stmt('SELECT error, data FROM dedup_sigs WHERE hash = ? AND version = ?').get(hash, version) as
    | { error: string | null; data: Uint8Array }
    | undefined;
}

/** The content hashes of signatures of `version`. */
export function storedDedupSignatures(store: IndexStore, version: number): Set<string> {
  return new Set(store.stmt('SELECT hash FROM dedup_sigs WHERE version = ?').pluck().all(version) as string[]);
}

/** Drop the signatures of contents no stored extraction has any more, and those of another
 *  version. Returns how many rows went. */
export function pruneDedupSignatures(store: IndexStore, version: number): number {
  return store.write(
    () =>
      store.stmt('DELETE FROM dedup_sigs WHERE version != ? OR hash NOT IN (SELECT hash FROM extractions)').run(version)
        .changes,
  );
}

/** Up to `limit` module texts of stored extractions whose content has no signature of
 *  `version` (one per content hash): [hash, text] pairs. */
export function unsignedTexts(store: IndexStore, version: number, limit: number): [string, string][] {
  return store
    .stmt(
      `SELECT hash, min(text) FROM extractions e WHERE octet_length(text) > 0
       AND NOT EXISTS (SELECT 1 FROM dedup_sigs s WHERE s.hash = e.hash AND s.version = ?) GROUP BY hash LIMIT ?`,
    )
    .raw()
    .all(version, limit) as [string, string][];
}
