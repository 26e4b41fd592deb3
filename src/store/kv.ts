// The keys of the store's key/value table (`kv`), in one place: each key a typed constant,
// so a reader and a writer of the same entry cannot spell it two ways. Values are JSON
// text; the modules that own an entry encode and decode it.
export const KV_KEYS = {
  /** summary of the last `nnrag library` run (LibraryResult without the manifest, plus `at`) */
  libraryLast: 'library:last',
  /** summary of the last `nnrag dedup` run (StoredDedup without the clusters) */
  dedupLast: 'dedup:last',
  /** the diversity top-up of the last `nnrag dedup --top-up N` ({ min, categories }) */
  dedupTopUp: 'dedup:topup',
  /** where the time of the last extract / validate run went (util/costs.ts CostTable) */
  costsLast: 'costs:last',
  /** the PyPI environment `nnrag env create|sync DIR --store S` made for this store (its
   *  folder, as JSON text): validation uses it when no --env, --python or --rootfs is given */
  environment: 'environment:pypi',
  /** the banding the rows of search_bands were made with (src/search/similar.ts BANDING):
   *  when it differs from the code's, the band keys are rebuilt from the stored signatures */
  similarBands: 'similar:bands',
  /** whether the search's field tables hold every stored document (src/store/search.ts
   *  FIELD_TABLES: 'current:<layout>', or 'stale' after a write they missed) */
  searchFields: 'search:fields',
  /** whether the search structures (documents, field tables, similarity signatures) were
   *  brought up to date with every stored extraction and spec: 'current:<digest of the
   *  code's layouts>' after a sync, 'syncing:<nonce>' during one, 'stale' after a write to
   *  extractions or specs (src/store/search.ts SYNC_TRIGGERS) */
  searchSynced: 'search:synced',
} as const;

/** Requirements (import name → Requirement) probed in one validation environment. */
export function requirementsKey(env: string): KvKey {
  return `requirements:${env}`;
}

/** What a validation environment's workers reported (torch and Python versions), by the
 *  digest of the environment as probed without starting them (ValidatorPool.environmentKey). */
export function workerInfoKey(envProbe: string): KvKey {
  return `workers:${envProbe}`;
}

export type KvKey = (typeof KV_KEYS)[keyof typeof KV_KEYS] | `requirements:${string}` | `workers:${string}`;
