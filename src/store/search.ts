// The search tables (migration 4): `search_docs` (one row per block: filter columns and
// the SearchDoc JSON; `key` identifies its inputs), `search_fts` (FTS5, rowid =
// search_docs.rowid, one column per entry of SEARCH_COLUMNS, BM25-ranked) and
// `search_sigs` (MinHash signatures of each module content, for `similar`), and the field
// tables (FIELD_TABLES: one contentless FTS5 index per group of columns, same rowids, so
// "which of these documents hold this word in this field" is a lookup in that field's
// own term lists). What goes into them is decided in src/search/; the SQL is here.
//
// BM25 (FTS5 `bm25()`, k1 = 1.2, b = 0.75) returns lower = better; scores returned here
// are its negation, so higher = better.
import type { SearchDoc } from '../records/search.js';
import { FTS_SQL, SEARCH_COLUMNS } from './migrations.js';
import { KV_KEYS } from './kv.js';
import Database from 'better-sqlite3';
import type { IndexStore } from './store.js';

export { SEARCH_COLUMNS };

/** Whether search_fts's stored SQL is the code's layout (FTS_SQL, whitespace aside). */
function isFtsLayout(sql: string | undefined): boolean {
  return sql?.replace(/\s+/g, ' ') === FTS_SQL.replace(/\s+/g, ' ');
}

/** The FTS table is a derived cache: when a store holds it with other columns, tokenizer
 *  or prefixes (an older layout), drop it and every document so the next sync rebuilds them
 *  (the field tables with them); then bring the field tables up to date (ensureFieldTables). */
export function ensureFtsLayout(store: IndexStore): void {
  const sql = store.stmt("SELECT sql FROM sqlite_master WHERE name = 'search_fts'").pluck().get() as string | undefined;
  if (!isFtsLayout(sql)) {
    store.write(() => {
      store.db.exec('DROP TABLE IF EXISTS search_fts; DELETE FROM search_docs;');
      for (const t of FIELD_TABLES) store.db.exec(`DROP TABLE IF EXISTS ${t.table}`);
      store.db.exec(FTS_SQL);
    });
  }
  ensureFieldTables(store);
}

// ---------------------------------------------------------------- field tables

/**
 * One FTS5 index per field of the search's score (src/search/fts.ts FIELDS), beside
 * search_fts and with its rowids: a field's check among a query's candidates is then a
 * query on the field's own table, without a column filter. In search_fts a column filter
 * (`{summary} : "attention"`) reads the term's whole document list with its positions
 * (FTS5 keeps one list per term across every column), and cannot be looked up by rowid
 * (FTS5 then walks on from each rowid to the next document holding the term in the
 * column): at 10^6 blocks each check was one pass over a common word's 10^5 matches.
 * Contentless (the texts are search_fts's), with deletes by rowid (contentless_delete,
 * SQLite ≥ 3.43), same tokenizer and prefixes as search_fts so a query expression means
 * the same in both. `exact` alone has its own table (the blocks a query names whole: one
 * term per document, no positions needed). The low field (identifiers, deps) has none: it
 * is two thirds of the text, and a word found in no other field but in the document is
 * in it (src/search/fts.ts).
 */
export const FIELD_TABLES: readonly { table: string; columns: readonly string[]; detail?: 'none' }[] = [
  { table: 'search_field_exact', columns: ['exact'], detail: 'none' },
  { table: 'search_field_name', columns: ['exact', 'name'] },
  { table: 'search_field_summary', columns: ['summary'] },
  { table: 'search_field_mid', columns: ['qualname', 'category', 'layers', 'params'] },
];

function fieldSql(t: (typeof FIELD_TABLES)[number]): string {
  return (
    `CREATE VIRTUAL TABLE ${t.table} USING fts5(${t.columns.join(', ')}, content = '', contentless_delete = 1, ` +
    `tokenize = 'porter unicode61 remove_diacritics 2', ` +
    (t.detail ? `detail = ${t.detail})` : `prefix = '2 3')`)
  );
}

