// The block list `nnrag dedup` reads (records.ts dedupRows) and the (id, hash) list of the
// freshness digest come from the index extractions_list (migration 14) alone, and give
// what the same queries give from the table's rows: repository from the discovered block,
// else from the record's first provenance; the parse verdict; blocks without a module text
// left out; id order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { IndexStore } from '../../src/store/store.js';
import {
  DEDUP_ROWS_SQL,
  EXTRACTION_HASHES_SQL,
  dedupRows,
  extractionHashes,
  putExtraction,
  textHash,
} from '../../src/store/records.js';
import { emptyRecord, type BlockRecord } from '../../src/records/block.js';
import { tempDir } from '../helpers.js';

function put(store: IndexStore, id: string, text: string, record: BlockRecord): void {
  putExtraction(store, {
    id,
    hash: textHash(text),
    ok: true,
    status: 'validated',
    lines: text.split('\n').length,
    record,
    text,
  });
}

function library(): IndexStore {
  const store = IndexStore.open(path.join(tempDir(), 'store'));
  const withProvenance = (id: string, repo: string) => {
    const r = emptyRecord(id, repo);
    r.provenance = [{ repo, revision: null, url: null, path: 'm.py', module: 'm', swhid: '', ranges: [] }];
    return r;
  };
  const validated = (r: BlockRecord, parse: 'pass' | 'fail') => {
    r.validation = {
      stages: {
        parse,
        compile: 'pass',
        import: 'pass',
        namespace: 'skip',
        instantiate: 'pass',
        forward: 'pass',
        equivalence: 'skip',
      },
      category: null,
      error: null,
      args: null,
      input_shapes: null,
      output_shapes: null,
      params: 0,
      envId: 'test',
    };
    return r;
  };
  store.write(() => {
    // inserted out of id order: the list is in id order all the same
    put(store, 'z:m.Z', 'class Z: pass\n', validated(withProvenance('z:m.Z', 'zrepo'), 'pass'));
    put(store, 'a:m.A', 'class A: pass\n', withProvenance('a:m.A', 'arepo'));
    put(store, 'b:m.B', 'class B: pass\n', validated(emptyRecord('b:m.B', 'b'), 'fail'));
    put(store, 'c:m.C', '', withProvenance('c:m.C', 'crepo')); // no module text
    put(store, 'd:m.D', 'class A: pass\n', withProvenance('d:m.D', 'drepo')); // a's module again
    put(store, 'é:m.E', 'class E: pass\n', withProvenance('é:m.E', 'erepo'));
  });
  // a discovered block: its repository wins over the record's
  store.replaceBlocks('own', [{ id: 'z:m.Z', name: 'Z', module: 'm', repo: 'own', path: 'm.py', line: 1, bases: [] }]);
  return store;
}

const plan = (store: IndexStore, sql: string) =>
  (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join(' | ');

test("dedup's block list and the (id, hash) list are read from the covering index", () => {
  const store = library();
  try {
    assert.match(plan(store, DEDUP_ROWS_SQL), /SCAN e USING COVERING INDEX extractions_list/);
    assert.match(plan(store, EXTRACTION_HASHES_SQL), /USING COVERING INDEX extractions_list/);
    assert.doesNotMatch(plan(store, DEDUP_ROWS_SQL), /TEMP B-TREE/);
  } finally {
    store.close();
  }
});

test('the lists read from the index are those read from the rows', () => {
  const store = library();
  try {
    const rows = dedupRows(store);
    assert.deepEqual(rows, [
      { id: 'a:m.A', hash: textHash('class A: pass\n'), repo: 'arepo', parse: null },
      { id: 'b:m.B', hash: textHash('class B: pass\n'), repo: null, parse: 'fail' },
      { id: 'd:m.D', hash: textHash('class A: pass\n'), repo: 'drepo', parse: null },
      { id: 'z:m.Z', hash: textHash('class Z: pass\n'), repo: 'own', parse: 'pass' },
      { id: 'é:m.E', hash: textHash('class E: pass\n'), repo: 'erepo', parse: null },
    ]);
    // the same statements with the index forbidden: the table's rows
    const fromRows = (sql: string) =>
      store.db.prepare(sql.replace(/FROM extractions( e)?/, 'FROM extractions$1 NOT INDEXED')).all();
    assert.match(
      plan(store, DEDUP_ROWS_SQL.replace('extractions e', 'extractions e NOT INDEXED')),
      /SCAN e\b(?! USING)/,
    );
    assert.deepEqual(fromRows(DEDUP_ROWS_SQL), rows);
    assert.deepEqual(
      extractionHashes(store),
      rows.map(({ id, hash }) => ({ id, hash })),
    );
    assert.deepEqual(fromRows(EXTRACTION_HASHES_SQL), extractionHashes(store));
  } finally {
    store.close();
  }
});
