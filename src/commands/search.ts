// The search-stage commands as functions of the API: `nnrag search`, `nnrag similar`,
// `nnrag export` and `nnrag serve` (the web catalog). Each brings the search structures up to date with the store first; the
// CLI parses flags and prints what they return.
import { extractText } from '../pipeline/pipeline.js';
import { ready } from './index-repos.js';
import { exportBlock, heldProfile, type ExportOptions, type ExportReport } from '../export/export.js';
import type { EmissionProfile } from '../records/block.js';
import { blockEnvironments, getExtraction } from '../store/records.js';
import { environmentQuery } from '../environment/pypi.js';
import { matchesEnvironment } from '../records/block.js';
import { checkEnvironmentQuery } from './library.js';
import { facets, resolveLibraryId, searchBlocks, type SearchOptions, type SearchResult } from '../search/fts.js';
import { refreshSearch } from '../search/refresh.js';
import { startServer, type CatalogServer } from '../serve/server.js';
import { similarBlocks, type SimilarHit } from '../search/similar.js';
import { NnragError, UsageError } from '../util/errors.js';
import type { Workspace } from '../workspace.js';

/** `nnrag search`: full-text search of the library; a `repo` filter no block comes from is a
 *  usage error naming the repositories there are. */
/** the largest page searchBlocks gives */
const PAGE = 1000;

export function search(ws: Workspace, query: string, opts: SearchOptions & { env?: string } = {}): SearchResult {
  refreshSearch(ws.store);
  const known = facets(ws.store).repos;
  const repos = opts.repo === undefined ? [] : Array.isArray(opts.repo) ? opts.repo : [opts.repo];
  for (const r of repos) {
    if (!known.includes(r))
      throw new UsageError(`--repo ${r}: no library block comes from it (repositories: ${known.join(', ') || 'none'})`);
  }
  const { env, ...rest } = opts;
  if (env === undefined) return searchBlocks(ws.store, query, rest);
  // --env: the blocks that passed in the environments it names (with --all, also those
  // that failed there), in the ranking's order; the page is cut after filtering
  checkEnvironmentQuery(ws, env);
  const q = environmentQuery(env);
  const keep = new Set(
    blockEnvironments(ws.store)
      .filter((b) => (b.ok || opts.all) && matchesEnvironment({ id: b.env, label: b.label }, q))
      .map((b) => b.id),
  );
  const t0 = performance.now();
  const hits: SearchResult['hits'] = [];
  let first: SearchResult | null = null;
  for (let at = 0; ; at += PAGE) {
    const page = searchBlocks(ws.store, query, { ...rest, limit: PAGE, offset: at });
    first ??= page;
    hits.push(...page.hits.filter((h) => keep.has(h.id)));
    if (page.hits.length < PAGE || at + PAGE >= page.total) break;
  }
  const offset = opts.offset ?? 0;
  const page = hits.slice(offset, offset + (opts.limit ?? 20));
  // the entries by class name, of the blocks kept (the ranking's order)
  const groups = new Map<string, string[]>();
  for (const h of page) groups.set(h.name, [...(groups.get(h.name) ?? []), h.id]);
  return {
    ...first!,
    total: hits.length,
    totalGroups: new Set(hits.map((h) => h.name)).size,
    hits: page,
    groups: [...groups].map(([name, ids]) => ({ name, ids })),
    ms: performance.now() - t0,
  };
}

/** `nnrag similar`: the `k` blocks nearest to a block (an id or a name naming one block). */
export function similar(ws: Workspace, idOrName: string, k = 10): { id: string; similar: SimilarHit[] } {
  refreshSearch(ws.store);
  const id = resolveLibraryId(ws.store, idOrName);
  return { id, similar: similarBlocks(ws.store, id, k) };
}

/** `nnrag export`: write a library block into another project (an id or a name naming one block).
 *  `profile`: the library's module when it is of that profile; a faithful module of a slim
 *  block is emitted again from the indexed sources; a slim module the library does not hold
 *  (it fell back to faithful) is refused with the reason. */
export async function exportLibraryBlock(
  ws: Workspace,
  idOrName: string,
  opts: ExportOptions & { profile?: EmissionProfile },
): Promise<ExportReport> {
  const id = resolveLibraryId(ws.store, idOrName);
  const { profile, ...rest } = opts;
  const stored = profile ? getExtraction(ws.store, id) : null;
  if (profile && stored) {
    const held = heldProfile(stored.record);
    if (held.profile !== profile) {
      if (profile === 'slim') {
        throw new NnragError(
          `the library holds the faithful module of ${id}: ${held.fallbackReason ?? 'it was stored before slim emission; extract it again'}`,
          'profile-unavailable',
        );
      }
      await ready();
      const f = extractText(ws, id, { profile: 'faithful' });
      if (!f.text)
        throw new NnragError(
          `cannot emit the faithful module of ${id}: ${f.record.error ?? 'no text'}`,
          'profile-unavailable',
        );
      rest.profileText = { profile, text: f.text };
    }
  }
  return exportBlock(ws.store, id, rest);
}

/** `nnrag serve`: the local web catalog of the workspace's library on a loopback address
 *  (src/serve/server.ts); resolves once it listens. */
export function serve(ws: Workspace, opts: { port?: number; host?: string } = {}): Promise<CatalogServer> {
  return startServer({ ws, ...opts });
}