/** The kv entry saying the field tables hold every document of search_docs: FIELDS_CURRENT
 *  when they do, 'stale' after a write they missed. */
const FIELDS_KV = KV_KEYS.searchFields;
const FIELDS_CURRENT = 'current:1';
/** Every insert into search_docs marks the field tables stale, so a document written by
 *  code that does not know them (an older nnrag writing to this store) makes the next sync
 *  rebuild them; putDocs, which writes them, keeps them current. */
const STALE_TRIGGER = `CREATE TRIGGER search_fields_stale AFTER INSERT ON search_docs
  WHEN (SELECT value FROM kv WHERE key = '${FIELDS_KV}') IS NOT 'stale'
  BEGIN INSERT OR REPLACE INTO kv(key, value) VALUES ('${FIELDS_KV}', 'stale'); END`;

/** Do the field tables hold every stored document (their layout the code's, none of
 *  search_docs' writes missed)? */
export function fieldTablesCurrent(store: IndexStore): boolean {
  if (store.getKV(FIELDS_KV) !== FIELDS_CURRENT) return false;
  const sqls = new Map(
    store.stmt("SELECT name, sql FROM sqlite_master WHERE name LIKE 'search_field%'").raw().all() as [string, string][],
  );
  return (
    sqls.get('search_fields_stale') === STALE_TRIGGER && FIELD_TABLES.every((t) => sqls.get(t.table) === fieldSql(t))
  );
}

/** Create the field tables (or replace those of another layout) and fill them from
 *  search_fts's stored texts, when they are not current (a store from before them, or
 *  written by code that does not know them). Returns whether they were rebuilt. */
export function ensureFieldTables(store: IndexStore): boolean {
  if (fieldTablesCurrent(store)) return false;
  const index = new Map(SEARCH_COLUMNS.map((c, i) => [c.name, i]));
  return store.write(() => {
    // another process may have rebuilt them while this one waited for the write lock
    if (fieldTablesCurrent(store)) return false;
    store.db.exec('DROP TRIGGER IF EXISTS search_fields_stale');
    store.db.exec(STALE_TRIGGER);
    for (const t of FIELD_TABLES) {
      store.db.exec(`DROP TABLE IF EXISTS ${t.table}`);
      store.db.exec(fieldSql(t));
      // search_fts_content: FTS5's stored texts of search_fts, column i as c<i>
      store.db.exec(
        `INSERT INTO ${t.table}(rowid, ${t.columns.join(', ')}) SELECT id, ${t.columns.map((c) => `c${index.get(c)}`).join(', ')} FROM search_fts_content`,
      );
      store.db.exec(`INSERT INTO ${t.table}(${t.table}) VALUES('optimize')`);
    }
    store.setKV(FIELDS_KV, FIELDS_CURRENT);
    return true;
  });
}

// ---------------------------------------------------------------- the stored sync stamp

/** The kv entry saying the search structures are in step with the stored extractions and
 *  specs (KV_KEYS.searchSynced): a sync's check of every extraction's stamp reads the whole
 *  extractions table (at 10^6 blocks, 10 GB of rows holding modules and records: minutes),
 *  so a process that finds this entry current (the catalog's start, `nnrag search`) skips
 *  it. */
const SYNCED_KV = KV_KEYS.searchSynced;
/** Every write to what the search structures are made of (an extraction's row: its hash,
 *  status and time are a document's key, its hash a signature's; a spec's row) marks the
 *  stamp stale, whatever code writes it (triggers live in the database: an older nnrag's
 *  writes fire them too). One trigger per table and statement kind. */
