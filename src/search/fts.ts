// Block search (`nnrag search`, the catalog's search box): an SQLite FTS5 index over the
// library blocks, ranked by BM25 with per-column weights, kept in sync incrementally with
// the stored extractions (a row is rebuilt only when its extraction or spec changed).
//
// The tables and their SQL are in src/store/search.ts (migration 4).
//
// BM25 (FTS5 `bm25()`, k1 = 1.2, b = 0.75) returns lower = better; scores reported here are
// its negation, so higher = better.
import type { IndexStore } from '../store/store.js';
import { extractionStamps, getExtraction, listExtractions, type StoredExtraction, hasExtraction, extractionIds } from '../store/records.js';
import {
  browseDocs, countMatches, docFacets, docKeys, docsByRowid, ensureFtsLayout, ftsHasTerm, getDoc as storedDoc, listDocs as storedDocs,
  putDocs, rankedDocs, SEARCH_COLUMNS, type DocFilters,
} from '../store/search.js';
import { specTexts } from '../store/specs.js';
import { NnragError, UsageError } from '../util/errors.js';
import { suggest } from '../util/suggest.js';
import { parseBlockId } from '../discover/ids.js';
import { buildDoc, docKey, storedSpec, type SearchDoc } from './documents.js';
import { expandText, identifierParts, parseQuery, quoteTerm } from './tokens.js';
import type { FileFacts } from '../parse/types.js';

/** FTS columns and their BM25 weights (the block's own name counts most). */
export const COLUMNS = SEARCH_COLUMNS;

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

/** Insert or replace one document. */
export function putDoc(store: IndexStore, d: SearchDoc, key: string): void {
  putDocs(store, [{ doc: d, key, fts: ftsColumns(d) }]);
}

/**
 * Bring the search index up to date with the stored extractions: build documents of new
 * blocks, rebuild those whose key (module hash, status, validation, spec) changed, drop
 * blocks that are no longer stored.
 */
export function syncSearchIndex(store: IndexStore): SyncReport {
  const t0 = performance.now();
  ensureFtsLayout(store);
  const current = docKeys(store);
  const rows = extractionStamps(store);
  const report: SyncReport = { added: 0, updated: 0, removed: 0, unchanged: 0, ms: 0 };
  const specs = specTexts(store);
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
    for (const { doc } of docs) {
      if (current.has(doc.id)) report.updated++;
      else report.added++;
    }
    report.removed = gone.length;
    putDocs(store, docs.map(({ doc, key }) => ({ doc, key, fts: ftsColumns(doc) })), gone);
  }
  report.ms = performance.now() - t0;
  return report;
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

function docFilters(f: SearchFilters): DocFilters {
  const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]).filter((x) => x !== '');
  return {
    repos: list(f.repo),
    categories: list(f.category).map((c) => c.toLowerCase()),
    validated: !!f.validated,
    all: !!f.all,
    minParams: f.minParams,
    maxParams: f.maxParams,
  };
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
  const filters = docFilters(opts);
  const q = parseQuery(query, { isWord: (t) => ftsHasTerm(store, quoteTerm(t)) });
  if (!q.all) {
    const { docs, total } = browseDocs(store, filters, limit, offset);
    return { query, mode: 'browse', total, hits: docs.map((doc) => hitOf({ doc, score: 0 })), ms: performance.now() - t0 };
  }
  // a block whose whole name is the query comes first, whatever BM25 says (FTS5 clamps the
  // IDF of a word found in more than half of the blocks to ~0, e.g. "block")
  const joined = q.words.flatMap(identifierParts).join('');
  // validated blocks come before the others (then by rank): what a search finds first
  // should be a block that is proven to run
  const run = (match: string) => {
    const ranked = (m: string, n: number) => rankedDocs(store, m, filters, RANK, n);
    // blocks whose whole name is the query (column filter on `exact`; `joined` holds letters
    // and digits only and is quoted), then the rest by rank
    const exact = joined ? ranked(`(${match}) AND exact : ${quoteTerm(joined)}`, 1000) : [];
    const exactIds = new Set(exact.map(([r]) => r));
    const rest = ranked(match, offset + limit + exact.length).filter(([r]) => !exactIds.has(r));
    const page = [...exact, ...rest].slice(offset, offset + limit);
    const docs = docsByRowid(store, page.map(([r]) => r));
    const rows = page.map(([r, score]) => ({ doc: docs.get(r)!, score }));
    const total = rows.length < limit && offset === 0 ? rows.length : countMatches(store, match, filters);
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
  return storedDoc(store, id);
}

/** Every stored document, by id. */
export function listDocs(store: IndexStore): SearchDoc[] {
  return storedDocs(store);
}

/** Distinct values of the filter columns, for the catalog's filter menus. */
export function facets(store: IndexStore): { repos: string[]; categories: string[]; statuses: string[] } {
  return docFacets(store);
}

/** Resolve a block id or a name to a stored extraction id, the way `extract` resolves
 *  names: an exact id; else `Class`, a dotted tail (`mlp.Mlp`) or `repo:name` naming one
 *  block; several → a usage error listing them; none → the nearest names. */
export function resolveLibraryId(store: IndexStore, idOrName: string): string {
  if (hasExtraction(store, idOrName)) return idOrName;
  const { repo, qualified: name } = parseBlockId(idOrName);
  const all = extractionIds(store);
  // ids ending in `.name` or `:name` (a dotted tail, or the whole name after the
  // repository), ASCII case-insensitively as SQL's LIKE compared them
  const lower = (t: string) => t.replace(/[A-Z]/g, (c) => c.toLowerCase());
  const tails = [`.${lower(name)}`, `:${lower(name)}`];
  let ids = all.filter((id) => tails.some((t) => lower(id).endsWith(t)));
  if (repo) {
    const repoOf = (id: string) => store.getBlock(id)?.repo ?? (id.includes(':') ? id.slice(0, id.lastIndexOf(':')) : null);
    ids = ids.filter((id) => repoOf(id) === repo);
  }
  if (ids.length > 1) {
    throw new UsageError(`${JSON.stringify(idOrName)} is ambiguous: ${ids.length} library blocks answer to it; give one of\n${ids.map((i) => `  ${i}`).join('\n')}`);
  }
  if (!ids.length) {
    if (!all.length) throw new NnragError(`no library block ${JSON.stringify(idOrName)}: the library is empty (run \`nnrag extract\` or \`nnrag demo\` first)`, 'unknown-block');
    const near = suggest(name.split('.').pop()!, all.map((i) => i.slice(i.lastIndexOf('.') + 1)));
    throw new NnragError(`no library block ${JSON.stringify(idOrName)}${near.length ? `; did you mean ${near.join(', ')}?` : ''}`, 'unknown-block');
  }
  return ids[0];
}

export { listExtractions };
