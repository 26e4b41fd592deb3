// Block search (`nnrag search`, the catalog's search box): an SQLite FTS5 index over the
// library blocks, ranked by BM25 with per-column weights, kept in sync incrementally with
// the stored extractions (a row is rebuilt only when its extraction or spec changed).
//
// Schema (migration 4, additive and independent of the other library tables):
//   search_docs  one row per block: the filterable columns (repo, category, status,
//                params) and the whole SearchDoc as JSON; `key` identifies its inputs
//   search_fts   FTS5 table, rowid = search_docs.rowid, columns in weight order below,
//                text expanded by tokens.ts (camelCase / snake_case / digit parts)
//   search_sigs  de-duplication signatures (MinHash of lexical and structural shingles,
//                dedup.ts) of each module content, for `similar`
//
// BM25 (FTS5 `bm25()`, k1 = 1.2, b = 0.75) returns lower = better; scores reported here are
// its negation, so higher = better.
import { registerMigration, type IndexStore } from '../index/store.js';
import { listExtractions, getExtraction, type StoredExtraction } from '../library/records.js';
import { NnragError, UsageError } from '../util/errors.js';
import { suggest } from '../util/suggest.js';
import { parseBlockId } from '../discover/ids.js';
import { buildDoc, docKey, specRows, storedSpec, type SearchDoc } from './documents.js';
import { expandText, identifierParts, parseQuery, quoteTerm } from './tokens.js';
import type { FileFacts } from '../parse/types.js';

export const SEARCH_MIGRATION_VERSION = 4;

/** FTS columns and their BM25 weights (the block's own name counts most). */
export const COLUMNS: readonly { name: string; weight: number }[] = [
  // the class name as one lower-case word: an exact name match outranks a longer name
  // that contains the word (`bottleneck` → Bottleneck before ResBottleneck)
  { name: 'exact', weight: 20 },
  { name: 'name', weight: 10 },
  { name: 'qualname', weight: 2 },
  { name: 'summary', weight: 4 },
  { name: 'category', weight: 3 },
  { name: 'layers', weight: 2 },
  { name: 'params', weight: 1.5 },
  { name: 'identifiers', weight: 1 },
  { name: 'deps', weight: 0.5 },
];

const FTS_SQL = `CREATE VIRTUAL TABLE search_fts USING fts5(
        ${COLUMNS.map((c) => c.name).join(', ')},
        tokenize = 'porter unicode61 remove_diacritics 2',
        prefix = '2 3'
      )`;

registerMigration({
  version: SEARCH_MIGRATION_VERSION,
  name: 'search: FTS5 index of library blocks, similarity signatures',
  up(db) {
    db.exec(`
      ${FTS_SQL};
      CREATE TABLE search_docs(
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        key TEXT NOT NULL,
        repo TEXT NOT NULL,
        category TEXT NOT NULL,
        status TEXT NOT NULL,
        params INTEGER,
        doc TEXT NOT NULL
      );
      CREATE INDEX search_docs_repo ON search_docs(repo);
      CREATE TABLE search_sigs(
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL,
        ints INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        near BLOB,
        structural BLOB
      );
    `);
  },
});

/** The FTS column texts of a document. */
export function ftsColumns(d: SearchDoc): string[] {
  const layerText = Object.keys(d.layers).join(' ');
  return [
    identifierParts(d.name).join(''),
    expandText(d.name),
    expandText(`${d.module} ${d.origin.repo}`),
    expandText(d.docstring ?? d.summary ?? ''),
    expandText(d.category),
    expandText(layerText),
    expandText(d.hyperparameters.join(' ') + ' ' + d.forwardParams.join(' ')),
    expandText(d.identifiers.join(' ') + ' ' + d.bases.join(' ')),
    expandText(d.copied.join(' ') + ' ' + d.dependencies.join(' ') + ' ' + d.externs.join(' ')),
  ];
}

export interface SyncReport {
  added: number;
  updated: number;
  removed: number;
  unchanged: number;
  ms: number;
}

