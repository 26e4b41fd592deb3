// The search's field tables (src/store/search.ts FIELD_TABLES): one FTS5 index per field of
// the score, so a field's check among a query's candidates reads that field's own term
// lists (no column filter over search_fts). On a small store: the checks read no column
// filter for words of one term; every page equals the one the column filters give (the
// tables marked stale, which the search falls back from); a store without the tables, or
// written by code that does not know them, has them rebuilt by the next sync; a replaced
// document's field rows are replaced.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import type { BlockStatus } from '../../src/records/block.js';
import { searchBlocks, syncSearchIndex, type SearchOptions } from '../../src/search/fts.js';
import { ensureFieldTables, FIELD_TABLES, fieldTablesCurrent } from '../../src/store/search.js';
import { KV_KEYS } from '../../src/store/kv.js';
import { tempDir } from '../helpers.js';
import { moduleText, putModule } from './module-text.js';
import { spyStatements } from './spy-statements.js';

const LOW: SearchOptions = { large: 60, totalCap: 30, candidates: 25 };
const UNCAPPED: SearchOptions = { large: Number.POSITIVE_INFINITY, candidates: Number.POSITIVE_INFINITY };
const QUERIES = [
  'conv',
  'pool',
  'norm',
  'attention',
  'conv block',
  'window attention',
  'mixes tokens',
  'gated conv',
  'ConvBlock',
  'WindowAttention',
  'normalization layer',
  'residual',
  'zebra',
];
const OPTIONS: SearchOptions[] = [
  {},
  LOW,
  UNCAPPED,
  { ...LOW, all: true },
  { ...LOW, repo: 'org/doc' },
  { ...UNCAPPED, validated: true },
  { limit: 5, offset: 3 },
];

