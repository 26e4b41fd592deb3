// One call that brings every search structure (FTS documents, similarity signatures) up to
// date with the stored extractions and specs; used by the CLI commands and the web
// catalog. The work is skipped when nothing was written to the database since the last
// refresh through this store handle: `PRAGMA data_version` changes when another connection
// commits, `total_changes()` counts this connection's own writes (both O(1), unlike a scan
// of the extractions table, whose rows hold whole modules). A new handle (a new process:
// the catalog's start, each `nnrag search`) skips it too when the stamp stored by the last
// sync is current: triggers mark it stale on any write to extractions or specs
// (src/store/search.ts SYNC_TRIGGERS), so the scan of every extraction (at 10^6 blocks,
// minutes) is paid once per store state, not once per process.
import { createHash } from 'node:crypto';
import type { IndexStore } from '../store/store.js';
import { beginSync, endSync, FIELD_TABLES, syncedStamp } from '../store/search.js';
import { FTS_SQL } from '../store/migrations.js';
import { SIGNATURE_VERSION } from '../library/dedup.js';
import { DOC_VERSION } from './documents.js';
import { syncSearchIndex, type SyncReport } from './fts.js';
import { BANDING, syncSignatures } from './similar.js';

const stamps = new WeakMap<IndexStore, string>();

/** The stored stamp of a sync by this code: what the structures were made with (document
 *  version, FTS and field-table layouts, signature version and banding). Another build's
 *  stamp differs, so its structures are synced again. */
export const SYNC_STAMP = `current:${createHash('sha1')
  .update(JSON.stringify([DOC_VERSION, FTS_SQL, FIELD_TABLES, SIGNATURE_VERSION, BANDING]))
  .digest('hex')
  .slice(0, 16)}`;

export function refreshSearch(
  store: IndexStore,
  opts: { force?: boolean } = {},
): SyncReport & { signatures: number; skipped: boolean } {
  const dv = store.changeCounters().dataVersion;
  const skip = { added: 0, updated: 0, removed: 0, unchanged: 0, ms: 0, signatures: 0, skipped: true };
  if (!opts.force && stamps.get(store) === `${dv}:${store.changeCounters().ownChanges}`) return skip;
  if (!opts.force && syncedStamp(store) === SYNC_STAMP) {
    stamps.set(store, `${dv}:${store.changeCounters().ownChanges}`);
    return skip;
  }
  const mark = beginSync(store);
  const r = syncSearchIndex(store);
  const signatures = syncSignatures(store);
  endSync(store, mark, SYNC_STAMP);
  // the data version read before the sync: a commit by another connection during the sync
  // makes the next call sync again; our own writes are counted after it
  stamps.set(store, `${dv}:${store.changeCounters().ownChanges}`);
  return { ...r, signatures, skipped: false };
}
