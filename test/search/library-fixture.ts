// A real library for the search, export and catalog tests: the bundled example corpus
// (examples/) indexed, discovered, extracted and validated in the sandbox, exactly like
// `nnrag demo`, into a fresh store.
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/commands/extract.js';
import { repoRoot, tempDir } from '../helpers.js';

export const examplesDir = path.join(repoRoot, 'examples');

/** Build the example library in a fresh store and return its folder (validate=false: emit only). */
export async function buildExampleLibrary(opts: { validate?: boolean } = {}): Promise<string> {
  const dir = tempDir('nnrag-search-');
  const ws = api.Workspace.open(dir);
  try {
    await api.index(ws, {
      repos: [{ name: 'examples', url: null, path: examplesDir, priority: 1, paths: [], description: null, packageRoots: null }],
    });
    const blocks = api.discover(ws);
    await extractAndValidate(ws, blocks.map((b) => b.id), { validate: opts.validate !== false });
  } finally {
    ws.close();
  }
  return dir;
}
