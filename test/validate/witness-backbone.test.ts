// Backbone parameters (src/validate/README.md "Constructor arguments and inputs",
// nnrag_harness/source_provider.py): a fixture repository whose head takes a trunk of the
// repository and reads its attributes (`trunk.width`); only the trunk has a builder. In
// the real sandbox, the head is `needs-args` without witnesses and passes forward and
// equivalence with them: its parameter is the trunk built from the trunk's own witness
// (not the pooler, which the harvest also witnessed but which lacks the attribute).
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

test('a constructor parameter used as a module with attributes gets a repository class built from its witness', {
  skip: skip ?? false,
}, async () => {
  const dir = tempDir();
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  const repo = path.join(dir, 'brepo');
  cpSync(fixture('backbone'), repo, { recursive: true });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  const pool = await ValidatorPool.start({ workers: 2 });
  try {
    await api.index(ws, {
      repos: [{ name: 'brepo', url: null, path: repo, priority: 1, paths: [], description: null, packageRoots: null }],
    });
    api.discover(ws);
    const id = 'bblib.heads.Head';
    const none = await extractAndValidate(ws, [id], { validator: pool, witnesses: false, force: true });
    const v0 = none[0].validation as { category: string; stages: Record<string, string> };
    assert.equal(v0.category, 'needs-args', JSON.stringify(v0));

    const withW = await extractAndValidate(ws, [id], { validator: pool, force: true });
    const v = withW[0].validation as {
      stages: Record<string, string>;
      argumentsSource?: string;
      args?: unknown;
      equivalence?: { ran?: boolean; pass?: boolean };
    };
    assert.equal(v.stages.forward, 'pass', JSON.stringify(v));
    assert.equal(v.stages.equivalence, 'pass', JSON.stringify(v));
    assert.equal(v.argumentsSource, 'guess', JSON.stringify(v));
    // the trunk of the witness (width 6) gave the head its input width
    assert.match(JSON.stringify(v.args), /Trunk/, JSON.stringify(v.args));
  } finally {
    await pool.close();
  }
});