describe('search: the field tables', () => {
  let dir: string;
  let store: IndexStore;
  const put = (repo: string, cls: string, doc: string, status: BlockStatus = 'validated', layer?: string) => {
    const id = `${repo}:m.${cls}`;
    putModule(store, { id, repo, text: moduleText(cls, doc, layer), status });
  };
  /** every page of the query set, as the search returns it now */
  const pages = () =>
    QUERIES.flatMap((q) => OPTIONS.map((o) => searchBlocks(store, q, { ...o, limit: o.limit ?? 15 })));
  /** the pages the column filters over search_fts give (the field tables marked stale) */
  const filteredPages = () => {
    store.setKV(KV_KEYS.searchFields, 'stale');
    try {
      assert.equal(fieldTablesCurrent(store), false);
      return pages();
    } finally {
      ensureFieldTables(store);
    }
  };
  const same = (a: ReturnType<typeof pages>, b: ReturnType<typeof pages>) => {
    assert.equal(a.length, b.length);
    a.forEach((r, i) => {
      const { ms: _a, ...x } = r;
      const { ms: _b, ...y } = b[i];
      assert.deepEqual(x, y, `${r.query} (${i % OPTIONS.length})`);
    });
  };

  before(() => {
    dir = tempDir('nnrag-search-fields-');
    store = IndexStore.open(dir);
    store.write(() => {
      for (let i = 0; i < 40; i++) put('org/fill', `ConvAlpha${i}`, 'A projection unit.');
      for (let i = 0; i < 30; i++) put('org/doc', `Mixer${i}`, 'Mixes tokens after a conv block.');
      for (let i = 0; i < 20; i++)
        put('org/norm', `Scaler${i}`, 'Scales by a normalization.', 'validated', 'nn.LayerNorm(dim)');
      for (let i = 0; i < 10; i++) put('org/bad', `ConvBroken${i}`, 'Fails.', 'failed');
      put('org/best', 'ConvBlock', 'A conv block.');
      put('org/best', 'Conv', 'A plain conv.');
      put('org/best', 'ConvPool', 'Conv then pool.', 'extracted');
      put('org/best', 'GatedConv', 'Conv, gated.');
      put('org/attn', 'WindowAttention', 'Attention inside windows.');
      put('org/attn', 'Attention', 'Plain attention.');
      put('org/attn', 'Blender', 'Window attention over tokens, then a pool.', 'validated', 'nn.AvgPool2d(2)');
      put('org/res', 'ResnetBlock', 'A residual block.');
    });
    syncSearchIndex(store);
  });
  after(() => store.close());

  test("a field's check reads the field's own table: no column filter for words of one term, the same pages", () => {
    assert.ok(fieldTablesCurrent(store), 'the sync built the field tables');
    const seen: string[] = [];
    // the MATCH expression of every statement that returns rows
    const restore = spyStatements(store, (sql, a) => {
      if (/ MATCH /.test(sql)) seen.push(`${sql.match(/FROM (\w+)/)?.[1]} ${String(a[0])}`);
    });
    let withTables: ReturnType<typeof pages>;
    try {
      for (const q of ['conv', 'pool', 'conv block', 'window attention', 'mixes tokens', 'gated conv', 'norm'])
        for (const o of [UNCAPPED, LOW, { ...LOW, repo: 'org/doc' }]) searchBlocks(store, q, o);
      withTables = pages();
    } finally {
      restore();
    }
    const oneTerm = seen.filter((s) => !s.includes(' AND '));
    assert.ok(oneTerm.length > 50, `${oneTerm.length} statements`);
    assert.deepEqual(
      oneTerm.filter((s) => / : /.test(s)),
      [],
      'no column filter',
    );
    // each field's table was read
    for (const t of FIELD_TABLES)
      assert.ok(
        seen.some((s) => s.startsWith(`${t.table} `)),
        t.table,
      );
    same(withTables, filteredPages());
  });

  test('a store without the field tables, or written by code that does not know them, has them rebuilt by the next sync', () => {
    const before = pages();
    // a store from before the field tables: search_fts and the documents only
    store.write(() => {
      for (const t of FIELD_TABLES) store.db.exec(`DROP TABLE ${t.table}`);
      store.db.exec('DROP TRIGGER search_fields_stale');
      store.setKV(KV_KEYS.searchFields, null);
    });
    assert.equal(fieldTablesCurrent(store), false);
    same(pages(), before);
    syncSearchIndex(store);
    assert.ok(fieldTablesCurrent(store), 'rebuilt by the sync');
    same(pages(), before);

    // an older nnrag replaces a document: search_docs and search_fts only (a new rowid),
    // as its putDocs writes them
    const id = 'org/attn:m.WindowAttention';
    store.write(() => {
      const old = store.db.prepare('SELECT rowid FROM search_docs WHERE id = ?').pluck().get(id) as number;
      const doc = store.db.prepare('SELECT * FROM search_docs WHERE rowid = ?').get(old) as Record<string, unknown>;
      const fts = store.db.prepare('SELECT * FROM search_fts WHERE rowid = ?').raw().get(old) as unknown[];
      store.db.prepare('DELETE FROM search_fts WHERE rowid = ?').run(old);
      store.db.prepare('DELETE FROM search_docs WHERE rowid = ?').run(old);
      const r = store.db
        .prepare('INSERT INTO search_docs(id, key, repo, category, status, params, doc) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(id, doc.key, doc.repo, doc.category, doc.status, doc.params, doc.doc);
      store.db
        .prepare(
          `INSERT INTO search_fts(rowid, ${fts.map((_, i) => `c${i}`).join(', ')}) VALUES (?, ${fts.map(() => '?').join(', ')})`.replace(
            /c(\d)/g,
            (_, i) =>
              ['exact', 'name', 'qualname', 'summary', 'category', 'layers', 'params', 'identifiers', 'deps'][
                Number(i)
              ],
          ),
        )
        .run(r.lastInsertRowid, ...fts);
    });
    // the field tables missed that write: the search reads search_fts until they are rebuilt
    assert.equal(fieldTablesCurrent(store), false, 'the insert marked them stale');
    const named = () => searchBlocks(store, 'WindowAttention', { limit: 3 });
    assert.equal(named().hits[0]?.id, id, 'the block the query names comes first');
    const stale = pages();
    syncSearchIndex(store);
    assert.ok(fieldTablesCurrent(store), 'rebuilt by the sync');
    assert.equal(named().hits[0]?.id, id);
    same(pages(), stale);
    same(stale, filteredPages());
  });

  test("a replaced document's field rows are replaced: its old words no longer match in its fields", () => {
    // a new block (the highest rowid) whose docstring says "pool"; replaced by one whose
    // docstring does not (its layer is a pool): deleted and inserted again, it gets the same
    // rowid back, so summary rows left behind would be read as the new document's
    put('org/new', 'Striper', 'Quagga pool.');
    syncSearchIndex(store);
    const id = 'org/new:m.Striper';
    const rowid = store.db.prepare('SELECT rowid FROM search_docs WHERE id = ?').pluck().get(id);
    assert.equal(store.db.prepare('SELECT max(rowid) FROM search_docs').pluck().get(), rowid);
    const score = () => searchBlocks(store, 'pool', { ...UNCAPPED, all: true }).hits.find((h) => h.id === id)?.score;
    const inSummary = score();
    put('org/new', 'Striper', 'Zebra stripes.', 'validated', 'nn.MaxPool2d(2)');
    syncSearchIndex(store);
    assert.ok(fieldTablesCurrent(store));
    assert.equal(store.db.prepare('SELECT rowid FROM search_docs WHERE id = ?').pluck().get(id), rowid, 'same rowid');
    assert.deepEqual(
      searchBlocks(store, 'zebra').hits.map((h) => h.id),
      [id],
    );
    // "pool" is now in its layers only: a lower score than in its docstring, the score the
    // column filters over search_fts give
    const inLayers = score();
    assert.ok(inSummary !== undefined && inLayers !== undefined && inLayers < inSummary, `${inLayers} < ${inSummary}`);
    store.setKV(KV_KEYS.searchFields, 'stale');
    const filtered = score();
    ensureFieldTables(store);
    assert.equal(inLayers, filtered);
    same(pages(), filteredPages());
  });
});