export const SYNC_TRIGGERS: readonly { name: string; sql: string }[] = ['extractions', 'specs'].flatMap((table) =>
  ['INSERT', 'UPDATE', 'DELETE'].map((ev) => {
    const name = `search_synced_${table}_${ev.toLowerCase()}`;
    return {
      name,
      sql:
        `CREATE TRIGGER ${name} AFTER ${ev} ON ${table}\n` +
        `  WHEN (SELECT value FROM kv WHERE key = '${SYNCED_KV}') IS NOT 'stale'\n` +
        `  BEGIN INSERT OR REPLACE INTO kv(key, value) VALUES ('${SYNCED_KV}', 'stale'); END`,
    };
  }),
);

/** The stored sync stamp when the triggers that keep it honest are in place, their SQL the
 *  code's, and the search's tables are of the code's layout (search_fts, the field tables
 *  current); null otherwise (a store from before the stamp, or one whose tables a sync
 *  must rebuild). */
export function syncedStamp(store: IndexStore): string | null {
  const value = store.getKV(SYNCED_KV);
  if (!value?.startsWith('current:')) return null;
  const names = ['search_fts', ...SYNC_TRIGGERS.map((t) => t.name)];
  const sqls = new Map(
    store
      .stmt(`SELECT name, sql FROM sqlite_master WHERE name IN (${names.map(() => '?').join(', ')})`)
      .raw()
      .all(...names) as [string, string][],
  );
  if (!isFtsLayout(sqls.get('search_fts'))) return null;
  if (!SYNC_TRIGGERS.every((t) => sqls.get(t.name) === t.sql)) return null;
  return fieldTablesCurrent(store) ? value : null;
}

/** Before a sync reads the extractions: the triggers put in place (or replaced by the
 *  code's), and the stamp set to a mark of this sync. A write that commits after this
 *  marks it stale, so endSync does not call current a sync that may have missed it. */
export function beginSync(store: IndexStore): string {
  const mark = `syncing:${process.pid}:${Date.now()}:${Math.random().toString(36).slice(2)}`;
  store.write(() => {
    const have = new Map(
      store
        .stmt("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'search_synced_%'")
        .raw()
        .all() as [string, string][],
    );
    for (const t of SYNC_TRIGGERS) {
      if (have.get(t.name) === t.sql) continue;
      store.db.exec(`DROP TRIGGER IF EXISTS ${t.name}`);
      store.db.exec(t.sql);
    }
    store.setKV(SYNCED_KV, mark);
  });
  return mark;
}

/** After a sync: the stamp set to `stamp` when nothing was written to extractions or specs
 *  since beginSync gave `mark` (compare and set, in one write transaction); whether it was. */
export function endSync(store: IndexStore, mark: string, stamp: string): boolean {
  return store.write(() => {
    if (store.getKV(SYNCED_KV) !== mark) return false;
    store.setKV(SYNCED_KV, stamp);
    return true;
  });
}

/** Input key of every stored document, by block id. */
export function docKeys(store: IndexStore): Map<string, string> {
  return new Map(
    (store.stmt('SELECT id, key FROM search_docs').all() as { id: string; key: string }[]).map((r) => [r.id, r.key]),
  );
}

/** A document to store: the document, the key of its inputs and its FTS column texts (in
 *  SEARCH_COLUMNS order). */
export interface DocRow {
  doc: SearchDoc;
  key: string;
  fts: string[];
}

function removeDocRow(store: IndexStore, id: string, fields: boolean): boolean {
  const old = store.stmt('SELECT rowid FROM search_docs WHERE id = ?').pluck().get(id) as number | undefined;
  if (old === undefined) return false;
  store.stmt('DELETE FROM search_fts WHERE rowid = ?').run(old);
  if (fields) for (const t of FIELD_TABLES) store.stmt(`DELETE FROM ${t.table} WHERE rowid = ?`).run(old);
  store.stmt('DELETE FROM search_docs WHERE rowid = ?').run(old);
  return true;
}

/** Insert or replace documents and drop those of `gone` blocks, in one transaction (their
 *  signatures and band keys are dropped by the signatures' own sync: putSignatures). The
 *  field tables are written too when they are current (else they stay stale: the next
 *  ensureFieldTables rebuilds them from search_fts). */
