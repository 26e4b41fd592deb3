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
  hashes: ReadonlySet<string>,
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

/**
 * Hand every stored signature of `version` whose hash is in `hashes` to `each`, read
 * `chunk` rows at a time as ONE buffer: `data[off, off + len)` is the signature of `hash`.
 * (SQLite concatenates the chunk's blobs: `group_concat` of blobs is their bytes back to
 * back in a UTF-8 database; one buffer per chunk instead of one per row spares the reader
 * a JavaScript object and an allocation per signature.) A chunk whose bytes do not add up
 * to its rows' lengths is read row by row instead. Returns how many were handed over.
 */
export function eachDedupSignatureChunked(
  store: IndexStore,
  version: number,
  hashes: ReadonlySet<string>,
  each: (hash: string, error: string | null, data: Uint8Array, off: number, len: number) => void,
  chunk = 1000,
): number {
  const errors = new Map(
    store.stmt('SELECT hash, error FROM dedup_sigs WHERE version = ? AND error IS NOT NULL').raw().all(version) as [
      string,
      string,
    ][],
  );
  const read = store
    .stmt(
      `SELECT max(r), group_concat(hash, ',' ORDER BY r), group_concat(length(data), ',' ORDER BY r),
         CAST(group_concat(CAST(data AS TEXT), '' ORDER BY r) AS BLOB)
       FROM (SELECT rowid AS r, hash, data FROM dedup_sigs WHERE version = ? AND rowid > ? ORDER BY rowid LIMIT ?)`,
    )
    .raw();
  const rows = store.stmt('SELECT hash, data FROM dedup_sigs WHERE version = ? AND rowid > ? AND rowid <= ?').raw();
  let n = 0;
  let after = 0;
  for (;;) {
    const [last, hs, ls, data] = read.get(version, after, chunk) as [number | null, string, string, Uint8Array];
    if (last === null) return n;
    const hashList = hs.split(',');
    const lens = ls.split(',').map(Number);
    let total = 0;
    for (const l of lens) total += l;
    if (hashList.length !== lens.length || !data || data.byteLength !== total) {
      for (const [hash, d] of rows.all(version, after, last) as [string, Uint8Array][]) {
        if (!hashes.has(hash)) continue;
        each(hash, errors.get(hash) ?? null, d, 0, d.byteLength);
        n++;
      }
    } else {
      let off = 0;
      hashList.forEach((hash, k) => {
        if (hashes.has(hash)) {
          each(hash, errors.get(hash) ?? null, data, off, lens[k]);
          n++;
        }
        off += lens[k];
      });
    }
    after = last;
  }
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
