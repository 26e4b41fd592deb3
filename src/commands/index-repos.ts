// `nnrag index` and `nnrag stats` as functions of the API: prepare repositories (git
// clone/fetch or local folders, src/repos) and index their Python files into the store
// (src/indexer); what the store holds. "Index" in nnrag means this one thing: parsing a
// repository's files into stored facts.
import path from 'node:path';
import type { ConfiguredRepo } from '../config/repos.js';
import {
  indexRepos,
  stats as storeStats,
  type IndexMode,
  type IndexProgress,
  type IndexReport,
  type StoreStats,
} from '../indexer/indexer.js';
import { ParsePool } from '../indexer/pool.js';
import { RepoCache } from '../repos/cache.js';
import { UsageError } from '../util/errors.js';
import type { Workspace } from '../workspace.js';

/** Load the Python parser in this thread. The resolver parses modules it reads on demand
 *  (outside the configured paths) synchronously; without a parser only contents the store
 *  already has are usable that way. `index` calls it; so does the CLI. */
export async function ready(): Promise<void> {
  // loaded here, not with this module: `nnrag index` (whose own thread never parses) does
  // not load tree-sitter's JavaScript in its main thread
  const { initParser } = await import('../parse/parser.js');
  await initParser();
}

export interface IndexOptions {
  repos: ConfiguredRepo[];
  mode?: IndexMode;
  update?: boolean;
  workers?: number;
  /** the repository cache (clones of remote repositories; default `<store>/repos`): queue
   *  workers share one per machine (RepoCache locks each repository) */
  cacheDir?: string;
  onProgress?: (p: IndexProgress) => void;
  /** parse workers already started (src/indexer/pool.ts), for a caller that indexes many
   *  stores in one process; the caller closes it. Default: a pool of `workers` for this run */
  pool?: ParsePool;
  /** make the Python parser ready in this thread too (default true: a caller that resolves
   *  after indexing needs it; the CLI's `index`, which exits after, passes false) */
  parser?: boolean;
}

/** What indexing needs of a Workspace: its store and folder, and (when it is one) the
 *  in-memory corpus to forget afterwards. The CLI's `nnrag index` passes its store alone, so
 *  that it does not load the Workspace's resolver and slim emission (cli/index-command.ts). */
export type IndexTarget = Pick<Workspace, 'store' | 'storeDir'> & Partial<Pick<Workspace, 'invalidate'>>;

/** Prepare repositories (git clone/fetch or local folders) and index their Python files.
 *  Without repos, the repositories already in the store are indexed again. */
export async function index(ws: IndexTarget, opts: IndexOptions): Promise<IndexReport> {
  // the parser of this thread starts meanwhile (the work below is in other threads or I/O)
  const parserReady = opts.parser === false ? Promise.resolve() : ready();
  parserReady.catch(() => {}); // awaited below; an error before then must not be unhandled
  const cache = new RepoCache(opts.cacheDir ?? path.join(ws.storeDir, 'repos'));
  let specs = opts.repos;
  if (!specs.length) {
    specs = ws.store.listRepos().map((r) => ({
      name: r.name,
      url: r.local ? null : r.url,
      path: r.local ? r.root : null,
      priority: r.priority,
      paths: [],
      description: null,
      packageRoots: r.packageRoots.length ? r.packageRoots : null,
    }));
    if (!specs.length) throw new UsageError('no repositories: give --repo PATH_OR_URL or --config repo_config.json');
  }
  // A first index of these repositories (or a forced one) parses every file: the parse
  // workers start now (tree-sitter in each), while the repositories are prepared, listed
  // and hashed, instead of once indexRepos has found files to parse.
  const mode = opts.mode ?? 'missing';
  const cold = mode === 'force' || (mode !== 'skip' && specs.every((s) => !ws.store.hasFiles(s.name)));
  const pool = opts.pool ?? (cold ? new ParsePool(opts.workers) : undefined);
  try {
    if (pool && !opts.pool) pool.warm();
    const checkouts = [];
    for (const spec of specs) {
      const c = await cache.prepare(spec, { update: opts.update });
      checkouts.push({ ...c, paths: spec.paths.length ? spec.paths : undefined, priority: spec.priority });
    }
    const report = await indexRepos(ws.store, checkouts, {
      mode,
      workers: opts.workers,
      onProgress: opts.onProgress,
      pool,
    });
    ws.invalidate?.();
    await parserReady;
    return report;
  } finally {
    if (pool && !opts.pool) await pool.close();
  }
}

/** `nnrag stats`: files, bytes, distinct contents, parse errors, blocks, the last run. */
export function stats(ws: Workspace): StoreStats {
  return storeStats(ws.store);
}

export type { IndexMode, IndexProgress, IndexReport, StoreStats };