export function putDocs(store: IndexStore, rows: readonly DocRow[], gone: readonly string[] = []): void {
  const cols = SEARCH_COLUMNS.map((c) => c.name);
  const index = new Map(cols.map((c, i) => [c, i]));
  store.write(() => {
    const fields = fieldTablesCurrent(store);
    for (const { doc: d, key, fts } of rows) {
      removeDocRow(store, d.id, fields);
      const info = store
        .stmt('INSERT INTO search_docs(id, key, repo, category, status, params, doc) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(d.id, key, d.origin.repo, d.category, d.status, d.params, JSON.stringify(d));
      store
        .stmt(`INSERT INTO search_fts(rowid, ${cols.join(', ')}) VALUES (?, ${cols.map(() => '?').join(', ')})`)
        .run(info.lastInsertRowid, ...fts);
      if (fields)
        for (const t of FIELD_TABLES)
          store
            .stmt(
              `INSERT INTO ${t.table}(rowid, ${t.columns.join(', ')}) VALUES (?, ${t.columns.map(() => '?').join(', ')})`,
            )
            .run(info.lastInsertRowid, ...t.columns.map((c) => fts[index.get(c)!]));
    }
    for (const id of gone) removeDocRow(store, id, fields);
    // the inserts above fired the stale trigger; these documents are in the field tables
    if (fields) store.setKV(FIELDS_KV, FIELDS_CURRENT);
  });
}

/** Merge the FTS index's segments into one (FTS5's 'optimize' command: one pass over the
 *  index; queries then read one segment per term). */
export function optimizeFts(store: IndexStore): void {
  const fields = fieldTablesCurrent(store);
  store.write(() => {
    store.stmt("INSERT INTO search_fts(search_fts) VALUES('optimize')").run();
    if (fields) for (const t of FIELD_TABLES) store.db.exec(`INSERT INTO ${t.table}(${t.table}) VALUES('optimize')`);
  });
}

/** Forget every document (the next sync rebuilds them). */
export function clearDocs(store: IndexStore): void {
  const fields = fieldTablesCurrent(store);
  store.write(() => {
    store.db.exec('DELETE FROM search_docs; DELETE FROM search_fts;');
    if (fields) for (const t of FIELD_TABLES) store.db.exec(`INSERT INTO ${t.table}(${t.table}) VALUES('delete-all')`);
  });
}

/** The stored search document of a block. */
export function getDoc(store: IndexStore, id: string): SearchDoc | null {
  const s = store.stmt('SELECT doc FROM search_docs WHERE id = ?').pluck().get(id) as string | undefined;
  return s ? (JSON.parse(s) as SearchDoc) : null;
}

/** Every stored document, by id. */
export function listDocs(store: IndexStore): SearchDoc[] {
  return (store.stmt('SELECT doc FROM search_docs ORDER BY id').pluck().all() as string[]).map(
    (s) => JSON.parse(s) as SearchDoc,
  );
}

/** Distinct values of the filter columns, for the catalog's filter menus. */
export function docFacets(store: IndexStore): { repos: string[]; categories: string[]; statuses: string[] } {
  const col = (c: 'repo' | 'category' | 'status') =>
    store.stmt(`SELECT DISTINCT ${c} FROM search_docs ORDER BY ${c}`).pluck().all() as string[];
  return { repos: col('repo'), categories: col('category'), statuses: col('status') };
}

// ---------------------------------------------------------------- queries

export interface DocFilters {
  repos: string[];
  categories: string[];
  /** only validated blocks */
  validated: boolean;
  /** include blocks that failed validation */
  all: boolean;
  /** only blocks that failed validation (what the default filter hides) */
  failedOnly?: boolean;
  minParams?: number;
  maxParams?: number;
}

function filterSql(f: DocFilters): { where: string[]; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.repos.length) {
    where.push(`d.repo IN (${f.repos.map(() => '?').join(', ')})`);
    args.push(...f.repos);
  }
  if (f.categories.length) {
    where.push(`d.category IN (${f.categories.map(() => '?').join(', ')})`);
    args.push(...f.categories);
  }
  if (f.failedOnly) where.push(`d.status = 'failed'`);
  else if (f.validated) where.push(`d.status = 'validated'`);
  else if (!f.all) where.push(`d.status != 'failed'`);
  if (f.minParams !== undefined) {
    where.push('d.params >= ?');
    args.push(f.minParams);
  }
  if (f.maxParams !== undefined) {
    where.push('d.params <= ?');
    args.push(f.maxParams);
  }
  return { where, args };
}

