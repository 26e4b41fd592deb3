// `nnrag witnesses` as a function of the API: run (or, with `show`, read) the witness
// harvest of the store's repositories — what each class got when the repository's own
// entry points built and ran its models (src/validate/witness/).
import { UsageError } from '../util/errors.js';
import { ValidatorPool, type PoolOptions } from '../validate/index.js';
import { libraryModules, repoWitnesses, storedHarvest, type EntryReport, type HarvestResult } from '../validate/witness/index.js';
import type { Workspace } from '../workspace.js';

export interface WitnessesOptions {
  /** these repositories (every indexed one when empty) */
  repos?: string[];
  /** only read the stored harvests */
  show?: boolean;
  /** harvest again even when the repository's files and the environment are unchanged */
  force?: boolean;
  pool?: PoolOptions;
  onEntry?: (repo: string, entry: EntryReport) => void;
}

export interface RepoHarvest {
  repo: string;
  /** true: the stored harvest was still current; false: harvested now; null: read with `show` */
  cached: boolean | null;
  harvest: HarvestResult | null;
}

export async function witnesses(ws: Workspace, opts: WitnessesOptions = {}): Promise<RepoHarvest[]> {
  const known = ws.store.listRepos().map((r) => r.name);
  if (!known.length) throw new UsageError('the store has no repositories: run `nnrag index` first');
  const wanted = opts.repos?.length ? opts.repos : known;
  for (const r of wanted) if (!known.includes(r)) throw new UsageError(`unknown repository ${r} (indexed: ${known.join(', ')})`);
  if (opts.show) return wanted.map((repo) => ({ repo, cached: null, harvest: storedHarvest(ws.store, repo) }));
  const results: RepoHarvest[] = [];
  const pool = await ValidatorPool.start(opts.pool);
  try {
    for (const repo of wanted) {
      const got = await repoWitnesses(ws.store, pool, repo, {
        force: !!opts.force,
        modules: libraryModules(ws.corpus(), repo),
        onEntry: opts.onEntry ? (e) => opts.onEntry!(repo, e) : undefined,
      });
      results.push({ repo, cached: got?.cached ?? null, harvest: got?.result ?? null });
    }
  } finally {
    await pool.close();
  }
  return results;
}