/** Insert or replace one document (in the caller's transaction). */
export function putDoc(store: IndexStore, d: SearchDoc, key: string): void {
  const old = store.stmt('SELECT rowid FROM search_docs WHERE id = ?').pluck().get(d.id) as number | undefined;
  if (old !== undefined) {
    store.stmt('DELETE FROM search_fts WHERE rowid = ?').run(old);
    store.stmt('DELETE FROM search_docs WHERE rowid = ?').run(old);
  }
  const info = store
    .stmt('INSERT INTO search_docs(id, key, repo, category, status, params, doc) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run(d.id, key, d.origin.repo, d.category, d.status, d.params, JSON.stringify(d));
  store
    .stmt(`INSERT INTO search_fts(rowid, ${COLUMNS.map((c) => c.name).join(', ')}) VALUES (?, ${COLUMNS.map(() => '?').join(', ')})`)
    .run(info.lastInsertRowid, ...ftsColumns(d));
}

function removeDoc(store: IndexStore, id: string): void {
  const old = store.stmt('SELECT rowid FROM search_docs WHERE id = ?').pluck().get(id) as number | undefined;
  if (old === undefined) return;
  store.stmt('DELETE FROM search_fts WHERE rowid = ?').run(old);
  store.stmt('DELETE FROM search_docs WHERE rowid = ?').run(old);
  store.stmt('DELETE FROM search_sigs WHERE id = ?').run(id);
}

/**
 * Bring the search index up to date with the stored extractions: build documents of new
 * blocks, rebuild those whose key (module hash, status, validation, spec) changed, drop
 * blocks that are no longer stored.
 */
export function syncSearchIndex(store: IndexStore): SyncReport {
  const t0 = performance.now();
  ensureFtsLayout(store);
  const current = new Map(
    (store.stmt('SELECT id, key FROM search_docs').all() as { id: string; key: string }[]).map((r) => [r.id, r.key]),
  );
  const rows = store.stmt('SELECT id, hash, status, updated FROM extractions').all() as { id: string; hash: string; status: string; updated: string }[];
  const report: SyncReport = { added: 0, updated: 0, removed: 0, unchanged: 0, ms: 0 };
  const specs = specRows(store);
  const todo: { e: StoredExtraction; key: string; spec: ReturnType<typeof storedSpec> }[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    seen.add(r.id);
    const key = docKey(r, specs.get(r.id) ?? null);
    if (current.get(r.id) === key) {
      report.unchanged++;
      continue;
    }
    const e = getExtraction(store, r.id);
    if (!e) continue;
    todo.push({ e, key, spec: specs.has(r.id) ? storedSpec(store, r.id) : null });
  }
  const gone = [...current.keys()].filter((id) => !seen.has(id));
  if (todo.length || gone.length) {
    const facts = new Map<string, FileFacts | null>();
    const docs = todo.map((t) => ({ doc: buildDoc(store, t.e, t.spec, facts), key: t.key }));
    store.write(() => {
      for (const { doc, key } of docs) {
        if (current.has(doc.id)) report.updated++;
        else report.added++;
        putDoc(store, doc, key);
      }
      for (const id of gone) {
        removeDoc(store, id);
        report.removed++;
      }
    });
  }
  report.ms = performance.now() - t0;
  return report;
}

/** The FTS table is a derived cache: when a store holds it with other columns (an older
 *  layout), drop it and every document so the next sync rebuilds them. */
function ensureFtsLayout(store: IndexStore): void {
  // the table as created (columns, tokenizer, prefixes): an index made by an older layout
  // is rebuilt from the stored documents
  const sql = store.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'search_fts'").pluck().get() as string | undefined;
  if (sql?.replace(/\s+/g, ' ') === FTS_SQL.replace(/\s+/g, ' ')) return;
  store.write(() => {
    store.db.exec('DROP TABLE IF EXISTS search_fts; DELETE FROM search_docs;');
    store.db.exec(FTS_SQL);
  });
}

export interface SearchFilters {
  repo?: string | string[];
  category?: string | string[];
  /** only blocks that passed validation */
  validated?: boolean;
  /** include blocks that failed validation (left out by default) */
  all?: boolean;
  minParams?: number;
  maxParams?: number;
}

export interface SearchOptions extends SearchFilters {
  limit?: number;
  offset?: number;
}

export interface SearchHit {
  id: string;
  name: string;
  /** −BM25: higher is better */
  score: number;
  origin: SearchDoc['origin'];
  status: string;
  category: string;
  params: number | null;
  summary: string | null;
}

export interface SearchResult {
  query: string;
  /** 'all' = every word matched, 'any' = fallback where some words matched, 'browse' = empty query */
  mode: 'all' | 'any' | 'browse';
  total: number;
  hits: SearchHit[];
  ms: number;
}

// FTS5's bm25() with column weights multiplies each column's term frequency by its weight
// *before* the saturating BM25 term-frequency function, so one heavy column cannot lift a
// document far above others (measured: weights 25/10/… moved "Bottleneck" only 0.1 above
// "ResBottleneck" for the query "bottleneck"). The rank is therefore a sum of two BM25s —
// one over the name columns, one over the text columns, each with its own column weights —
// so a match in the name adds its own full, saturated score (a BM25F-like sum; one bm25()
// call per column was measured 3× slower on 10,000 blocks for no better order).
const NAME_COLS = new Set(['exact', 'name']);
const NAME_WEIGHT = 10;
const RANK =
  `(${NAME_WEIGHT} * bm25(search_fts, ${COLUMNS.map((c) => (NAME_COLS.has(c.name) ? c.weight / 10 : 0)).join(', ')})` +
  ` + bm25(search_fts, ${COLUMNS.map((c) => (NAME_COLS.has(c.name) ? 0 : c.weight)).join(', ')}))`;

function filterSql(f: SearchFilters): { where: string[]; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]).filter((x) => x !== '');
  const repos = list(f.repo);
  if (repos.length) {
    where.push(`d.repo IN (${repos.map(() => '?').join(', ')})`);
    args.push(...repos);
  }
  const cats = list(f.category);
  if (cats.length) {
    where.push(`d.category IN (${cats.map(() => '?').join(', ')})`);
    args.push(...cats.map((c) => c.toLowerCase()));
  }
  if (f.validated) where.push(`d.status = 'validated'`);
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