/** Does the FTS index know this (quoted) term? */
export function ftsHasTerm(store: IndexStore, quoted: string): boolean {
  return !!store.stmt('SELECT 1 FROM search_fts WHERE search_fts MATCH ? LIMIT 1').get(quoted);
}

/** Documents in id order, filtered (the browse mode of an empty query): the page after
 *  block id `after` (keyset paging: the id index is entered at `after`, so a page deep in
 *  the library costs what the first one does), else after skipping `offset` documents
 *  (OFFSET steps over every skipped row). */
export function browseDocs(store: IndexStore, f: DocFilters, limit: number, offset: number, after?: string): string[] {
  const { where, args } = filterSql(f);
  if (after !== undefined) {
    where.push('d.id > ?');
    args.push(after);
  }
  const w = where.length ? `WHERE ${where.join(' AND ')}` : '';
  return store
    .stmt(`SELECT d.doc FROM search_docs d ${w} ORDER BY d.id LIMIT ? OFFSET ?`)
    .pluck()
    .all(...args, limit, after !== undefined ? 0 : offset) as string[];
}

/** The FTS5 tables a query can read: search_fts (every column) or a field table. */
export type FtsTable = 'search_fts' | (typeof FIELD_TABLES)[number]['table'];

/** How many documents an FTS query matches, unfiltered (counted inside FTS5: no row
 *  reaches JavaScript). */
export function countFts(store: IndexStore, match: string, table: FtsTable = 'search_fts'): number {
  return store.stmt(`SELECT count(*) FROM ${table} WHERE ${table} MATCH ?`).pluck().get(match) as number;
}

/** search_fts's tokenizer (FTS_SQL's), for the terms termDocs looks up */
const FTS_TOKENIZE = /tokenize = '([^']*)'/.exec(FTS_SQL)?.[1] ?? 'unicode61';

/** An in-memory FTS5 table with search_fts's tokenizer, which gives a string's indexed
 *  terms (its tokens, Porter-stemmed) as FTS5 itself makes them: a query's quoted string is
 *  tokenized by the same tokenizer. One per process; no store is written. */
let tokenizerDb: Database.Database | null = null;
function ftsTerms(text: string): string[] {
  if (!tokenizerDb) {
    tokenizerDb = new Database(':memory:');
    tokenizerDb.exec(`CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '${FTS_TOKENIZE}');
      CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row');`);
  }
  const db = tokenizerDb;
  return db.transaction(() => {
    db.prepare('INSERT INTO t(rowid, x) VALUES (1, ?)').run(text);
    const terms = db.prepare('SELECT term FROM v').pluck().all() as string[];
    db.prepare('DELETE FROM t').run();
    return terms;
  })();
}

/**
 * How many documents of search_fts hold a one-term expression (`"conv"`: a quoted string
 * that the tokenizer makes one term), read from FTS5's vocabulary (fts5vocab, a table of
 * this connection's temp schema: nothing is written to the store): the same number as
 * countFts, which returns each match to SQL's count, while the vocabulary walks the term's
 * list inside FTS5 (measured at 10^6 blocks: `conv`'s 437,184 documents in 8 ms of CPU
 * against 16–22 ms, `attention`'s 186,950 in 3.6 against 7–10). search_fts keeps its
 * texts, so a deleted or replaced row's terms leave its lists. null for any other
 * expression (a prefix, a phrase, an OR): countFts counts those.
 */
