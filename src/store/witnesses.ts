// Stored witness harvests (src/validate/witness/): one row per repository, the harvest's
// JSON under the key it was made for.
import type { IndexStore } from './store.js';

/** The harvest stored for `repo` under `key`, as JSON text; with no key, whatever is stored. */
export function getHarvest(store: IndexStore, repo: string, key?: string): string | null {
  const got = (
    key === undefined
      ? store.stmt('SELECT result FROM witness_harvests WHERE repo = ?').pluck().get(repo)
      : store.stmt('SELECT result FROM witness_harvests WHERE repo = ? AND key = ?').pluck().get(repo, key)
  ) as string | undefined;
  return got ?? null;
}

export function putHarvest(store: IndexStore, repo: string, key: string, env: string, json: string): void {
  store.write(() =>
    store
      .stmt('INSERT OR REPLACE INTO witness_harvests(repo, key, env, result) VALUES (?, ?, ?, ?)')
      .run(repo, key, env, json),
  );
}
