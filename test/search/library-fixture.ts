// A real library for the search, export and catalog tests: the bundled example corpus
// (examples/) indexed, discovered, extracted and validated in the sandbox, exactly like
// `nnrag demo`, into a fresh store; or any fixture folder the same way.
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { repoRoot, tempDir } from '../helpers.js';

export const examplesDir = path.join(repoRoot, 'examples');

/** Build the example library in a fresh store and return its folder (validate=false: emit only). */
export async function buildExampleLibrary(opts: { validate?: boolean } = {}): Promise<string> {
  return buildLibraryOf('examples', examplesDir, opts);
}

/** Build the library of one folder of Python packages in a fresh store (every block, or
 *  those of `only` by class name) and return the store's folder. */
export async function buildLibraryOf(
  name: string,
  folder: string,
  opts: { validate?: boolean; only?: string[] } = {},
): Promise<string> {
  const dir = tempDir('nnrag-search-');
  const ws = api.Workspace.open(dir);
  try {
    await api.index(ws, {
      repos: [{ name, url: null, path: folder, priority: 1, paths: [], description: null, packageRoots: null }],
    });
    const blocks = api.discover(ws).filter((b) => !opts.only || opts.only.includes(b.name));
    await extractAndValidate(
      ws,
      blocks.map((b) => b.id),
      { validate: opts.validate !== false },
    );
  } finally {
    ws.close();
  }
  return dir;
}