export function termDocs(store: IndexStore, expr: string): number | null {
  const m = /^"((?:[^"]|"")+)"$/.exec(expr);
  if (!m) return null;
  const terms = ftsTerms(m[1].replace(/""/g, '"'));
  if (terms.length !== 1) return null;
  if (!vocabReady.has(store)) {
    store.db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_fts_vocab USING fts5vocab(main, search_fts, 'row')");
    vocabReady.add(store);
  }
  return (store.stmt('SELECT doc FROM temp.search_fts_vocab WHERE term = ?').pluck().get(terms[0]) as number) ?? 0;
}
/** the store handles whose connection has the vocabulary table */
const vocabReady = new WeakSet<IndexStore>();

/** −rank of some documents for an FTS query (`rank` an SQL expression over `search_fts`:
 *  higher is better), by rowid. */
export function rankOf(store: IndexStore, match: string, rank: string, rowids: readonly number[]): Map<number, number> {
  if (!rowids.length) return new Map();
  // one pass over the matches, the rank computed for the listed rows only (`+rowid`: not a
  // seek per rowid, which costs FTS5 a walk of the terms' lists each: measured on 10^5
  // blocks for 300 rowids of 'norm' (41,000 matches), 320 ms of CPU by seeks, 4 ms by
  // one pass)
  return new Map(
    store
      .stmt(
        `SELECT rowid, -${rank} FROM search_fts WHERE search_fts MATCH ? AND +rowid IN (SELECT value FROM json_each(?))`,
      )
      .raw()
      .all(match, JSON.stringify(rowids)) as [number, number][],
  );
}

/** Rowids among `rowids` that an FTS query matches (the query runs once; the list filters
 *  its matches without reaching JavaScript). */
export function matchRowidsIn(
  store: IndexStore,
  match: string,
  rowids: readonly number[],
  table: FtsTable = 'search_fts',
): number[] {
  if (!rowids.length) return [];
  return store
    .stmt(`SELECT rowid FROM ${table} WHERE ${table} MATCH ? AND +rowid IN (SELECT value FROM json_each(?))`)
    .pluck()
    .all(match, JSON.stringify(rowids)) as number[];
}

/** Rowids among `rowids` that an FTS query matches, each looked up by its rowid (FTS5 is
 *  entered once per rowid: the cost follows the list, not the query's matches — measured
 *  on 10^6 blocks, 1,000 rowids of "conv" (414,000 matches) 6 ms of CPU, against 22–31 ms
 *  for one pass over the matches. Not for an auxiliary function such as bm25(), which
 *  counts each phrase's matches again on every entry). */
export function matchRowidsSeek(
  store: IndexStore,
  match: string,
  rowids: ArrayLike<number>,
  table: FtsTable = 'search_fts',
): number[] {
  if (!rowids.length) return [];
  return store
    .stmt(`SELECT rowid FROM ${table} WHERE ${table} MATCH ? AND rowid IN (SELECT value FROM json_each(?))`)
    .pluck()
    .all(match, JSON.stringify(Array.from(rowids))) as number[];
}

/** At most `limit` rowids an FTS query matches after rowid `after` (the first ones with
 *  Number.MIN_SAFE_INTEGER), in rowid order: a count that reads the matches a chunk at a
 *  time. */
export function matchRowidsAfter(store: IndexStore, match: string, after: number, limit: number): number[] {
  return store
    .stmt('SELECT rowid FROM search_fts WHERE search_fts MATCH ? AND rowid > ? LIMIT ?')
    .pluck()
    .all(match, after, limit) as number[];
}

/** Rowids of every document an FTS query matches (unfiltered: no join, no auxiliary
 *  function — the cheapest FTS5 query). */
export function matchRowids(store: IndexStore, match: string, table: FtsTable = 'search_fts'): number[] {
  return store.stmt(`SELECT rowid FROM ${table} WHERE ${table} MATCH ?`).pluck().all(match) as number[];
}

