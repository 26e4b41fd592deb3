// The slim fixture (test/fixtures/slim) copied, indexed and discovered in a new store: the
// set-up of the slim emission, probe and slim-first tests.
import { chmodSync, cpSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';

export async function slimWorkspace(): Promise<{ ws: api.Workspace; dir: string }> {
  const dir = tempDir();
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  const repo = path.join(dir, 'repo');
  cpSync(fixture('slim'), repo, { recursive: true });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  await api.index(ws, {
    repos: [
      {
        name: 'org/slim',
        url: null,
        path: repo,
        priority: 1,
        paths: ['slimpkg'],
        description: null,
        packageRoots: null,
      },
    ],
  });
  api.discover(ws);
  return { ws, dir };
}
