// The search structures' stored sync stamp (src/search/refresh.ts, src/store/search.ts
// SYNC_TRIGGERS): a new store handle (a new process: the catalog's start, `nnrag search`)
// skips the sync's read of every extraction when the last sync's stamp is current; any
// write to extractions or specs (by this code or by SQL that knows nothing of the stamp, as
// an older nnrag's would be) makes the next refresh sync again and find the change; a write
// that commits while a sync runs leaves the stamp stale.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import { putExtraction, textHash } from '../../src/store/records.js';
import { emptyRecord } from '../../src/records/block.js';
import { searchBlocks } from '../../src/search/fts.js';
import { refreshSearch, SYNC_STAMP } from '../../src/search/refresh.js';
import { beginSync, endSync, syncedStamp } from '../../src/store/search.js';
import { KV_KEYS } from '../../src/store/kv.js';
import { tempDir } from '../helpers.js';
import { moduleText } from './module-text.js';

function put(store: IndexStore, cls: string, doc: string): void {
  const repo = 'org/r';
  const id = `${repo}:m.${cls}`;
  const text = moduleText(cls, doc);
  putExtraction(store, {
    id,
    hash: textHash(text),
    ok: true,
    status: 'validated',
    lines: text.split('\n').length,
    record: {
      ...emptyRecord(id, repo),
      provenance: [{ repo, revision: null, url: null, path: 'm.py', module: 'm', swhid: '', ranges: [[4, 12]] }],
    },
    text,
  });
}

/** The SQL a store handle prepares while `fn` runs. */
function statements(store: IndexStore, fn: () => void): string[] {
  const seen: string[] = [];
  const stmt = store.stmt.bind(store);
  store.stmt = (sql: string) => {
    seen.push(sql);
    return stmt(sql);
  };
  try {
    fn();
  } finally {
    store.stmt = stmt;
  }
  return seen;
}
const readsExtractions = (sqls: string[]) => sqls.some((s) => /FROM extractions\b/.test(s));

describe('search: the stored sync stamp', () => {
  let dir: string;
  before(() => {
    dir = tempDir('nnrag-search-synced-');
    const store = IndexStore.open(dir);
    put(store, 'ConvBlock', 'A conv block.');
    put(store, 'WindowAttention', 'Attention inside windows.');
    const r = refreshSearch(store);
    assert.equal(r.skipped, false);
    assert.equal(r.added, 2);
    assert.equal(syncedStamp(store), SYNC_STAMP);
    store.close();
  });
  const open = () => IndexStore.open(dir, { create: false });

  test('a new handle on an unchanged store reads no extraction', () => {
    const store = open();
    try {
      let r: ReturnType<typeof refreshSearch> | undefined;
      const sqls = statements(store, () => (r = refreshSearch(store)));
      assert.equal(r?.skipped, true);
      assert.equal(readsExtractions(sqls), false, sqls.join('\n'));
      assert.deepEqual(
        searchBlocks(store, 'conv').hits.map((h) => h.id),
        ['org/r:m.ConvBlock'],
      );
    } finally {
      store.close();
    }
  });

  test('writes that know nothing of the stamp (plain SQL) make the next handle sync and find them', () => {
    const store = open();
    try {
      // an extraction replaced, one added and a spec written, as SQL (an older nnrag)
      store.db.exec(
        "UPDATE extractions SET status = 'failed', ok = 0, updated = 'later' WHERE id = 'org/r:m.ConvBlock'",
      );
      assert.equal(store.getKV(KV_KEYS.searchSynced), 'stale');
      assert.equal(syncedStamp(store), null);
    } finally {
      store.close();
    }
    const s2 = open();
    try {
      put(s2, 'GatedPool', 'A gated pool.');
      const r = refreshSearch(s2);
      assert.equal(r.skipped, false);
      assert.equal(r.added, 1);
      assert.equal(r.updated, 1);
      assert.equal(searchBlocks(s2, 'conv').hits[0]?.status, 'failed');
      assert.deepEqual(
        searchBlocks(s2, 'pool').hits.map((h) => h.id),
        ['org/r:m.GatedPool'],
      );
      assert.equal(syncedStamp(s2), SYNC_STAMP);
    } finally {
      s2.close();
    }
    // a deleted extraction; a spec row written (then taken back: the trigger fired), by SQL
    for (const sql of [
      "DELETE FROM extractions WHERE id = 'org/r:m.GatedPool'",
      "INSERT INTO specs(id, repo, status, category, json, updated) VALUES ('org/r:m.X', 'org/r', 'validated', 'attention', '{}', 'now'); DELETE FROM specs",
    ]) {
      const s = open();
      try {
        s.db.exec(sql);
        assert.equal(syncedStamp(s), null, sql);
      } finally {
        s.close();
      }
      const s3 = open();
      try {
        const r = refreshSearch(s3);
        assert.equal(r.skipped, false, sql);
        assert.equal(syncedStamp(s3), SYNC_STAMP);
      } finally {
        s3.close();
      }
    }
    const s4 = open();
    try {
      assert.deepEqual(searchBlocks(s4, 'pool').hits, []);
    } finally {
      s4.close();
    }
  });

  test("a write committed during a sync leaves the stamp stale; another build's stamp is not current", () => {
    const store = open();
    const other = open();
    try {
      const mark = beginSync(store);
      put(other, 'LatePool', 'Written while the sync ran.');
      assert.equal(endSync(store, mark, SYNC_STAMP), false);
      assert.equal(syncedStamp(store), null);
      assert.equal(refreshSearch(store).skipped, false);
      assert.equal(searchBlocks(store, 'latepool').hits.length, 1);
      assert.equal(syncedStamp(store), SYNC_STAMP);
      store.setKV(KV_KEYS.searchSynced, 'current:another-build');
      const fresh = open();
      try {
        assert.equal(refreshSearch(fresh).skipped, false);
        assert.equal(syncedStamp(fresh), SYNC_STAMP);
      } finally {
        fresh.close();
      }
    } finally {
      other.close();
      store.close();
    }
  });
});
