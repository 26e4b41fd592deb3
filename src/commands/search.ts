// The search-stage commands as functions of the API: `nnrag search`, `nnrag similar` and
// `nnrag export`. Each brings the search structures up to date with the store first; the
// CLI parses flags and prints what they return.
import { exportBlock, type ExportOptions, type ExportReport } from '../export/export.js';
import { facets, resolveLibraryId, searchBlocks, type SearchOptions, type SearchResult } from '../search/index.js';
import { refreshSearch } from '../search/refresh.js';
import { similarBlocks, type SimilarHit } from '../search/similar.js';
import { UsageError } from '../util/errors.js';
import type { Workspace } from '../workspace.js';

/** `nnrag search`: full-text search of the library; a `repo` filter no block comes from is a
 *  usage error naming the repositories there are. */
export function search(ws: Workspace, query: string, opts: SearchOptions = {}): SearchResult {
  refreshSearch(ws.store);
  const known = facets(ws.store).repos;
  const repos = opts.repo === undefined ? [] : Array.isArray(opts.repo) ? opts.repo : [opts.repo];
  for (const r of repos) {
    if (!known.includes(r)) throw new UsageError(`--repo ${r}: no library block comes from it (repositories: ${known.join(', ') || 'none'})`);
  }
  return searchBlocks(ws.store, query, opts);
}

/** `nnrag similar`: the `k` blocks nearest to a block (an id or a name naming one block). */
export function similar(ws: Workspace, idOrName: string, k = 10): { id: string; similar: SimilarHit[] } {
  refreshSearch(ws.store);
  const id = resolveLibraryId(ws.store, idOrName);
  return { id, similar: similarBlocks(ws.store, id, k) };
}

/** `nnrag export`: write a library block into another project (an id or a name naming one block). */
export async function exportLibraryBlock(ws: Workspace, idOrName: string, opts: ExportOptions): Promise<ExportReport> {
  const id = resolveLibraryId(ws.store, idOrName);
  return exportBlock(ws.store, id, opts);
}
