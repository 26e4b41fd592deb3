// `nnrag extract` and `nnrag validate` as functions of the API: (index and discover first
// when asked,) select the blocks, and run the validating pipeline on them
// (src/pipeline/pipeline.ts `extractAndValidate`: extract, validate, promote).
import type { ConfiguredRepo } from '../config/repos.js';
import type { IndexProgress, IndexReport } from '../indexer/indexer.js';
import { extractAndValidate, type PipelineOptions } from '../pipeline/pipeline.js';
import type { BlockRecord } from '../records/block.js';
import { Costs } from '../util/costs.js';
import type { Workspace } from '../workspace.js';
import { discover, selectBlocks, type Selection } from './discover.js';
import { index } from './index-repos.js';

export interface ExtractCommandOptions extends PipelineOptions, Selection {
  /** index these repositories first and discover their blocks, as `nnrag index` would
   *  (unchanged files are not parsed again; an empty list: the store's repositories) */
  repos?: ConfiguredRepo[];
  onIndexProgress?: (p: IndexProgress) => void;
  onIndexed?: (report: IndexReport) => void;
}

/** `nnrag extract`: (index and discover `repos` first, when given;) the selected blocks
 *  extracted, validated unless `validate: false`, and placed in the library. */
export async function extract(ws: Workspace, opts: ExtractCommandOptions = {}): Promise<BlockRecord[]> {
  const costs = opts.costs ?? new Costs();
  const repos = opts.repos;
  if (repos) {
    // an empty list indexes the store's repositories again, as `nnrag index` does
    const report = await costs.timeAsync('index', '', () => index(ws, { repos, onProgress: opts.onIndexProgress }));
    // the indexer's phases; parseCpu: per-file parse time in the parse workers, summed
    const it = report.timings;
    for (const k of ['list', 'hash', 'parse', 'store'] as const) costs.add(`index: ${k}`, '', it[k]);
    costs.add('index: parse in the workers (summed)', '', it.parseCpu);
    opts.onIndexed?.(report);
    costs.time('discover', '', () => discover(ws));
  }
  return extractAndValidate(ws, selectBlocks(ws, opts), { ...opts, costs });
}

/** `nnrag validate`: the selected blocks (every stored block without names) extracted and
 *  validated in the sandbox. */
export async function validate(ws: Workspace, opts: PipelineOptions & Selection = {}): Promise<BlockRecord[]> {
  return extractAndValidate(ws, selectBlocks(ws, opts), { ...opts, validate: true });
}
