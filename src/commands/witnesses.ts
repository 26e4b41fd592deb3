// `nnrag witnesses` as a function of the API: run (or, with `show`, read) the witness
// harvest of the store's repositories — what each class got when the repository's own
// entry points built and ran its models (src/validate/witness/).
import { UsageError } from '../util/errors.js';
import { environmentIdOf, ValidatorPool, type PoolOptions } from '../validate/index.js';
import {
  currentHarvest,
  fileListing,
  libraryModules,
  repoWitnesses,
  storedHarvest,
  type EntryReport,
  type HarvestResult,
} from '../validate/witness/index.js';
import type { Workspace } from '../workspace.js';
import { rememberedWorkers, startRemembering } from '../pipeline/environment.js';

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
  for (const r of wanted)
    if (!known.includes(r)) throw new UsageError(`unknown repository ${r} (indexed: ${known.join(', ')})`);
  if (opts.show) return wanted.map((repo) => ({ repo, cached: null, harvest: storedHarvest(ws.store, repo) }));
  const results: RepoHarvest[] = [];
  // a re-run with nothing changed reads the stored harvests without starting a worker
  // (seconds: each imports torch): the environment id is known from the probe and what
  // workers of this environment reported before
  const probed = await ValidatorPool.probe(opts.pool);
  const remembered = rememberedWorkers(ws.store, probed);
  const harvestId = remembered ? environmentIdOf(probed, remembered, 'harvest') : null;
  const listing = harvestId && !opts.force ? fileListing(ws.store) : null;
  let pool: ValidatorPool | null = null;
  try {
    for (const repo of wanted) {
      const stored = harvestId && listing ? currentHarvest(ws.store, repo, harvestId, listing) : null;
      if (stored) {
        results.push({ repo, cached: true, harvest: stored });
        continue;
      }
      pool ??= await startRemembering(ws.store, opts.pool, probed);
      const got = await repoWitnesses(ws.store, pool, repo, {
        force: !!opts.force,
        // forced: every entry point runs again, none of the previous answers is reused
        noRunReuse: !!opts.force,
        corpus: ws.corpus(),
        modules: libraryModules(ws.corpus(), repo),
        onEntry: opts.onEntry ? (e) => opts.onEntry!(repo, e) : undefined,
      });
      results.push({ repo, cached: got?.cached ?? null, harvest: got?.result ?? null });
    }
  } finally {
    await pool?.close();
  }
  return results;
}
