// The block record: docs/block-record.schema.json is current, real extraction records
// (from the example corpus) and records stored before the record was versioned conform to
// it, and the JSON fields users saw before are all still there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { BLOCK_RECORD_SCHEMA, blockRecordSchemaText } from '../../src/library/record-schema.js';
import { decodeRecord, getExtraction } from '../../src/store/records.js';
import { addValidation, BLOCK_RECORD_VERSION, matchesEnvironment, validationsOf } from '../../src/records/block.js';
import { repoRoot, tempDir } from '../helpers.js';
import { violations } from '../support/json-schema.js';

test('docs/block-record.schema.json is the schema the code describes (regenerate: node dist/scripts/block-record-schema.js)', () => {
  assert.equal(readFileSync(path.join(repoRoot, 'docs', 'block-record.schema.json'), 'utf8'), blockRecordSchemaText());
});

test('the schema checker rejects what does not conform', () => {
  assert.notDeepEqual(violations(BLOCK_RECORD_SCHEMA, { id: 'x' }), []);
  assert.notDeepEqual(
    violations(BLOCK_RECORD_SCHEMA, { ...decodeRecord('{"id":"x"}'), emission: { profile: 'tiny' } }),
    [],
  );
  assert.notDeepEqual(violations(BLOCK_RECORD_SCHEMA, { ...decodeRecord('{"id":"x"}'), surprise: 1 }), []);
});

test('extraction records conform to the schema and keep the fields --json always printed', async () => {
  const ws = api.Workspace.open(tempDir());
  try {
    await api.index(ws, {
      repos: [
        {
          name: 'examples',
          url: null,
          path: path.join(repoRoot, 'examples'),
          priority: 1,
          paths: [],
          description: null,
          packageRoots: null,
        },
      ],
    });
    const ids = api.discover(ws).map((b) => b.id);
    assert.ok(ids.length > 3);
    const records = api.extractBlocks(ws, ids);
    for (const r of records) {
      assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, JSON.parse(JSON.stringify(r))), [], r.id);
      for (const k of [
        'id',
        'file',
        'ok',
        'lines',
        'diagnostics',
        'interned',
        'externs',
        'ms',
        'provenance',
        'renames',
      ])
        assert.ok(k in r, `${r.id}: ${k}`);
      assert.equal(r.emission.profile, 'faithful');
      assert.equal(r.repository, 'examples');
      assert.equal(r.source?.className, r.id.slice(r.id.lastIndexOf('.') + 1));
      // what the store gives back is the same record
      assert.deepEqual(getExtraction(ws.store, r.id)!.record, { ...r });
    }
    const bad = api.extractBlocks(ws, ['examples.nowhere.Nothing'])[0];
    assert.match(bad.error ?? '', /not a class/);
    assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, JSON.parse(JSON.stringify(bad))), []);
  } finally {
    ws.close();
  }
});

test('a record stored before the record was versioned decodes to the current record', () => {
  const old = {
    id: 'pkg.m.Block',
    file: '/lib/extracted/pkg.m.Block.py',
    ok: true,
    lines: 3,
    diagnostics: [],
    interned: ['pkg.m'],
    externs: ['torch'],
    ms: 2.5,
  };
  const r = decodeRecord(JSON.stringify(old));
  assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, r), []);
  assert.equal(r.version, BLOCK_RECORD_VERSION);
  assert.deepEqual(r.emission, { profile: 'faithful' });
  assert.deepEqual(r.provenance, []);
  assert.equal(r.file, old.file);
  assert.deepEqual(r.externs, ['torch']);
});

