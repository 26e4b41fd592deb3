// Shards and their merge (docs/SCALE.md): `buildShard` runs the whole pipeline for one
// repository (index its universe, discover, extract and validate the repository's own
// blocks) into a store of its own, and `merge` (`nnrag merge SHARD… --into STORE`) unions
// finished shards into one library. A queue worker (commands/queue.ts) calls buildShard
// for each job.
//
// Nothing partial is ever merged: a shard is built in a temporary folder beside its final
// place, marked finished in its own store (store/merge.ts SHARD_MARK_KEY) as the last
// write, closed, and only then renamed into place (rename(2) is atomic within one file
// system). A worker killed at any moment leaves a `.tmp-…` folder with no mark, which the
// merge refuses and the next build of the same repository removes.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, copyFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ConfiguredRepo } from '../config/repos.js';
import { idFileStem } from '../discover/ids.js';
import { blockFile, libraryDir, placeBlockFile, removeBlockFile } from '../library/layout.js';
import { storeMissingSignatures } from '../library/library.js';
import type { BlockRecord, BlockStatus } from '../records/block.js';
import {
  mergeShardRows,
  mergedRepos,
  readShardMark,
  seedFacts,
  shareFacts,
  writeShardMark,
  type MergedRows,
  type ShardMark,
} from '../store/merge.js';
import { IndexStore } from '../store/store.js';
import { storeExists } from '../store/location.js';
import { NnragError, UsageError } from '../util/errors.js';
import { Workspace } from '../workspace.js';
import { discover } from './discover.js';
import { extractAndValidate, type PipelineOptions } from '../pipeline/pipeline.js';
import { index } from './index-repos.js';

/** Does a process with this id run on this machine? (signal 0 checks without sending) */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The folder of a repository's shard under the shards folder. */
export function shardDir(shardsDir: string, repo: string): string {
  return path.join(path.resolve(shardsDir), idFileStem(repo));
}

export interface ShardOptions extends Omit<PipelineOptions, 'onProgress' | 'validator'> {
  /** the repository cache shared by the shards of this machine (default `<shards>/.repos`) */
  cacheDir?: string;
  /** the facts cache shared by the shards of this machine (a store; default
   *  `<shards>/.facts`; false: none, every shard parses its whole universe) */
  factsCache?: string | false;
  /** each phase as it starts, and every block as it finishes */
  onPhase?: (phase: 'index' | 'discover' | 'extract' | 'done', done?: number, total?: number) => void;
}

export interface ShardResult extends ShardMark {
  dir: string;
  records: BlockRecord[];
}

/**
 * Build the shard of `repo`: index `universe` (the repositories its imports may reach, the
 * repository itself among them, as `nnrag index` would), discover, then extract (and
 * validate unless `validate: false`) the blocks of `repo` only. The finished shard replaces
 * an older one of the same repository.
 */
