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
import { repoRoot, tempDir } from '../helpers.js';
import { violations } from '../support/json-schema.js';

test('docs/block-record.schema.json is the schema the code describes (regenerate: node dist/scripts/block-record-schema.js)', () => {
  assert.equal(readFileSync(path.join(repoRoot, 'docs', 'block-record.schema.json'), 'utf8'), blockRecordSchemaText());
});

test('the schema checker rejects what does not conform', () => {
  assert.notDeepEqual(violations(BLOCK_RECORD_SCHEMA, { id: 'x' }), []);
  assert.notDeepEqual(violations(BLOCK_RECORD_SCHEMA, { ...decodeRecord('{"id":"x"}'), emission: { profile: 'tiny' } }), []);
  assert.notDeepEqual(violations(BLOCK_RECORD_SCHEMA, { ...decodeRecord('{"id":"x"}'), surprise: 1 }), []);
});

test('extraction records conform to the schema and keep the fields --json always printed', async () => {
  const ws = api.Workspace.open(tempDir());
  try {
    await api.index(ws, {
      repos: [{ name: 'examples', url: null, path: path.join(repoRoot, 'examples'), priority: 1, paths: [], description: null, packageRoots: null }],
    });
    const ids = api.discover(ws).map((b) => b.id);
    assert.ok(ids.length > 3);
    const records = api.extractBlocks(ws, ids);
    for (const r of records) {
      assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, JSON.parse(JSON.stringify(r))), [], r.id);
      for (const k of ['id', 'file', 'ok', 'lines', 'diagnostics', 'interned', 'externs', 'ms', 'provenance', 'renames']) assert.ok(k in r, `${r.id}: ${k}`);
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
  const old = { id: 'pkg.m.Block', file: '/lib/extracted/pkg.m.Block.py', ok: true, lines: 3, diagnostics: [], interned: ['pkg.m'], externs: ['torch'], ms: 2.5 };
  const r = decodeRecord(JSON.stringify(old));
  assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, r), []);
  assert.equal(r.version, 1);
  assert.deepEqual(r.emission, { profile: 'faithful' });
  assert.deepEqual(r.provenance, []);
  assert.equal(r.file, old.file);
  assert.deepEqual(r.externs, ['torch']);
});