test('a version-1 record keeps its one validation as its one environment; a run elsewhere adds, a failure elsewhere does not unvalidate', () => {
  const stages = {
    parse: 'pass',
    compile: 'pass',
    import: 'pass',
    namespace: 'skip',
    instantiate: 'pass',
    forward: 'pass',
    equivalence: 'skip',
  } as const;
  const v1 = {
    version: 1,
    id: 'pkg.m.Block',
    ok: true,
    lines: 3,
    externs: ['torch'],
    ms: 1,
    validation: {
      stages,
      category: null,
      error: null,
      args: {},
      input_shapes: [[1]],
      output_shapes: [[1]],
      params: 0,
      envId: 'aaaa1111bbbb2222',
      python: '/usr/bin/python3',
    },
  };
  const r = decodeRecord(JSON.stringify(v1));
  assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, JSON.parse(JSON.stringify(r))), []);
  assert.deepEqual(Object.keys(r.validations!), ['aaaa1111bbbb2222']);
  assert.equal(r.validations!.aaaa1111bbbb2222.ok, true);
  assert.equal(r.validations!.aaaa1111bbbb2222.label, '/usr/bin/python3');

  // the same module fails in another environment (torch too old): added, the block stays validated
  const failed = {
    ...v1.validation,
    stages: { ...stages, forward: 'fail' as const },
    category: 'torch-version',
    envId: 'cccc3333dddd4444',
    environment: { id: 'cccc3333dddd4444', label: 'python 3.11.2, torch 1.13.1', python: '3.11.2', torch: '1.13.1' },
  };
  const m = addValidation(validationsOf(r), failed, false);
  assert.equal(m.ok, true);
  assert.deepEqual(Object.keys(m.validations).sort(), ['aaaa1111bbbb2222', 'cccc3333dddd4444']);
  assert.equal(m.validation.envId, 'aaaa1111bbbb2222', 'the validation shown is the one that passed');
  assert.equal(m.validations.cccc3333dddd4444.ok, false);
  // the first environment re-runs and now fails: no environment passes any more
  const again = addValidation(m.validations, { ...failed, envId: 'aaaa1111bbbb2222', environment: undefined }, false);
  assert.equal(again.ok, false);
  assert.equal(Object.keys(again.validations).length, 2, 'a re-run in the same environment replaces its entry');
  // a newer nnrag (another harness, so another id) in the same environment replaces that
  // environment's entry instead of adding a second one with the same label
  const facts = {
    label: '/e (python 3.11.2, torch 2.15.0)',
    python: '3.11.2',
    torch: '2.15.0',
    venv: '/e',
    lock: 'ab12',
  };
  const older = addValidation({}, { ...failed, envId: 'eeee0001', environment: { id: 'eeee0001', ...facts } }, false);
  const newer = addValidation(
    older.validations,
    { ...v1.validation, envId: 'eeee0002', environment: { id: 'eeee0002', ...facts } },
    true,
  );
  assert.deepEqual(Object.keys(newer.validations), ['eeee0002']);
  assert.equal(newer.ok, true);
  // another lock at the same path is another environment: both kept
  const other = addValidation(
    newer.validations,
    { ...failed, envId: 'eeee0003', environment: { id: 'eeee0003', ...facts, lock: 'cd34' } },
    false,
  );
  assert.deepEqual(Object.keys(other.validations).sort(), ['eeee0002', 'eeee0003']);
  // a record of a PyPI environment names it by its lock, not its folder (issue 28): the
  // same lock in its older record (with its folder), or reached through another folder,
  // is the same environment, whose newer result replaces the older
  const { venv: _venv, ...locked } = facts;
  const byLock = addValidation(
    newer.validations,
    {
      ...failed,
      envId: 'eeee0004',
      environment: { id: 'eeee0004', ...locked, label: 'PyPI environment, lock ab12 (python 3.11.2, torch 2.15.0)' },
    },
    false,
  );
  assert.deepEqual(Object.keys(byLock.validations), ['eeee0004']);
  // the block's distributions are what its validation imported: one more (a usage line
  // naming an installed package's class) is the same environment; another version is not
  const imported = { ...facts, distributions: ['torch==2.15.0'] };
  const first = addValidation(
    {},
    { ...failed, envId: 'ffff0001', environment: { id: 'ffff0001', ...imported } },
    false,
  );
  const more = addValidation(
    first.validations,
    {
      ...v1.validation,
      envId: 'ffff0002',
      environment: { id: 'ffff0002', ...imported, distributions: ['timm==1.0.29', 'torch==2.15.0'] },
    },
    true,
  );
  assert.deepEqual(Object.keys(more.validations), ['ffff0002']);
  const upgraded = addValidation(
    more.validations,
    { ...failed, envId: 'ffff0003', environment: { id: 'ffff0003', ...imported, distributions: ['Timm==1.1.0'] } },
    false,
  );
  assert.deepEqual(Object.keys(upgraded.validations).sort(), ['ffff0002', 'ffff0003']);
  // --env matches an id, a prefix of it, or a part of the label
  const env = { id: 'cccc3333dddd4444', label: failed.environment.label };
  assert.ok(matchesEnvironment(env, 'cccc3333dddd4444'));
  assert.ok(matchesEnvironment(env, 'cccc33'));
  assert.ok(matchesEnvironment(env, 'torch 1.13'));
  assert.ok(!matchesEnvironment(env, 'torch 2.6'));
  assert.ok(!matchesEnvironment(env, 'ccc'), 'an id prefix needs four characters');
});