export async function buildShard(
  shardsDir: string,
  repo: string,
  universe: ConfiguredRepo[],
  opts: ShardOptions = {},
): Promise<ShardResult> {
  if (!universe.some((r) => r.name === repo))
    throw new UsageError(`repository ${repo} is not in its own universe (${universe.map((r) => r.name).join(', ')})`);
  const root = path.resolve(shardsDir);
  mkdirSync(root, { recursive: true });
  const final = shardDir(root, repo);
  const stem = path.basename(final);
  // leftovers of killed builds of this repository on this machine: its host name and a pid
  // that no longer runs (the shards folder may be shared by several machines, and a job
  // found stalled may still be running in a live process here)
  const host = os.hostname().replace(/[^\w.-]/g, '_');
  for (const f of readdirSync(root)) {
    const m = f.startsWith(`.tmp-${stem}-${host}-`) ? /-(\d+)-\d+$/.exec(f) : null;
    if (m && !alive(Number(m[1]))) rmSync(path.join(root, f), { recursive: true, force: true });
  }
  const tmp = path.join(root, `.tmp-${stem}-${host}-${process.pid}-${Date.now()}`);
  const timings: Record<string, number> = {};
  const t = (k: string, t0: number) => (timings[k] = Math.round(performance.now() - t0));
  const ws = Workspace.open(tmp, { create: true });
  let records: BlockRecord[];
  let mark: ShardMark;
  try {
    let t0 = performance.now();
    opts.onPhase?.('index');
    const factsCache = opts.factsCache === false ? null : path.resolve(opts.factsCache ?? path.join(root, '.facts'));
    if (factsCache) {
      IndexStore.open(factsCache).close(); // created and migrated before it is attached
      timings.seededFacts = seedFacts(
        ws.store,
        path.join(factsCache, 'index.sqlite'),
        universe.map((r) => r.name),
      );
    }
    await index(ws, { repos: universe, cacheDir: opts.cacheDir ?? path.join(root, '.repos') });
    t('index', t0);
    t0 = performance.now();
    opts.onPhase?.('discover');
    const ids = discover(ws)
      .filter((b) => b.repo === repo)
      .map((b) => b.id);
    t('discover', t0);
    t0 = performance.now();
    opts.onPhase?.('extract', 0, ids.length);
    records = await extractAndValidate(ws, ids, { ...opts, onProgress: (d, n) => opts.onPhase?.('extract', d, n) });
    t(opts.validate === false ? 'extract' : 'extract+validate', t0);
    mark = {
      repo,
      universe: universe.map((r) => r.name),
      blocks: ids.length,
      finished: new Date().toISOString(),
      timings,
      peakRss: process.resourceUsage().maxRSS * 1024,
      validate: opts.validate !== false,
    };
    writeShardMark(ws.store, mark);
    if (factsCache) {
      const cache = IndexStore.open(factsCache);
      try {
        shareFacts(cache, path.join(tmp, 'index.sqlite'));
      } finally {
        cache.close();
      }
    }
  } catch (e) {
    ws.close();
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  ws.close();
  // the old shard of this repository (a retry, a re-run) makes way, then the new one moves in
  if (existsSync(final)) {
    const old = path.join(root, `.old-${stem}-${host}-${process.pid}-${Date.now()}`);
    renameSync(final, old);
    rmSync(old, { recursive: true, force: true });
  }
  renameSync(tmp, final);
  opts.onPhase?.('done');
  return { ...mark, dir: final, records: records.map((r) => ({ ...r, file: r.file?.replace(tmp, final) })) };
}

export interface MergeResult {
  into: string;
  shards: { dir: string; repo: string; rows: MergedRows }[];
  /** owner repositories the merged store holds now */
  repos: string[];
}

/**
 * `nnrag merge SHARD… --into STORE`: union finished shards into the store `into` (created
 * if needed) and place their blocks' files in its library. Content-addressed and
 * idempotent: merging a shard twice, or the shards in another order, gives the same
 * store rows and files (store/merge.ts). A folder that is not a finished shard is refused
 * before anything is written; two shards of one repository in one merge too.
 */
export function merge(into: string, shards: string[], opts: { out?: string } = {}): MergeResult {
  if (!shards.length) throw new UsageError('name the shard folders to merge');
  const marks: { dir: string; mark: ShardMark }[] = [];
  for (const s of shards) {
    const dir = path.resolve(s);
    if (!storeExists(dir) || !statSync(dir).isDirectory())
      throw new UsageError(`${s}: not an nnrag store (no index.sqlite)`);
    const st = IndexStore.open(dir, { create: false });
    let mark: ShardMark | null;
    try {
      mark = readShardMark(st);
    } finally {
      st.close();
    }
    if (!mark)
      throw new NnragError(
        `${s}: not a finished shard (no completion mark: a worker was stopped while building it, or it is not a shard)`,
        'not-a-shard',
      );
    const twin = marks.find((m) => m.mark.repo === mark!.repo);
    if (twin) throw new UsageError(`${s} and ${twin.dir} are both shards of ${mark.repo}: merge one of them`);
    marks.push({ dir, mark });
  }
  if (marks.some((m) => path.resolve(into) === m.dir)) throw new UsageError('--into must not be one of the shards');
  const ws = Workspace.open(into, { create: true });
  const out = libraryDir(ws.storeDir, opts.out);
  const done: MergeResult['shards'] = [];
  try {
    // repositories in name order: the rows do not depend on it, the files neither
    for (const { dir, mark } of [...marks].sort((a, b) => (a.mark.repo < b.mark.repo ? -1 : 1))) {
      const shardLib = path.join(dir, 'library');
      const placed: { id: string; status: BlockStatus; text: string }[] = [];
      const rows = mergeShardRows(ws.store, path.join(dir, 'index.sqlite'), mark, (id, status, recordJson, text) => {
        const record = JSON.parse(recordJson) as BlockRecord;
        placed.push({ id, status: status as BlockStatus, text });
        if (record.file) record.file = blockFile(out, status as BlockStatus, id);
        return JSON.stringify(record);
      });
      // the blocks' files: the module as stored, the failure note as the worker wrote it
      for (const { id, status, text } of placed) {
        placeBlockFile(out, status, id, '.py', text);
        const note = blockFile(shardLib, status, id, '.json');
        if (existsSync(note)) {
          const to = blockFile(out, status, id, '.json');
          mkdirSync(path.dirname(to), { recursive: true });
          copyFileSync(note, to);
        } else removeBlockFile(out, id, '.json');
      }
      done.push({ dir, repo: mark.repo, rows });
    }
    // modules of shards that came without their de-duplication signatures get them now
    storeMissingSignatures(ws.store);
    ws.invalidate();
    return { into: ws.storeDir, shards: done, repos: mergedRepos(ws.store) };
  } finally {
    ws.close();
  }
}
