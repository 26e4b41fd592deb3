// A workspace over a copy of one test fixture, indexed as one repository (the setup many
// tests share: copy, open a store, index the fixture's packages with one worker).
import { cpSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';

/** `fixture` copied to DIR/repo and indexed as repository `name` (its `paths`) in the store DIR/store. */
export async function indexedFixture(
  fixtureName: string,
  name: string,
  paths: string[],
): Promise<{ ws: api.Workspace; dir: string; repo: string }> {
  const dir = tempDir();
  const repo = path.join(dir, 'repo');
  cpSync(fixture(fixtureName), repo, { recursive: true });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  await api.index(ws, {
    repos: [{ name, url: null, path: repo, priority: 1, paths, description: null, packageRoots: null }],
    workers: 1,
  });
  return { ws, dir, repo };
}