/** How many documents pass the filters (matching or not). */
export function countDocs(store: IndexStore, f: DocFilters): number {
  const { where, args } = filterSql(f);
  return store
    .stmt(`SELECT count(*) FROM search_docs d ${where.length ? `WHERE ${where.join(' AND ')}` : ''}`)
    .pluck()
    .get(...args) as number;
}

/** The filter columns of the documents after rowid `after`, at most `limit`, in rowid order
 *  (search/fts.ts keeps them in memory to filter a query's matches without a join: the
 *  documents' rows hold their JSON, and a join of 40,000 matches with them was measured at
 *  110 ms on 10^5 blocks). */
export function docFilterRows(
  store: IndexStore,
  after: number,
  limit: number,
): [number, string, string, string, string, number | null][] {
  return store
    .stmt('SELECT rowid, id, repo, category, status, params FROM search_docs WHERE rowid > ? ORDER BY rowid LIMIT ?')
    .raw()
    .all(after, limit) as [number, string, string, string, string, number | null][];
}

/** The largest document rowid (0 without documents). */
export function maxDocRowid(store: IndexStore): number {
  return (store.stmt('SELECT max(rowid) FROM search_docs').pluck().get() as number | null) ?? 0;
}

/** Document JSON texts by rowid. */
export function docsByRowid(store: IndexStore, rowids: readonly number[]): Map<number, string> {
  if (!rowids.length) return new Map();
  return new Map(
    store
      .stmt(`SELECT rowid, doc FROM search_docs WHERE rowid IN (${rowids.map(() => '?').join(',')})`)
      .raw()
      .all(...rowids) as [number, string][],
  );
}

// ---------------------------------------------------------------- signatures

/** Module content hash of every stored signature, by block id. */
export function signatureHashes(store: IndexStore): Map<string, string> {
  return new Map(
    (store.stmt('SELECT id, hash FROM search_sigs').all() as { id: string; hash: string }[]).map((r) => [r.id, r.hash]),
  );
}

export interface SignatureRow {
  id: string;
  hash: string;
  ints: number;
  tokens: number;
  near: Uint32Array | null;
  structural: Uint32Array | null;
}

const toBlob = (a: Uint32Array | null) => (a ? Buffer.from(a.buffer, a.byteOffset, a.byteLength) : null);

/** The LSH band keys of a signature's two MinHash blobs (src/search/similar.ts decides
 *  them; an invalid signature has none). */
export type BandsOf = (near: Uint8Array | null, structural: Uint8Array | null) => number[];

/** Store signatures with their band keys and drop those of `gone` blocks (with theirs), in
 *  one transaction. A replaced signature's old keys are recomputed from its stored blobs
 *  and deleted (search_bands has no index on the signature: its one index is the key's). */