function hitOf(row: { doc: string; score: number }): SearchHit {
  const d = JSON.parse(row.doc) as SearchDoc;
  return { id: d.id, name: d.name, score: Math.round(row.score * 1e4) / 1e4, origin: d.origin, status: d.status, category: d.category, params: d.params, summary: d.summary };
}

/** Search the index (call `syncSearchIndex` first to include new extractions). */
export function searchBlocks(store: IndexStore, query: string, opts: SearchOptions = {}): SearchResult {
  const t0 = performance.now();
  const limit = Math.max(1, Math.min(opts.limit ?? 20, 1000));
  const offset = Math.max(0, opts.offset ?? 0);
  const { where, args } = filterSql(opts);
  const q = parseQuery(query, { isWord: (t) => !!store.stmt('SELECT 1 FROM search_fts WHERE search_fts MATCH ? LIMIT 1').get(quoteTerm(t)) });
  if (!q.all) {
    const w = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const rows = store.stmt(`SELECT d.doc AS doc, 0 AS score FROM search_docs d ${w} ORDER BY d.id LIMIT ? OFFSET ?`).all(...args, limit, offset) as { doc: string; score: number }[];
    const total = store.stmt(`SELECT count(*) FROM search_docs d ${w}`).pluck().get(...args) as number;
    return { query, mode: 'browse', total, hits: rows.map(hitOf), ms: performance.now() - t0 };
  }
  // a block whose whole name is the query comes first, whatever BM25 says (FTS5 clamps the
  // IDF of a word found in more than half of the blocks to ~0, e.g. "block")
  const joined = q.words.flatMap(identifierParts).join('');
  // validated blocks come before the others (then by rank): what a search finds first
  // should be a block that is proven to run
  const join = 'JOIN search_docs d ON d.rowid = search_fts.rowid';
  const run = (match: string) => {
    const w = ['search_fts MATCH ?', ...where].join(' AND ');
    const ranked = (m: string, n: number) =>
      store
        .stmt(`SELECT search_fts.rowid AS rowid, -${RANK} AS score FROM search_fts ${join} WHERE ${w} ORDER BY d.status = 'validated' DESC, score DESC, search_fts.rowid LIMIT ?`)
        .raw()
        .all(m, ...args, n) as [number, number][];
    // blocks whose whole name is the query (column filter on `exact`; `joined` holds letters
    // and digits only and is quoted), then the rest by rank
    const exact = joined ? ranked(`(${match}) AND exact : ${quoteTerm(joined)}`, 1000) : [];
    const exactIds = new Set(exact.map(([r]) => r));
    const rest = ranked(match, offset + limit + exact.length).filter(([r]) => !exactIds.has(r));
    const page = [...exact, ...rest].slice(offset, offset + limit);
    const docs = new Map(
      (page.length
        ? (store.stmt(`SELECT rowid, doc FROM search_docs WHERE rowid IN (${page.map(() => '?').join(',')})`).raw().all(...page.map(([r]) => r)) as [number, string][])
        : []),
    );
    const rows = page.map(([r, score]) => ({ doc: docs.get(r)!, score }));
    const total =
      rows.length < limit && offset === 0
        ? rows.length
        : (store.stmt(`SELECT count(*) FROM search_fts ${join} WHERE ${w}`).pluck().get(match, ...args) as number);
    return { rows, total };
  };
  let mode: SearchResult['mode'] = 'all';
  let r = run(q.all);
  if (r.total === 0 && q.any) {
    mode = 'any';
    r = run(q.any);
  }
  return { query, mode, total: r.total, hits: r.rows.map(hitOf), ms: performance.now() - t0 };
}

