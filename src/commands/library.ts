// The library-stage commands as functions of the API: `nnrag library` (specs, manifests,
// requirements), `nnrag dedup` (clusters, optional diversity top-up), `nnrag report`
// (figures, optional HTML file) and `nnrag export-pairs` (training pairs). The CLI parses
// their flags and prints what they return.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DedupOptions } from '../library/dedup.js';
import {
  buildLibrary,
  diversityTopUp,
  getDedup,
  listSpecs,
  runDedup,
  type LibraryOptions,
  type LibraryResult,
  type StoredDedup,
  type TopUp,
} from '../library/library.js';
import { trainingPairs, writePairs } from '../library/pairs.js';
import { buildReport, reportHtml, type LibraryReport } from '../library/report.js';
import { KV_KEYS } from '../store/kv.js';
import { environmentSummaries, listExtractions } from '../store/records.js';
import { environmentQuery } from '../environment/pypi.js';
import { matchesEnvironment } from '../records/block.js';
import { UsageError } from '../util/errors.js';
import type { Workspace } from '../workspace.js';

const NO_BLOCKS = 'no extracted blocks in the store: run `nnrag extract` (or `nnrag demo`) first';

function requireBlocks(ws: Workspace): void {
  if (!listExtractions(ws.store).length) throw new UsageError(NO_BLOCKS);
}

/** `nnrag library`: specs, manifests and requirements of every stored block. */
export async function library(ws: Workspace, opts: LibraryOptions = {}): Promise<LibraryResult> {
  requireBlocks(ws);
  return buildLibrary(ws, opts);
}

export interface DedupCommandOptions extends DedupOptions {
  /** give each category at least this many validated blocks back from duplicate clusters */
  topUp?: number;
}

/** `nnrag dedup`: cluster the stored blocks; with `topUp`, the diversity top-up (stored too). */
export async function dedupBlocks(
  ws: Workspace,
  opts: DedupCommandOptions = {},
): Promise<StoredDedup & { topUp?: TopUp[] }> {
  requireBlocks(ws);
  const { topUp: min, ...dedupOpts } = opts;
  const d = await runDedup(ws, dedupOpts);
  if (min === undefined) return d;
  if (!listSpecs(ws.store).length) await buildLibrary(ws);
  const topUp = diversityTopUp(listSpecs(ws.store), d.clusters, min);
  ws.store.setKV(KV_KEYS.dedupTopUp, JSON.stringify({ min, categories: topUp }));
  return { ...d, topUp };
}

/** `nnrag report`: the library's figures (clusters recomputed first when the stored ones are
 *  stale, unless `dedup` is false); with `html`, also written as an HTML file. */
export async function report(
  ws: Workspace,
  opts: { dedup?: boolean; html?: string; env?: string } = {},
): Promise<LibraryReport> {
  if (opts.env !== undefined) checkEnvironmentQuery(ws, opts.env);
  if (opts.dedup !== false) {
    const d = getDedup(ws.store);
    if (!d?.fresh) await runDedup(ws);
  }
  const r = buildReport(ws.store, { storeDir: ws.storeDir, env: opts.env });
  if (opts.html) writeFileSync(path.resolve(opts.html), reportHtml(r));
  return r;
}

/** `nnrag export-pairs`: instruction/target pairs as JSON Lines (specs built first when the
 *  store has none). */
export async function exportPairs(
  ws: Workspace,
  out: string,
  opts: { all?: boolean; python?: string } = {},
): Promise<{ file: string; pairs: number; licenses: Record<string, number> }> {
  if (!listSpecs(ws.store).length) await buildLibrary(ws, { python: opts.python });
  const pairs = trainingPairs(ws.store, { all: !!opts.all });
  const file = path.resolve(out);
  const n = writePairs(file, pairs);
  const licenses: Record<string, number> = {};
  for (const p of pairs) licenses[p.license] = (licenses[p.license] ?? 0) + 1;
  return { file, pairs: n, licenses };
}

/** `--env ID|LABEL`: it must name at least one environment blocks were validated in (an id,
 *  a prefix of one, or a part of a label); otherwise a usage error lists them. */
export function checkEnvironmentQuery(ws: Workspace, query: string): void {
  const envs = environmentSummaries(ws.store);
  const q = environmentQuery(query);
  if (envs.some((e) => matchesEnvironment({ id: e.env, label: e.label }, q))) return;
  const known = envs.map((e) => `${e.env} (${e.label})`).join(', ');
  throw new UsageError(
    `--env ${JSON.stringify(query)} names no environment blocks were validated in${known ? `; environments: ${known}` : ' (nothing was validated yet)'}`,
  );
}