export function putSignatures(
  store: IndexStore,
  rows: readonly SignatureRow[],
  gone: readonly string[],
  bandsOf: BandsOf,
): void {
  store.write(() => {
    const ins = store.stmt(
      'INSERT INTO search_sigs(id, hash, ints, tokens, near, structural) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const old = store.stmt('SELECT rowid, near, structural FROM search_sigs WHERE id = ?').raw();
    const delBand = store.stmt('DELETE FROM search_bands WHERE key = ? AND sig = ?');
    const insBand = store.stmt('INSERT OR IGNORE INTO search_bands(key, sig) VALUES (?, ?)');
    const drop = (id: string) => {
      const o = old.get(id) as [number, Buffer | null, Buffer | null] | undefined;
      if (!o) return;
      for (const k of bandsOf(o[1], o[2])) delBand.run(k, o[0]);
      store.stmt('DELETE FROM search_sigs WHERE rowid = ?').run(o[0]);
    };
    for (const r of rows) {
      drop(r.id);
      const near = toBlob(r.near);
      const structural = toBlob(r.structural);
      const sig = ins.run(r.id, r.hash, r.ints, r.tokens, near, structural).lastInsertRowid;
      for (const k of bandsOf(near, structural)) insBand.run(k, sig);
    }
    for (const id of gone) drop(id);
  });
}

/** The banding the stored band keys were made with (null: none recorded). */
export function storedBanding(store: IndexStore): string | null {
  return store.getKV(KV_KEYS.similarBands);
}

/** Replace every band key by those of `bandsOf` over the stored signatures, and record the
 *  banding (a store from before search_bands, or one banded another way). The keys of each
 *  chunk of signatures are inserted in key order, so the index's pages fill in order rather
 *  than split at random. */
export function rebuildBands(store: IndexStore, bandsOf: BandsOf, banding: string): number {
  return store.write(() => {
    store.db.exec('DELETE FROM search_bands');
    const ins = store.stmt('INSERT OR IGNORE INTO search_bands(key, sig) VALUES (?, ?)');
    let n = 0;
    let keys: number[] = [];
    let sigs: number[] = [];
    const flush = () => {
      const order = keys.map((_, i) => i).sort((a, b) => keys[a] - keys[b] || sigs[a] - sigs[b]);
      for (const i of order) ins.run(keys[i], sigs[i]);
      keys = [];
      sigs = [];
    };
    const page = store.stmt(
      'SELECT rowid, near, structural FROM search_sigs WHERE rowid > ? ORDER BY rowid LIMIT 20000',
    );
    for (let last = Number.MIN_SAFE_INTEGER; ; ) {
      const rows = page.raw().all(last) as [number, Buffer | null, Buffer | null][];
      if (!rows.length) break;
      for (const [sig, near, structural] of rows) {
        for (const k of bandsOf(near, structural)) {
          keys.push(k);
          sigs.push(sig);
        }
      }
      n += rows.length;
      last = rows[rows.length - 1][0];
      flush();
    }
    store.setKV(KV_KEYS.similarBands, banding);
    return n;
  });
}

/** The signatures sharing each band key (at most `perKey` of each key's bucket, in rowid
 *  order: the primary key's index is entered at the key and read in order), as signature
 *  rowids, one list per key. */
export function bandMembers(store: IndexStore, keys: readonly number[], perKey: number): number[][] {
  const st = store.stmt('SELECT sig FROM search_bands WHERE key = ? LIMIT ?').pluck();
  return keys.map((k) => st.all(k, perKey) as number[]);
}

/** Signatures (id, near, structural) by rowid, in id order, `self` left out. */
export function signaturesByRowid(
  store: IndexStore,
  rowids: readonly number[],
  self: string,
): [string, Buffer | null, Buffer | null][] {
  if (!rowids.length) return [];
  return store
    .stmt(
      `SELECT id, near, structural FROM search_sigs
       WHERE rowid IN (SELECT value FROM json_each(?)) AND id != ? ORDER BY id`,
    )
    .raw()
    .all(JSON.stringify(rowids), self) as [string, Buffer | null, Buffer | null][];
}

/** The stored signature blobs of one block (undefined: no signature row). */
export function signatureOf(store: IndexStore, id: string): [Buffer | null, Buffer | null] | undefined {
  return store.stmt('SELECT near, structural FROM search_sigs WHERE id = ?').raw().get(id) as
    | [Buffer | null, Buffer | null]
    | undefined;
}

/** A value that changes whenever the stored signatures change (count and last rowid). */
export function signatureStamp(store: IndexStore): string {
  const st = store.stmt('SELECT count(*) AS n, max(rowid) AS m FROM search_sigs').get() as {
    n: number;
    m: number | null;
  };
  return `${st.n}:${st.m}`;
}

/** Every stored signature as raw bytes, by id. */
export function signatureBytes(store: IndexStore): [string, Buffer | null, Buffer | null][] {
  return store.stmt('SELECT id, near, structural FROM search_sigs ORDER BY id').raw().all() as [
    string,
    Buffer | null,
    Buffer | null,
  ][];
}
