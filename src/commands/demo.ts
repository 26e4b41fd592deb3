// `nnrag demo` as a function of the API: the whole pipeline on the bundled example corpus
// (examples/): index, discover, extract and validate, then the library (specs, manifests,
// requirements), duplicate clusters and the report.
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { Block } from '../discover/discover.js';
import type { IndexReport } from '../indexer/indexer.js';
import { buildLibrary, runDedup, type LibraryResult, type StoredDedup } from '../library/library.js';
import type { BlockRecord } from '../records/block.js';
import { buildReport, type LibraryReport } from '../library/report.js';
import type { Workspace } from '../workspace.js';
import { discover } from './discover.js';
import { extractAndValidate, type PipelineOptions } from './extract.js';
import { index } from './index-repos.js';

/** The bundled example corpus (`examples/` of the package). */
export const EXAMPLES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'examples');

export interface DemoResult {
  examples: string;
  index: IndexReport;
  blocks: Block[];
  records: BlockRecord[];
  library: LibraryResult;
  dedup: Pick<StoredDedup, 'uniqueCount' | 'clusters'>;
  report: LibraryReport;
}

export async function demo(ws: Workspace, opts: PipelineOptions & { out?: string } = {}): Promise<DemoResult> {
  const report = await index(ws, {
    repos: [
      {
        name: 'examples',
        url: null,
        path: EXAMPLES_DIR,
        priority: 1,
        paths: [],
        description: 'bundled example corpus',
        packageRoots: null,
      },
    ],
  });
  const blocks = discover(ws);
  const records = await extractAndValidate(
    ws,
    blocks.map((b) => b.id),
    opts,
  );
  const library = await buildLibrary(ws, { out: opts.out });
  const dedup = await runDedup(ws);
  return {
    examples: EXAMPLES_DIR,
    index: report,
    blocks,
    records,
    library,
    dedup: { uniqueCount: dedup.uniqueCount, clusters: dedup.clusters },
    report: buildReport(ws.store, { storeDir: ws.storeDir }),
  };
}
