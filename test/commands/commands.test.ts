// The commands as functions of the package API (what `nnrag <command> --json` prints,
// without the CLI): index, discover and extract the example corpus, then library, search,
// similar, requirements, dedup and report on it, each called directly.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import * as nnrag from '../../src/nnrag.js';
import { repoRoot, tempDir } from '../helpers.js';

let ws: nnrag.Workspace;

before(async () => {
  ws = nnrag.Workspace.open(tempDir());
  await nnrag.index(ws, {
    repos: [{ name: 'examples', url: null, path: path.join(repoRoot, 'examples'), priority: 1, paths: [], description: null, packageRoots: null }],
  });
  const ids = nnrag.discover(ws).map((b) => b.id);
  nnrag.extractBlocks(ws, ids);
});

after(() => ws?.close());

test('library, search and similar are functions of the API', async () => {
  const lib = await nnrag.library(ws, { python: '/usr/bin/python3' });
  assert.ok(lib.specs > 3);
  assert.ok(existsSync(path.join(lib.out, 'required_repos.json')));
  const res = nnrag.search(ws, 'attention');
  assert.ok(res.hits.length > 0);
  assert.ok(res.hits.every((h) => h.status === 'extracted'));
  const near = nnrag.similar(ws, res.hits[0].id, 3);
  assert.equal(near.id, res.hits[0].id);
  assert.throws(() => nnrag.search(ws, 'x', { repo: 'nowhere' }), /no library block comes from it/);
});

test('requirements, dedup and report are functions of the API', async () => {
  const reqs = await nnrag.requirements(ws, { python: '/usr/bin/python3' });
  assert.deepEqual(reqs.map((r) => r.repo), ['examples']);
  const d = await nnrag.dedup(ws, { threads: 0 });
  assert.ok(d.total > 3);
  const r = await nnrag.report(ws, { dedup: false });
  assert.ok(r.repos.some((x) => x.name === 'examples' && x.discovered > 3));
});
