// One call that brings every search structure (FTS documents, similarity signatures) up to
// date with the stored extractions and specs; used by the CLI commands and the web
// catalog. A cheap stamp of the source tables (row count, highest rowid — INSERT OR
// REPLACE gives a replaced row a new rowid — and latest `updated` time) skips the work
// when nothing was written since the last refresh through this store handle.
import type { IndexStore } from '../index/store.js';
import { hasTable } from './documents.js';
import { syncSearchIndex, type SyncReport } from './index.js';
import { syncSignatures } from './similar.js';

const stamps = new WeakMap<IndexStore, string>();

function stamp(store: IndexStore): string {
  const part = (t: string) => JSON.stringify(store.stmt(`SELECT count(*), max(rowid), max(updated) FROM ${t}`).raw().get());
  return part('extractions') + (hasTable(store, 'specs') ? part('specs') : '');
}

export function refreshSearch(store: IndexStore, opts: { force?: boolean } = {}): SyncReport & { signatures: number; skipped: boolean } {
  const s = stamp(store);
  if (!opts.force && stamps.get(store) === s) return { added: 0, updated: 0, removed: 0, unchanged: 0, ms: 0, signatures: 0, skipped: true };
  const r = syncSearchIndex(store);
  const signatures = syncSignatures(store);
  stamps.set(store, s);
  return { ...r, signatures, skipped: false };
}
