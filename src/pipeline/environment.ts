// The validation environment the pipeline runs in: the PyPI environment made for the
// store (`nnrag env create --store`), and a validator pool started with what its workers
// reported (torch's and Python's versions) remembered in the store, so a later run can
// tell whether blocks validated there are still current without starting workers.
import path from 'node:path';
import { existsSync } from 'node:fs';
import { envPython } from '../environment/pypi.js';
import { KV_KEYS, workerInfoKey } from '../store/kv.js';
import type { IndexStore } from '../store/store.js';
import { ValidatorPool, type PoolOptions, type ProbedEnvironment, type WorkerInfo } from '../validate/index.js';
import type { Workspace } from '../workspace.js';

/** The PyPI environment made for a store (`env create --store`), when it still exists. */
export function storeEnvironment(ws: Workspace): string | null {
  const v = ws.store.getKV(KV_KEYS.environment);
  const dir = v ? (JSON.parse(v) as string) : null;
  return dir && existsSync(envPython(dir)) ? dir : null;
}

/** What the workers of this environment reported the last time they started, if known. */
export function rememberedWorkers(store: IndexStore, probed: Pick<ProbedEnvironment, 'key'>): WorkerInfo | null {
  const got = store.getKV(workerInfoKey(probed.key));
  return got ? (JSON.parse(got) as WorkerInfo) : null;
}

/** Start a validator pool and remember what its workers reported (rememberedWorkers); its
 *  results name the store's repositories' checkouts by their names (validate/places.ts). */
export async function startRemembering(
  store: IndexStore,
  opts: PoolOptions | undefined,
  probed?: ProbedEnvironment,
): Promise<ValidatorPool> {
  const pool = await ValidatorPool.start(opts, probed);
  // the store's repositories are named in its results' texts, not their checkouts' folders
  pool.nameRepositories(store.listRepos(), path.resolve(store.dir));
  const info: WorkerInfo = { torch: pool.torch, python: pool.pythonVersion };
  if (JSON.stringify(rememberedWorkers(store, { key: pool.envKey })) !== JSON.stringify(info))
    store.setKV(workerInfoKey(pool.envKey), JSON.stringify(info));
  return pool;
}
