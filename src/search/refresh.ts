// One call that brings every search structure (FTS documents, similarity signatures) up to
// date with the stored extractions; used by the CLI commands and the web catalog.
import type { IndexStore } from '../index/store.js';
import { syncSearchIndex, type SyncReport } from './index.js';
import { syncSignatures } from './similar.js';

export function refreshSearch(store: IndexStore): SyncReport & { signatures: number } {
  const r = syncSearchIndex(store);
  const signatures = syncSignatures(store);
  return { ...r, signatures };
}