/** The stored search document of a block (after sync). */
export function getDoc(store: IndexStore, id: string): SearchDoc | null {
  const s = store.stmt('SELECT doc FROM search_docs WHERE id = ?').pluck().get(id) as string | undefined;
  return s ? (JSON.parse(s) as SearchDoc) : null;
}

/** Every stored document, by id. */
export function listDocs(store: IndexStore): SearchDoc[] {
  return (store.stmt('SELECT doc FROM search_docs ORDER BY id').pluck().all() as string[]).map((s) => JSON.parse(s) as SearchDoc);
}

/** Distinct values of the filter columns, for the catalog's filter menus. */
export function facets(store: IndexStore): { repos: string[]; categories: string[]; statuses: string[] } {
  const col = (c: string) => store.stmt(`SELECT DISTINCT ${c} FROM search_docs ORDER BY ${c}`).pluck().all() as string[];
  return { repos: col('repo'), categories: col('category'), statuses: col('status') };
}

/** Resolve a block id or a name to a stored extraction id, the way `extract` resolves
 *  names: an exact id; else `Class`, a dotted tail (`mlp.Mlp`) or `repo:name` naming one
 *  block; several → a usage error listing them; none → the nearest names. */
export function resolveLibraryId(store: IndexStore, idOrName: string): string {
  if (store.stmt('SELECT 1 FROM extractions WHERE id = ?').get(idOrName)) return idOrName;
  const { repo, qualified: name } = parseBlockId(idOrName);
  let ids = store.stmt("SELECT id FROM extractions WHERE id LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\' ORDER BY id").pluck()
    .all('%.' + name.replace(/[\\%_]/g, (c) => '\\' + c), '%:' + name.replace(/[\\%_]/g, (c) => '\\' + c)) as string[];
  if (repo) {
    const repoOf = (id: string) => (store.stmt('SELECT repo FROM blocks WHERE id = ?').pluck().get(id) as string | undefined) ?? (id.includes(':') ? id.slice(0, id.lastIndexOf(':')) : null);
    ids = ids.filter((id) => repoOf(id) === repo);
  }
  if (ids.length > 1) {
    throw new UsageError(`${JSON.stringify(idOrName)} is ambiguous: ${ids.length} library blocks answer to it; give one of\n${ids.map((i) => `  ${i}`).join('\n')}`);
  }
  if (!ids.length) {
    const all = store.stmt('SELECT id FROM extractions').pluck().all() as string[];
    if (!all.length) throw new NnragError(`no library block ${JSON.stringify(idOrName)}: the library is empty (run \`nnrag extract\` or \`nnrag demo\` first)`, 'unknown-block');
    const near = suggest(name.split('.').pop()!, all.map((i) => i.slice(i.lastIndexOf('.') + 1)));
    throw new NnragError(`no library block ${JSON.stringify(idOrName)}${near.length ? `; did you mean ${near.join(', ')}?` : ''}`, 'unknown-block');
  }
  return ids[0];
}

export { listExtractions };
