// The de-duplication signatures of module contents (table `dedup_signatures`, migration 15;
// `dedup_sigs` of migration 13 before it, in the layout before store/dedup-layout.ts): one
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
    const ins = store.stmt('INSERT OR REPLACE INTO dedup_signatures(hash, version, error, data) VALUES (?, ?, ?, ?)');
    for (const r of rows)
      ins.run(r.hash, r.version, r.error, Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength));
  });
}

/** Hand every stored signature of `version` whose hash is in `hashes` to `each`, streamed
 *  (one row in memory at a time), with the hash's value when `hashes` is a Map (one lookup
 *  a row: at 10^6 rows a second lookup of each hash string was ~0.5 s). Returns how many
 *  were handed over, and the hashes of the rows of a content not in `hashes`, of any
 *  version (when `hashes` holds every stored module content, rows `pruneDedupSignatures`
 *  drops). */
export function eachDedupSignature<T = undefined>(
  store: IndexStore,
  version: number,
  hashes: { has(hash: string): boolean } | ReadonlyMap<string, T>,
  each: (hash: string, error: string | null, data: Uint8Array, value: T | undefined) => void,
): { handed: number; unused: string[] } {
  let handed = 0;
  const unused: string[] = [];
  const map = hashes instanceof Map ? (hashes as ReadonlyMap<string, T>) : null;
  // every row, of every version: those of another version are rare (a content's row is
  // replaced when its signature is computed again)
  const rows = store.stmt('SELECT hash, version, error, data FROM dedup_signatures').raw().iterate();
  for (const [hash, v, error, data] of rows as Iterable<[string, number, string | null, Uint8Array]>) {
    let value: T | undefined;
    if (map) {
      value = map.get(hash);
      if (value === undefined) {
        unused.push(hash);
        continue;
      }
    } else if (!hashes.has(hash)) {
      unused.push(hash);
      continue;
    }
    // (a row of another version of a content in `hashes`: the caller computes that
    // signature again and replaces the row)
    if (v !== version) continue;
    each(hash, error, data, value);
    handed++;
  }
  return { handed, unused };
}

/** The stored signature of one module content and version (undefined: none). */
export function dedupSignatureOf(
  store: IndexStore,
  hash: string,
  version: number,
): { error: string | null; data: Uint8Array } | undefined {
  return store.stmt('SELECT error, data FROM dedup_signatures WHERE hash = ? AND version = ?').get(hash, version) as
    | { error: string | null; data: Uint8Array }
    | undefined;
}

/** The content hashes of signatures of `version`. */
export function storedDedupSignatures(store: IndexStore, version: number): Set<string> {
  return new Set(store.stmt('SELECT hash FROM dedup_signatures WHERE version = ?').pluck().all(version) as string[]);
}

/** Drop the signatures of contents no stored extraction with a module text has any more
 *  (a block extracted again with another module, a block deleted, a merged repository's
 *  blocks replaced), and those of another version. Returns how many rows went.
 *  With `unused`, the rows of those hashes only, as a reader of every row found them
 *  (`nnrag dedup`, library.ts runDedup): one lookup each, where the whole check is a pass
 *  over every row and every block's hash (at 10^6 blocks 42.7 s wall, 15.8 s of CPU to drop
 *  one row). A row written again since it was found unused (its module extracted meanwhile)
 *  goes too: signatures are a cache, the next dedup computes and stores it again. */
export function pruneDedupSignatures(store: IndexStore, version: number, unused?: readonly string[]): number {
  if (unused) {
    if (!unused.length) return 0;
    const del = store.stmt('DELETE FROM dedup_signatures WHERE hash = ?');
    return store.write(() => {
      let n = 0;
      for (const h of unused) n += del.run(h).changes;
      return n;
    });
  }
  return store.write(
    () =>
      store
        .stmt(
          // the hashes from the index extractions_list (migration 14), not the table's rows
          'DELETE FROM dedup_signatures WHERE version != ? OR hash NOT IN (SELECT hash FROM extractions WHERE octet_length(text) > 0)',
        )
        .run(version).changes,
  );
}

/** Up to `limit` module texts of stored extractions whose content has no signature of
 *  `version` (one per content hash): [hash, text] pairs. */
export function unsignedTexts(store: IndexStore, version: number, limit: number): [string, string][] {
  return store
    .stmt(
      `SELECT hash, min(text) FROM extractions e WHERE octet_length(text) > 0
       AND NOT EXISTS (SELECT 1 FROM dedup_signatures s WHERE s.hash = e.hash AND s.version = ?) GROUP BY hash LIMIT ?`,
    )
    .raw()
    .all(version, limit) as [string, string][];
}
