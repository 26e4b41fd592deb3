// One call that brings every search structure (FTS documents, similarity signatures) up to
// date with the stored extractions and specs; used by the CLI commands and the web
// catalog. The work is skipped when nothing was written to the database since the last
// refresh through this store handle: `PRAGMA data_version` changes when another connection
// commits, `total_changes()` counts this connection's own writes (both O(1), unlike a scan
// of the extractions table, whose rows hold whole modules).
import type { IndexStore } from '../store/store.js';
import { syncSearchIndex, type SyncReport } from './fts.js';
import { syncSignatures } from './similar.js';

const stamps = new WeakMap<IndexStore, string>();

export function refreshSearch(
  store: IndexStore,
  opts: { force?: boolean } = {},
): SyncReport & { signatures: number; skipped: boolean } {
  const dv = store.changeCounters().dataVersion;
  if (!opts.force && stamps.get(store) === `${dv}:${store.changeCounters().ownChanges}`) {
    return { added: 0, updated: 0, removed: 0, unchanged: 0, ms: 0, signatures: 0, skipped: true };
  }
  const r = syncSearchIndex(store);
  const signatures = syncSignatures(store);
  // the data version read before the sync: a commit by another connection during the sync
  // makes the next call sync again; our own writes are counted after it
  stamps.set(store, `${dv}:${store.changeCounters().ownChanges}`);
  return { ...r, signatures, skipped: false };
}
