// A module object used as a value (closure.ts moduleNamespace): a fixture layer picks its
// aggregation from every class of a package it imports inside a function and lists with
// `vars()`. In the real sandbox, without the package installed, the extracted block
// (whose `aggr` is a `types.ModuleType` holding the copies) imports, passes its
// namespace stage, runs forward and computes what the original computes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, cpSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { fixture, tempDir } from '../helpers.js';
import { cannotValidate } from './common.js';

const skip = await cannotValidate(true);

test('a package listed whole with vars() in a function validates through its rebuilt module', {
  skip: skip ?? false,
}, async () => {
  const dir = tempDir();
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  const repo = path.join(dir, 'modobj');
  cpSync(fixture('modobj', 'repo'), repo, { recursive: true });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  const pool = await ValidatorPool.start({ workers: 1 });
  try {
    await api.index(ws, {
      repos: [
        {
          name: 'org/modobj',
          url: null,
          path: repo,
          priority: 1,
          paths: ['usepkg'],
          description: null,
          packageRoots: null,
        },
      ],
    });
    api.discover(ws);
    const ids = ['usepkg.resolve.Pool', 'usepkg.layers.Listing'];
    const out = await extractAndValidate(ws, ids, { validator: pool, witnesses: false, force: true });
    for (const r of out) {
      const v = r.validation as { stages: Record<string, string>; equivalence?: { ran?: boolean } };
      assert.ok(v, `${r.id}: ${JSON.stringify(r)}`);
      for (const stage of ['import', 'namespace', 'instantiate', 'forward', 'equivalence'])
        assert.equal(v.stages[stage], 'pass', `${r.id} ${stage}: ${JSON.stringify(v)}`);
    }
  } finally {
    await pool.close();
    ws.close();
  }
});
