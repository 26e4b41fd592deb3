// Block search (`nnrag search`, the catalog's search box): an SQLite FTS5 index over the
// library blocks, kept in sync incrementally with the stored extractions (a row is rebuilt
// only when its extraction or spec changed). Any query word may match; a block's score
// (0–1) weighs the words it matches by IDF and by the field they occur in, plus the share
// of its name the query covers (searchBlocks); BM25 with per-column weights orders equal
// scores.
//
// The tables and their SQL are in src/store/search.ts (migration 4; the per-field tables,
// FIELD_TABLES, are derived and rebuilt by a sync when missing or stale).
//
// BM25 (FTS5 `bm25()`, k1 = 1.2, b = 0.75) returns lower = better; it is negated here, so
// higher = better.
import type { IndexStore } from '../store/store.js';
import { extractionStamps, getExtraction, listExtractions, hasExtraction, extractionIds } from '../store/records.js';
import {
  browseDocs,
  maxDocRowid,
  countFts,
  docFacets,
  docKeys,
  docsByRowid,
  docFilterRows,
  ensureFtsLayout,
  FIELD_TABLES,
  fieldTablesCurrent,
  ftsHasTerm,
  type FtsTable,
  getDoc as storedDoc,
  listDocs as storedDocs,
  matchRowidsAfter,
  matchRowids,
  matchRowidsIn,
  matchRowidsSeek,
  optimizeFts,
  putDocs,
  rankOf,
  SEARCH_COLUMNS,
  termDocs,
  type DocFilters,
} from '../store/search.js';
import { specTexts } from '../store/specs.js';
import { NnragError, UsageError } from '../util/errors.js';
import { suggest } from '../util/suggest.js';
import { parseBlockId } from '../discover/ids.js';
import { buildDoc, docKey, storedSpec } from './documents.js';
import { PackedStringsBuilder } from './packed.js';
import type { SearchDoc } from '../records/search.js';
import {
  expandText,
  GENERIC,
  identifierParts,
  partsCoverer,
  queryWords,
  quoteTerm,
  relatedWords,
  sameStem,
  type QueryWord,
} from './tokens.js';
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

/** documents built and written per transaction by a sync */
const SYNC_CHUNK = 20_000;
/** a sync that writes at least this many documents merges the FTS segments afterwards */
const OPTIMIZE_AFTER = 10_000;

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
  const todo: { id: string; key: string }[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    seen.add(r.id);
    const key = docKey(r, specs.get(r.id) ?? null);
    if (current.get(r.id) === key) {
      report.unchanged++;
      continue;
    }
    todo.push({ id: r.id, key });
  }
  const gone = [...current.keys()].filter((id) => !seen.has(id));
  const facts = new Map<string, FileFacts | null>();
  // in chunks, each extraction read when its chunk is built: a library of 10^6 blocks does
  // not hold all its modules and documents in memory at once
  for (let i = 0; i < todo.length || (i === 0 && gone.length); i += SYNC_CHUNK) {
    const docs: { doc: SearchDoc; key: string }[] = [];
    for (const t of todo.slice(i, i + SYNC_CHUNK)) {
      const e = getExtraction(store, t.id);
      if (e)
        docs.push({ doc: buildDoc(store, e, specs.has(t.id) ? storedSpec(store, t.id) : null, facts), key: t.key });
    }
    for (const { doc } of docs) {
      if (current.has(doc.id)) report.updated++;
      else report.added++;
    }
    putDocs(
      store,
      docs.map(({ doc, key }) => ({ doc, key, fts: ftsColumns(doc) })),
      i === 0 ? gone : [],
    );
  }
  report.removed = gone.length;
  // after a large load the index's segments are merged into one (FTS5 'optimize'): a
  // query reads one segment per term instead of one per flush of the load
  if (report.added + report.updated >= OPTIMIZE_AFTER) optimizeFts(store);
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
  /** browse mode (empty query): the page after this block id (keyset paging; `offset`
   *  is ignored). SearchResult.last is the value for the next page */
  after?: string;
  /** at most this many matches are re-ranked (default CANDIDATES; Infinity: every match,
   *  the ranking the cap is compared with) */
  candidates?: number;
  /** more unfiltered matches than this take the large path (default LARGE) */
  large?: number;
  /** the large path counts matches up to this many (default TOTAL_CAP) */
  totalCap?: number;
  /** 'always': BM25 of the page's head even when no two of its blocks tie (the code before
   *  the skip; for comparisons); default: only when two tie */
  headBm25?: 'ties' | 'always';
  /** 'every': a multi-word query's phrase checked in every field (the code before the
   *  skip; for comparisons); default: only in the fields where a candidate could gain */
  phraseChecks?: 'needed' | 'every';
  /** blocks sharing a class name are one entry: `limit` and `offset` count entries (names),
   *  and every block of an entry on the page is returned (`nnrag search`) */
  group?: boolean;
}

export interface SearchHit {
  id: string;
  name: string;
  /** how well the block matches the query, 0–1: the query words it matches, each weighted
   *  by how rare it is in the library (IDF) and by where it matches (name 1, docstring 0.6,
   *  category / layers / parameters / module 0.4, other identifiers 0.2; a related word
   *  0.8 of that) */
  score: number;
  origin: SearchDoc['origin'];
  status: string;
  category: string;
  params: number | null;
  summary: string | null;
}

export interface SearchResult {
  query: string;
  /** 'all' = the first block matches every word, 'any' = the best blocks match some of the
   *  words, 'browse' = empty query */
  mode: 'all' | 'any' | 'browse';
  /** matching blocks (of the statuses shown); with `capped`, a lower bound */
  total: number;
  /** more than `total` blocks match: a query of more than LARGE matches counts the blocks
   *  shown among its first LARGE matches, at most TOTAL_CAP (shown as "more than N") */
  capped?: boolean;
  /** how many of them the ranking ordered (all when at most CANDIDATES match): pages
   *  past it are empty */
  ranked?: number;
  /** browse mode: the last block id of the page (pass it as `after` for the next page) */
  last?: string;
  hits: SearchHit[];
  /** the page's blocks by class name, in rank order (the best-ranked block first) */
  groups: { name: string; ids: string[] }[];
  /** distinct class names among the matching blocks (with `group`) */
  totalGroups?: number;
  /** matching blocks that failed validation and are not shown (default filter) */
  hiddenFailed: number;
  /** no block other than failed ones matches: those are shown (marked by their status) */
  failedOnly: boolean;
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

/** Where a word can match and what a match there is worth (the score of SearchHit); a
 *  field is a set of FTS columns, queried in its own FTS5 table (`table`: FIELD_TABLES in
 *  src/store/search.ts) or, without one, in search_fts with an FTS5 column filter. */
interface Field {
  weight: number;
  columns: string[];
  table: FtsTable | null;
}
const FIELDS: Field[] = [
  { weight: 1, columns: ['exact', 'name'], table: 'search_field_name' },
  { weight: 0.6, columns: ['summary'], table: 'search_field_summary' },
  { weight: 0.4, columns: ['category', 'layers', 'params', 'qualname'], table: 'search_field_mid' },
  { weight: 0.2, columns: ['identifiers', 'deps'], table: null },
];
// a field's table indexes exactly the field's columns
for (const g of FIELDS) {
  const t = FIELD_TABLES.find((x) => x.table === g.table);
  if (g.table && (!t || [...t.columns].sort().join() !== [...g.columns].sort().join()))
    throw new Error(`search field table ${g.table} does not index the field's columns`);
}
/** the fields name every FTS column: a match in some field is a match anywhere */
const FIELDS_COVER_ALL = COLUMNS.every((c) => FIELDS.some((g) => g.columns.includes(c.name)));
/** what a related word's match is worth against the word's own */
const RELATED_WEIGHT = 0.8;
/** blocks scoring at least this share of the best score are "strong" matches: among them
 *  validated blocks come first */
const STRONG = 0.5;
/** the IDF factor of a generic word (GENERIC in tokens.ts: block, layer, module …) */
const GENERIC_IDF = 0.3;
/** the score is the query words' coverage times (1 − NAME_SHARE + NAME_SHARE × the share
 *  of the block's name the query covers): a block the query names outranks one that only
 *  mentions the words (`Residual` for "residual connection" rather than a block whose
 *  docstring has both words) */
const NAME_SHARE = 0.4;
/** a multi-word query found as a phrase in a field closes this share of the coverage gap,
 *  times the field's weight ("edge detection" in DexiNed's docstring) */
const PHRASE = 0.5;
/** A query's candidates are at most this many blocks: when more match, the best by BM25
 *  (RANK: the name columns weigh most) and every block whose whole name is the query;
 *  the re-ranking below scores only these (measured on 10^5 blocks: scoring every match
 *  of a common word cost ~1 s). The judged query sets' stores have fewer blocks than this
 *  for every query, so their results are unchanged by the cap. */
export const CANDIDATES = 1000;
/** A query whose words match more blocks than this (unfiltered) takes the large path, which
 *  reads, scores and ranks a bounded number of blocks whatever the matches (measured on 10^6 blocks: "conv" matches 414,000,
 *  and every pass over them costs FTS5 15–30 ms of CPU, returning them to JavaScript 80–100
 *  ms, BM25 over them 65–85 ms): the blocks shown among the first LARGE matches are
 *  counted, at most TOTAL_CAP (the total then says "more than" them), the candidates come from the class names held in memory (the blocks
 *  the query names whole, then by the words their name holds and how much of it they
 *  cover, validated first, as the score ranks them) instead of the name columns' matches,
 *  and blocks of equal score are ordered by rowid instead of by BM25 (whose statistics are
 *  a pass over every match). Below it, the exact path above, unchanged: the judged query
 *  sets' stores never reach it. */
export const LARGE = 20_000;
/** the large path counts matches up to this many */
export const TOTAL_CAP = 10_000;
/** a repository or category filter passing at most this many documents: the large path
 *  looks each of them up in the index instead of reading the matches */
const SEEK_DOCS = 5_000;

/** FilterColumns.mask's values by rowid */
export const MASK_OUT = 0;
/** the filters pass the document and its status is shown (not a failed block hidden) */
export const MASK_SHOWN = 1;
/** the filters pass the document, a failed block the default filter hides */
export const MASK_HIDDEN = 2;

interface FilterColumns {
  /** a predicate on rowids for the filters (every rowid of a document) */
  predicate(f: DocFilters): (rowid: number) => boolean;
  /** the filters' verdict on every rowid, one byte each (MASK_OUT, MASK_SHOWN, MASK_HIDDEN):
   *  made by one sequential pass over the columns and kept per filter (the last
   *  MASKS_KEPT filters) and store state, so a query tests a name by one read of a 1-byte
   *  array instead of the predicate's reads of the status, repository, category and
   *  parameter columns (at 10^6 blocks, 14 MB read at random for a common word's 10^5
   *  name holders) */
  mask(f: DocFilters): Uint8Array;
  /** how many documents pass the filters, of the statuses they show (what countDocs
   *  counts in SQL: a scan of search_docs, whose rows hold the documents' JSON) */
  count(f: DocFilters): number;
  status: Uint8Array;
  failedCode: number;
  /** status code of validated blocks (−1 when none is) */
  validatedCode: number;
  statusOf(rowid: number): string;
  isValidated(rowid: number): boolean;
  /** rowids are below this */
  size: number;
  /** class name (the block id's last part; '' for a rowid without a document) */
  nameOf(rowid: number): string;
  /** whether the rowid's document has a class name */
  hasName(rowid: number): boolean;
  /** the class name's identifier parts */
  parts(rowid: number): string[];
}

/** the masks kept per store state (the most recently used filters; 1 byte a document each) */
const MASKS_KEPT = 16;
/** masks made in this process (a test counts them: a filter's second query makes none) */
let maskBuilds = 0;
export function filterMaskBuilds(): number {
  return maskBuilds;
}

/** The filters' verdict on every rowid of the store's documents (MASK_OUT, MASK_SHOWN,
 *  MASK_HIDDEN), as the search reads it: kept per filter and store state. */
export function filterMask(store: IndexStore, f: SearchFilters): Uint8Array {
  return filterColumns(store).mask(docFilters(f));
}

/** A filter's key for its mask: the fields the mask depends on (not `failedOnly`, which
 *  only the browse count reads). */
function maskKey(f: DocFilters): string {
  return JSON.stringify([
    [...f.repos].sort(),
    [...f.categories].sort(),
    f.validated,
    f.all,
    f.minParams ?? null,
    f.maxParams ?? null,
  ]);
}

/** documents whose filter columns are read per statement (the rows of a chunk are garbage
 *  once read: a chunk, unlike the whole table, dies young) */
const FILTER_CHUNK = 50_000;
/** joins a name's identifier parts in the packed parts (a part holds letters and digits
 *  only, or a whole identifier chunk: never NUL) */
const PART_SEP = '\0';

/** The documents' filter columns as typed arrays by rowid, and their class names and the
 *  names' identifier parts packed (src/search/packed.ts), read once per store state. */
function filterColumns(store: IndexStore): FilterColumns {
  return memoized(store, 'filter-columns', () => {
    const max = maxDocRowid(store);
    const size = max + 1;
    const repoCode = new Map<string, number>();
    const catCode = new Map<string, number>();
    const statusCode = new Map<string, number>();
    const code = (m: Map<string, number>, x: string) => {
      let c = m.get(x);
      if (c === undefined) m.set(x, (c = m.size + 1));
      return c;
    };
    const repo = new Int32Array(size);
    const cat = new Int32Array(size);
    const status = new Uint8Array(size);
    const params = new Float64Array(size).fill(Number.NaN);
    const names = new PackedStringsBuilder(size);
    const partsOf = new PackedStringsBuilder(size);
    for (let after = Number.MIN_SAFE_INTEGER; ; ) {
      const rows = docFilterRows(store, after, FILTER_CHUNK);
      if (!rows.length) break;
      for (const [rowid, id, rp, c, st, p] of rows) {
        const name = parseBlockId(id).className;
        names.set(rowid, name);
        partsOf.set(rowid, identifierParts(name).join(PART_SEP));
        repo[rowid] = code(repoCode, rp);
        cat[rowid] = code(catCode, c);
        status[rowid] = code(statusCode, st);
        if (p !== null) params[rowid] = p;
      }
      if (rows.length < FILTER_CHUNK) break;
      after = rows[rows.length - 1][0];
    }
    const name = names.build();
    const parts = partsOf.build();
    const statusName = new Map([...statusCode].map(([k, v]) => [v, k]));
    const validated = statusCode.get('validated') ?? -1;
    const failed = statusCode.get('failed') ?? -1;
    const masks = new Map<string, Uint8Array>();
    const mask = (f: DocFilters) => {
      const k = maskKey(f);
      let m = masks.get(k);
      if (m) {
        // most recently used last: the first entry is the one evicted
        masks.delete(k);
        masks.set(k, m);
        return m;
      }
      maskBuilds++;
      // each column's verdict per code, looked up per rowid (no Set or closure per row)
      const ofCodes = (codes: Map<string, number>, wanted: string[]) => {
        const t = new Uint8Array(codes.size + 1).fill(wanted.length ? 0 : 1);
        for (const x of wanted) {
          const c = codes.get(x);
          if (c !== undefined) t[c] = 1;
        }
        return t;
      };
      const repoOk = ofCodes(repoCode, f.repos);
      const catOk = ofCodes(catCode, f.categories);
      // a status's verdict: out (code 0: no document; or not validated when only validated
      // ones pass), hidden (failed, unless `all`), or shown
      const statusOk = new Uint8Array(statusCode.size + 1);
      for (const c of statusCode.values())
        statusOk[c] = f.validated && c !== validated ? MASK_OUT : c === failed && !f.all ? MASK_HIDDEN : MASK_SHOWN;
      const lo = f.minParams;
      const hi = f.maxParams;
      m = new Uint8Array(size);
      for (let r = 0; r < size; r++) {
        const v = statusOk[status[r]];
        if (v === MASK_OUT || !repoOk[repo[r]] || !catOk[cat[r]]) continue;
        // SQL comparisons with NULL params are false (NaN here)
        if ((lo !== undefined && !(params[r] >= lo)) || (hi !== undefined && !(params[r] <= hi))) continue;
        m[r] = v;
      }
      masks.set(k, m);
      if (masks.size > MASKS_KEPT) masks.delete(masks.keys().next().value!);
      return m;
    };
    const predicate = (f: DocFilters) => {
      const repos = new Set(f.repos.map((r) => repoCode.get(r) ?? -1));
      const cats = new Set(f.categories.map((c) => catCode.get(c) ?? -1));
      // SQL comparisons with NULL params are false (filterSql: d.params >= ?)
      return (r: number) =>
        status[r] !== 0 &&
        (!repos.size || repos.has(repo[r])) &&
        (!cats.size || cats.has(cat[r])) &&
        (!f.validated || status[r] === validated) &&
        (f.minParams === undefined || params[r] >= f.minParams) &&
        (f.maxParams === undefined || params[r] <= f.maxParams);
    };
    return {
      parts: (r: number) => (parts.byteLength(r) ? parts.get(r).split(PART_SEP) : []),
      status,
      failedCode: failed,
      validatedCode: validated,
      statusOf: (r: number) => statusName.get(status[r]) ?? '',
      isValidated: (r: number) => status[r] === validated,
      size,
      nameOf: (r: number) => name.get(r),
      hasName: (r: number) => name.byteLength(r) > 0,
      predicate,
      mask,
      count(f: DocFilters) {
        const passes = predicate({ ...f, validated: false });
        // filterSql's status conditions: only failed ones, else only validated ones, else
        // all but failed ones unless `all`
        const shown = (r: number) =>
          f.failedOnly ? status[r] === failed : f.validated ? status[r] === validated : f.all || status[r] !== failed;
        let n = 0;
        for (let r = 0; r < size; r++) if (passes(r) && shown(r)) n++;
        return n;
      },
    };
  });
}

interface NameIndex {
  /** the rowids of the class names holding each part (numbers left out; a rowid once per
   *  occurrence, as nameCoverage counts parts) */
  lists: Map<string, Int32Array>;
  /** twice a name's parts weighed as nameCoverage weighs them (GENERIC 0.5, others 1):
   *  an integer, so 2 bytes a name instead of a double's 8 (the large path reads it at
   *  random for 10^5 names a query) */
  weight2: Uint16Array;
}

/** The class names' parts as an inverted index, built once per store state (the large
 *  path's candidates: which names hold a query word, how much of each it covers). */
function nameIndex(store: IndexStore): NameIndex {
  return memoized(store, 'name-index', () => {
    const cols = filterColumns(store);
    const n = cols.size;
    const weight2 = new Uint16Array(n);
    const counts = new Map<string, number>();
    const numeric = /^\d+$/;
    for (let r = 0; r < n; r++) {
      if (!cols.hasName(r)) continue;
      let w2 = 0;
      for (const p of cols.parts(r)) {
        w2 += GENERIC.has(p) ? 1 : 2;
        if (!numeric.test(p)) counts.set(p, (counts.get(p) ?? 0) + 1);
      }
      weight2[r] = w2;
    }
    const lists = new Map<string, Int32Array>();
    for (const [p, c] of counts) lists.set(p, new Int32Array(c));
    const fill = new Map<string, number>();
    for (let r = 0; r < n; r++) {
      if (!cols.hasName(r)) continue;
      for (const p of cols.parts(r)) {
        const l = lists.get(p);
        if (!l) continue;
        const i = fill.get(p) ?? 0;
        l[i] = r;
        fill.set(p, i + 1);
      }
    }
    return { lists, weight2 };
  });
}

/** Which query words a class name holds in its identifier parts (the word's joined form,
 *  or all of its parts; a prefix for a prefix term): a name that holds a word holds it in
 *  the name columns, which index those parts, so the word matches there (weight 1). */
function wordsInName(words: readonly QueryWord[]): (parts: readonly string[]) => boolean[] {
  const tests = words.map((w) => {
    const prefix = w.expr.includes('*');
    const parts = identifierParts(w.word);
    const has = (ps: readonly string[], q: string, pre: boolean) => ps.some((p) => p === q || (pre && p.startsWith(q)));
    return (ps: readonly string[]) =>
      has(ps, w.word, prefix) ||
      (parts.length > 1 && parts.every((q, i) => has(ps, q, prefix && i === parts.length - 1)));
  });
  return (ps) => tests.map((t) => t(ps));
}

/**
 * The large path's name candidates: the blocks whose class name holds a query word (one of
 * its terms as a whole part, or all of its parts; a prefix for a prefix term; a related
 * word), best first by how many query words the name holds, then validated, then the share
 * of the name the query covers (nameCoverage, summed over the index), then rowid; at most
 * `max`, of those whose `keep.ok` is `keep.okValue` and not in `keep.picked`.
 */
function nameCandidates(
  store: IndexStore,
  words: readonly QueryWord[],
  keep: { ok: Uint8Array; okValue: number; picked: ReadonlySet<number> },
  max: number,
): number[] {
  const { ok, okValue, picked } = keep;
  const { lists, weight2 } = nameIndex(store);
  const qs = [...new Set(words.flatMap((w) => [w.word, ...identifierParts(w.word)]))];
  const rel = new Set(qs.flatMap(relatedWords));
  // each word's slots: its joined form, each of its parts, its related words; a name holds
  // the word when it holds the joined form, every part, or a related word
  const slots: { word: number; test: (p: string) => boolean }[] = [];
  const needs: { joined: number; parts: number; related: number }[] = [];
  words.forEach((w, wi) => {
    const prefix = w.expr.includes('*');
    const parts = identifierParts(w.word);
    const bit = () => 1 << slots.length;
    const m = { joined: 0, parts: 0, related: 0 };
    const lastPart = parts.length - 1;
    m.joined = bit();
    slots.push({ word: wi, test: (p) => p === w.word || (prefix && p.startsWith(w.word)) });
    if (parts.length > 1)
      parts.forEach((q, i) => {
        m.parts |= bit();
        slots.push({ word: wi, test: (p) => p === q || (prefix && i === lastPart && p.startsWith(q)) });
      });
    const rw = new Set([...relatedWords(w.word), ...parts.flatMap(relatedWords)]);
    if (rw.size) {
      m.related = bit();
      slots.push({ word: wi, test: (p) => rw.has(p) });
    }
    needs.push(m);
  });
  if (slots.length > 30) return [];
  // the parts that count (a share of coverage or a slot), in the index's order
  const used: { list: Int32Array; mask: number; w: number }[] = [];
  for (const [p, list] of lists) {
    // the part's share of coverage (as partsCoverer scores a part)
    const score = qs.some((q) => sameStem(p, q)) ? 1 : rel.has(p) ? 0.8 : 0;
    let mask = 0;
    slots.forEach((s, i) => {
      if (s.test(p)) mask |= 1 << i;
    });
    if (!score && !mask) continue;
    used.push({ list, mask, w: (GENERIC.has(p) ? 0.5 : 1) * score });
  }
  // their lists merged in rowid order (each list is): per name the slots it holds and its
  // coverage summed part by part in the index's order. Sequential, not marks in arrays of
  // every name (10^5 random accesses into 12 MB a query were most of this function's time).
  // Each name is kept or dropped as it is merged, into arrays sized once (at 10^6 blocks a
  // common word's lists hold 10^5 names: three growing arrays of them per query were
  // garbage and copies)
  const ls = used.map((u) => u.list);
  let size = 0;
  for (const l of ls) size += l.length;
  const members = new Int32Array(size);
  const key = new Float64Array(size);
  const cols = filterColumns(store);
  const count = mergeNameLists(
    {
      lists: ls,
      masks: Int32Array.from(used, (u) => u.mask),
      ws: Float64Array.from(used, (u) => u.w),
      needs: Int32Array.from(needs.flatMap((m) => [m.joined, m.parts, m.related])),
      ok,
      okValue,
      skip: Int32Array.from(picked).sort(),
      status: cols.status,
      validatedCode: cols.validatedCode,
      weight2,
    },
    members,
    key,
  );
  if (!count || max <= 0) return [];
  // the best `max` without sorting every member (10^5 of them for a common word): the key
  // of the max-th best member (counting equal keys) is the threshold; the members above it
  // are taken, and those at it in rowid order until `max`
  const threshold = count <= max ? Math.min(...key.subarray(0, count)) : kthLargest(key.slice(0, count), max);
  const best: number[] = [];
  const atThreshold: number[] = [];
  for (let i = 0; i < count; i++) {
    if (key[i] > threshold) best.push(i);
    else if (key[i] === threshold) atThreshold.push(i);
  }
  // (members are in rowid order, as merged: so are those at the threshold)
  best.push(...atThreshold.slice(0, max - best.length));
  best.sort((a, b) => key[b] - key[a] || members[a] - members[b]);
  return best.map((i) => members[i]);
}

/** What mergeNameLists reads: typed arrays only, so the loop compiled once (or at
 *  prepareSearch's warm-up) serves every query without a deoptimization (a closure made per
 *  query, as the words' test was, is a new call target each time). */
interface NameLists {
  /** each part's rowids, in rowid order */
  lists: Int32Array[];
  /** each list's slot bits and coverage share */
  masks: Int32Array;
  ws: Float64Array;
  /** per query word, its joined, parts and related slot bits */
  needs: Int32Array;
  /** a rowid may be a candidate when ok[rowid] === okValue, and it is not in `skip`
   *  (ascending) */
  ok: Uint8Array;
  okValue: number;
  skip: Int32Array;
  status: Uint8Array;
  validatedCode: number;
  weight2: Uint16Array;
}

/** The k-way merge of nameCandidates: every name holding some query word (its slots),
 *  kept when `ok` passes it, into `members` with its key (words held, then validated, then
 *  coverage: larger is better); returns how many. */
function mergeNameLists(x: NameLists, members: Int32Array, key: Float64Array): number {
  const { lists: ls, masks, ws, needs, ok, okValue, skip, status, validatedCode, weight2 } = x;
  let count = 0;
  let sp = 0;
  const at = new Int32Array(ls.length);
  for (;;) {
    let r = 0x7fffffff;
    for (let k = 0; k < ls.length; k++) {
      const l = ls[k];
      if (at[k] < l.length && l[at[k]] < r) r = l[at[k]];
    }
    if (r === 0x7fffffff) break;
    let b = 0;
    let a = 0;
    for (let k = 0; k < ls.length; k++) {
      const l = ls[k];
      while (at[k] < l.length && l[at[k]] === r) {
        b |= masks[k];
        a += ws[k];
        at[k]++;
      }
    }
    // the filters' verdict first: one read of a byte per name (the mask), not the columns'
    if (!b || ok[r] !== okValue) continue;
    while (sp < skip.length && skip[sp] < r) sp++;
    if (sp < skip.length && skip[sp] === r) continue;
    // how many query words the slot bits hold: the joined form, every part, or a related word
    let h = 0;
    for (let i = 0; i < needs.length; i += 3) {
      const parts = needs[i + 1];
      if (b & needs[i] || (parts && (b & parts) === parts) || b & needs[i + 2]) h++;
    }
    if (!h) continue;
    members[count] = r;
    // words held, then validated, then coverage (0–1): one number, larger is better
    key[count++] = h * 4 + (status[r] === validatedCode ? 2 : 0) + Math.min(1, a / (weight2[r] / 2 || 1));
  }
  return count;
}

/** The k-th largest value of `xs` (1-based, equal values counted each), by selection with
 *  a three-way partition (the keys take few distinct values); `xs` is reordered. */
function kthLargest(xs: Float64Array, k: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  let want = k - 1; // index in descending order
  for (;;) {
    if (lo === hi) return xs[lo];
    const pivot = xs[lo + ((hi - lo) >> 1)];
    // [lo, gt): > pivot, [gt, i): = pivot, (lt, hi]: < pivot
    let gt = lo;
    let i = lo;
    let lt = hi;
    while (i <= lt) {
      const x = xs[i];
      if (x > pivot) {
        xs[i] = xs[gt];
        xs[gt++] = x;
        i++;
      } else if (x < pivot) {
        xs[i] = xs[lt];
        xs[lt--] = x;
      } else i++;
    }
    if (want < gt - lo) hi = gt - 1;
    else if (want < i - lo) return pivot;
    else {
      want -= i - lo;
      lo = i;
    }
  }
}

/** The rowids of the documents a repository or category filter passes, when at most
 *  SEEK_DOCS (null otherwise, or without such a filter); kept per filter and store state. */
function filteredDocs(store: IndexStore, f: DocFilters): Int32Array | null {
  if (!f.repos.length && !f.categories.length) return null;
  return memoized(store, `docs:${JSON.stringify(f)}`, () => {
    const cols = filterColumns(store);
    const verdict = cols.mask(f);
    const out: number[] = [];
    for (let r = 0; r < cols.size; r++) {
      if (verdict[r] === MASK_OUT) continue;
      if (out.length >= SEEK_DOCS) return null;
      out.push(r);
    }
    return Int32Array.from(out);
  });
}

/** A lookup by rowid costs about as much as a pass over this many of an expression's
 *  documents (checkRows; measured on 10^6 blocks, 1,000 random rowids against a pass:
 *  6–10 µs a lookup of a word against 0.06–0.07 µs a document, 9 µs a lookup of a phrase
 *  against 0.2 µs a document, whose positions a pass compares). */
function seekCost(expr: string): number {
  return expr.includes(' + ') ? 40 : 100;
}

/** The quoted terms of an FTS5 expression (a phrase's words each count: a lookup seeks
 *  every term's list). */
function termCount(expr: string): number {
  return expr.match(/"(?:[^"]|"")*"/g)?.length ?? 1;
}
/** at most this many rows are looked up without counting the expression's documents
 *  (at most ~0.5 ms of lookups, less than a count of a common word) */
const FEW_LOOKUPS = 50;
/** the large path's count reads the rest of a window of matches this many at a time */
const MORE_MATCHES = 4096;

/**
 * The rows among `ids` that an expression matches in a table, read without a column
 * filter (so they can be looked up by rowid): each id looked up (matchRowidsSeek: the cost
 * follows the ids) or one pass over the expression's documents (matchRowidsIn: the cost
 * follows its documents), whichever reads less; the documents are counted once per store
 * state.
 */
function checkRows(store: IndexStore, table: FtsTable, expr: string, ids: readonly number[]): number[] {
  // a few lookups cost less than the count (the first query of an expression)
  if (ids.length <= FEW_LOOKUPS) return matchRowidsSeek(store, expr, ids, table);
  const docs = memoized(store, `df:${table}:${expr}`, () => docCount(store, expr, table));
  if (!docs) return [];
  return ids.length * seekCost(expr) < docs
    ? matchRowidsSeek(store, expr, ids, table)
    : matchRowidsIn(store, expr, ids, table);
}

/** An expression's documents in a table: a term of search_fts read from its vocabulary
 *  (termDocs: a word's first query at 10^6 blocks pays 4–8 ms instead of 7–22), any other
 *  expression counted. */
function docCount(store: IndexStore, expr: string, table: FtsTable): number {
  return (table === 'search_fts' ? termDocs(store, expr) : null) ?? countFts(store, expr, table);
}

/** Values that change only when the store does (the number of documents, the facets, a
 *  browse total), kept per store handle until a write (the refreshSearch stamp). */
const memo = new WeakMap<IndexStore, { stamp: string; values: Map<string, unknown> }>();
function memoized<T>(store: IndexStore, key: string, compute: () => T): T {
  const c = store.changeCounters();
  const stamp = `${c.dataVersion}:${c.ownChanges}`;
  let m = memo.get(store);
  if (!m || m.stamp !== stamp) {
    m = { stamp, values: new Map() };
    memo.set(store, m);
  }
  if (!m.values.has(key)) m.values.set(key, compute());
  return m.values.get(key) as T;
}

function docFilters(f: SearchFilters): DocFilters {
  const list = (v: string | string[] | undefined) =>
    (v === undefined ? [] : Array.isArray(v) ? v : [v]).filter((x) => x !== '');
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
  return {
    id: d.id,
    name: d.name,
    score: Math.round(row.score * 1e4) / 1e4,
    origin: d.origin,
    status: d.status,
    category: d.category,
    params: d.params,
    summary: d.summary,
  };
}

interface Candidate {
  rowid: number;
  /** class name (the id's last part) */
  name: string;
  status: string;
  /** 0–1 relevance (SearchHit.score) */
  rel: number;
  /** summed −BM25 of the words: the order among equal relevance */
  bm: number;
  /** it matches every word of the query */
  every: boolean;
  exact: boolean;
}

/**
 * Search the index (call `syncSearchIndex` first to include new extractions).
 *
 * Every word of the query may match (OR semantics): a block is scored by the words it
 * matches — a word counts by its IDF (Lucene's ln(1 + (N − n + ½)/(n + ½)), positive
 * however few blocks the library has) times the weight of the best field it occurs in
 * (FIELDS), a related word (RELATED in tokens.ts) at 0.8 — divided by what matching every
 * word in the name would score, so a block named by the query scores 1 and a single block
 * in a store still gets a meaningful score. Order: blocks whose whole name is the query,
 * then the strong matches (≥ half the best score) validated first, then the rest; equal
 * scores by BM25. Blocks that failed validation are left out unless asked for (`all`),
 * but when nothing else matches they are shown (`failedOnly`), and how many were left out
 * is counted (`hiddenFailed`).
 */
export function searchBlocks(store: IndexStore, query: string, opts: SearchOptions = {}): SearchResult {
  const t0 = performance.now();
  const limit = Math.max(1, Math.min(opts.limit ?? 20, 1000));
  const offset = Math.max(0, opts.offset ?? 0);
  const filters = docFilters(opts);
  const words = queryWords(query, { isWord: (t) => ftsHasTerm(store, quoteTerm(t)) });
  const groupsOf = (hits: SearchHit[]) => {
    const m = new Map<string, string[]>();
    for (const h of hits) m.set(h.name, [...(m.get(h.name) ?? []), h.id]);
    return [...m].map(([name, ids]) => ({ name, ids }));
  };
  if (!words.length) {
    const docs = browseDocs(store, filters, limit, offset, opts.after);
    // counted on the filter columns in memory (in SQL, a scan of every document's row)
    const total = memoized(store, `count:${JSON.stringify(filters)}`, () => filterColumns(store).count(filters));
    const hits = docs.map((doc) => hitOf({ doc, score: 0 }));
    return {
      query,
      mode: 'browse',
      total,
      hits,
      groups: groupsOf(hits),
      last: hits.length ? hits[hits.length - 1].id : undefined,
      hiddenFailed: 0,
      failedOnly: false,
      ms: performance.now() - t0,
    };
  }
  // the candidates: blocks one of the words (or a related word) matches, of the statuses
  // shown; failed ones only when no other block matches. Matches are filtered here on the
  // filter columns held in memory (exact totals, no join).
  const union = words.map((w) => (w.related ? `(${w.expr}) OR (${w.related})` : `(${w.expr})`)).join(' OR ');
  const joined = words.map((w) => w.word).join('');
  const cols = filterColumns(store);
  // the field tables hold every document: a field's check is a query on its own table
  const fieldTables = memoized(store, 'field-tables', () => fieldTablesCurrent(store));
  // the blocks the query names whole: its joined words as the `exact` column's one term
  const exactTerm = joined ? quoteTerm(joined) : null;
  const exactExpr = exactTerm && !fieldTables ? `exact : ${exactTerm}` : null;
  // the filters' verdict per rowid (out, shown, or a failed block hidden), kept per filter
  const verdict = cols.mask(filters);
  const coverParts = partsCoverer(words.map((w) => w.word));
  // a name's parts are decoded from the packed buffer once per query (the large path reads
  // a candidate's for the words its name holds and for its coverage)
  const partsMemo = new Map<number, string[]>();
  const partsOf = (r: number) => {
    let p = partsMemo.get(r);
    if (p === undefined) partsMemo.set(r, (p = cols.parts(r)));
    return p;
  };
  const cover = (r: number) => coverParts(partsOf(r));
  const largeAt = opts.large ?? LARGE;
  const totalCap = opts.totalCap ?? TOTAL_CAP;
  const fieldExpr = (expr: string, g: Field) => `{${g.columns.join(' ')}} : (${expr})`;
  // a field's documents of an expression, counted (IDF): in the field's table when there
  // is one (the same documents as the column filter, without its positions)
  const fieldCount = (expr: string, g: Field) =>
    fieldTables && g.table
      ? memoized(store, `df:${g.table}:${expr}`, () => countFts(store, expr, g.table!))
      : memoized(store, `df:${fieldExpr(expr, g)}`, () => countFts(store, fieldExpr(expr, g)));
  // each word's documents (a word's document frequency depends on the library only: kept
  // until the store changes): those it matches in some field, and the most a related
  // word matches in one field. A word of one term (no AND: one identifier part) matches in
  // some field exactly when it matches at all, since the fields cover every column
  // (FIELDS_COVER_ALL): it is counted without column filters, which need no position list
  // (at 10^6 blocks, 17 ms of CPU for "conv" against 57 ms for the four filtered ones; paid
  // by a word's first query). A word of several parts must match all of them within one
  // field.
  // The related words' documents (the most in one field) stand in for a word that matches
  // none: counted only then.
  const wordDocs = words.map((w) => {
    const ownExpr = FIELDS.map((g) => fieldExpr(w.expr, g)).join(' OR ');
    const oneTerm = FIELDS_COVER_ALL && !w.expr.includes(' AND ');
    // (the one-term count under checkRows' key: the low field's check reads it too)
    const own = oneTerm
      ? memoized(store, `df:search_fts:${w.expr}`, () => docCount(store, w.expr, 'search_fts'))
      : memoized(store, `df:${ownExpr}`, () => countFts(store, ownExpr));
    let related = 0;
    if (!own && w.related) for (const g of FIELDS) related = Math.max(related, fieldCount(w.related, g));
    return { own, related };
  });
  // the query's matches are at least each word's (or related word's) documents: past
  // largeAt, the query takes the large path without reading its first largeAt + 1 matches
  let atLeast = 0;
  for (const d of wordDocs) atLeast = Math.max(atLeast, d.own, d.related);
  const knownLarge = Number.isFinite(largeAt) && atLeast > largeAt;
  // else the first matches, enough to tell whether the query takes the large path
  const first = knownLarge
    ? null
    : Number.isFinite(largeAt)
      ? matchRowidsAfter(store, union, Number.MIN_SAFE_INTEGER, largeAt + 1)
      : matchRowids(store, union);
  const large = first === null || first.length > largeAt;
  const shown: number[] = [];
  const failed: number[] = [];
  let complete = true;
  // the blocks the query names whole (the `exact` column: few blocks), read once
  let exactRows: number[] | null = null;
  const exactList = () =>
    (exactRows ??= !exactTerm
      ? []
      : fieldTables
        ? matchRowids(store, exactTerm, 'search_field_exact')
        : matchRowids(store, exactExpr!));
  const classify = (r: number) => {
    const v = verdict[r];
    if (v === MASK_SHOWN) shown.push(r);
    else if (v === MASK_HIDDEN) failed.push(r);
  };
  if (!large) for (const r of first!) classify(r);
  else {
    const docs = filteredDocs(store, filters);
    // a filter's few documents: each looked up, or one pass over the matches when they are
    // fewer than the lookups would cost (checkRows). A lookup seeks every term of the
    // union and a pass reads every term's documents (measured at 10^6 on a repository's
    // ~1,000 rowids: 5 µs a rowid and term; 0.04–0.065 µs a document of each term's list):
    // `mlp` or its two related words, 1,004 lookups 12–17 ms against a pass over their
    // 133,000 documents 8–9 ms. The words' own documents are counted already; the related
    // words' are counted only when the lookups cost more than a pass over the own ones.
    if (docs) {
      const lookups = docs.length * seekCost(union) * termCount(union);
      let pass = wordDocs.reduce((a, d) => a + Math.max(d.own, d.related), 0);
      if (lookups >= pass)
        words.forEach((w, i) => {
          if (w.related && wordDocs[i].own)
            pass += memoized(store, `df:search_fts:${w.related}`, () => countFts(store, w.related!));
        });
      for (const r of lookups < pass
        ? matchRowidsSeek(store, union, docs)
        : matchRowidsIn(store, union, Array.from(docs)))
        classify(r);
    } else {
      // counted among the first window of largeAt + 1 matches: past it the total is "more
      // than" the blocks shown among them (at most totalCap); read on, a window at a time,
      // only while none of them is shown (a filter that passes few). A window is read in
      // parts, the first of totalCap + 1 matches: the count stops as soon as more than
      // totalCap are shown, which most queries reach in their first totalCap + 1 matches
      const windowSize = largeAt + 1;
      let after = Number.MIN_SAFE_INTEGER;
      let rows = first;
      let inWindow = first ? first.length : 0;
      let windowDone = first !== null;
      complete = false;
      count: for (;;) {
        if (rows === null) {
          const want = Math.min(windowSize - inWindow, inWindow ? MORE_MATCHES : totalCap + 1);
          rows = matchRowidsAfter(store, union, after, want);
          if (!inWindow && !rows.length) {
            complete = true;
            break;
          }
          inWindow += rows.length;
          windowDone = inWindow >= windowSize || rows.length < want;
        }
        for (const r of rows) {
          after = r;
          classify(r);
          if (shown.length > totalCap) break count;
        }
        rows = null;
        if (windowDone) {
          if (shown.length) break;
          inWindow = 0;
        }
      }
    }
  }
  let hiddenFailed = 0;
  let failedOnly = false;
  let matches = shown;
  if (shown.length) hiddenFailed = failed.length;
  else {
    matches = failed;
    failedOnly = failed.length > 0;
  }
  const total = complete ? matches.length : Math.min(matches.length, totalCap);
  let rowids = matches;
  const cap = opts.candidates ?? CANDIDATES;
  if (large && (!complete || matches.length > cap)) {
    // the large path's candidates: the blocks the query names whole, then the name
    // candidates (nameCandidates, each confirmed by the index), then (when fewer than the
    // cap) the counted matches in rowid order
    // the blocks a candidate may be: the counted matches when they are all known, else
    // those the filters show (`ok[r] === okValue`)
    let ok = verdict;
    let okValue = MASK_SHOWN;
    if (complete) {
      ok = new Uint8Array(cols.size);
      for (const r of matches) ok[r] = 1;
      okValue = 1;
    }
    const picked = new Set<number>();
    if (exactTerm)
      for (const r of exactList()) {
        if (picked.size >= cap) break;
        if (ok[r] === okValue) picked.add(r);
      }
    // a name holding a query word's term as a whole part holds it in the name columns
    // (they index the name's identifier parts): every name candidate is a match
    for (const r of nameCandidates(store, words, { ok, okValue, picked }, cap - picked.size)) picked.add(r);
    for (const r of matches) {
      if (picked.size >= cap) break;
      picked.add(r);
    }
    rowids = [...picked];
  } else if (matches.length > cap) {
    // the blocks the query names whole, then the blocks it matches in their name (the
    // most of their name covered first, as the score does), then (when fewer than
    // cap) blocks by the field the words match in, heaviest field first
    // the matches as a mark per rowid (a Set of 10^5 numbers per query was the largest
    // share of the garbage collector's work)
    const inMatches = new Uint8Array(cols.size);
    for (const r of matches) inMatches[r] = 1;
    const picked = new Set<number>();
    const add = (rs: Iterable<number>) => {
      for (const r of rs) {
        if (picked.size >= cap) return;
        if (inMatches[r]) picked.add(r);
      }
    };
    if (exactTerm) add(exactList());
    for (const g of FIELDS) {
      if (picked.size >= cap) break;
      // the matches in this field: its table's; for the field without one, every match
      // not picked yet (the heavier fields' matches were all picked, the cap not being
      // reached) when no word needs terms in one field (AND)
      const fieldRows =
        fieldTables && g.table
          ? matchRowids(store, union, g.table)
          : fieldTables && !union.includes(' AND ')
            ? matches
            : matchRowids(store, `{${g.columns.join(' ')}} : (${union})`);
      const inG = fieldRows.filter((r) => inMatches[r] === 1 && !picked.has(r));
      if (g === FIELDS[0] && picked.size + inG.length > cap) {
        const cov = new Map(inG.map((r) => [r, cover(r)]));
        inG.sort((a, b) => cov.get(b)! - cov.get(a)! || a - b);
      }
      add(inG);
    }
    rowids = [...picked];
  }
  const cands = new Map<number, Candidate & { per: number[] }>();
  rowids.forEach((r) => {
    cands.set(r, {
      rowid: r,
      status: cols.statusOf(r),
      rel: 0,
      bm: 0,
      every: false,
      exact: false,
      per: words.map(() => 0),
      name: cols.nameOf(r),
    });
  });
  const candIds = [...cands.keys()];
  if (large) {
    // a word the name holds matches in the name field: its best weight (1), no pass needed
    const inName = wordsInName(words);
    for (const c of cands.values())
      inName(partsOf(c.rowid)).forEach((h, wi) => {
        if (h) c.per[wi] = 1;
      });
  }
  // where each word matches among the candidates: one query per field, far cheaper than
  // an auxiliary function per row; IDF over the whole library (its counts are made inside
  // FTS5)
  const n = Math.max(1, libraryDocuments(store));
  const idf: number[] = [];
  /** The candidates among `ids` that hold `expr` in field `g`. Each caller keeps, per
   *  candidate and word, the best weight found (the fields come heaviest first) and asks
   *  only about the candidates that could gain (those below the field's weight). */
  const inField = (expr: string, g: Field, ids: readonly number[]): number[] => {
    if (!ids.length) return [];
    // the field's own table: no column filter, so its documents can be looked up by rowid
    if (fieldTables && g.table) return checkRows(store, g.table, expr, ids);
    // the field without a table (the lightest): a document holding an expression of
    // single terms (no AND, whose terms could sit in different fields; a phrase is within
    // one column) somewhere holds it in this field unless it holds it in a heavier field,
    // whose check came first and gave the candidate that field's greater weight; so "holds
    // it anywhere" (search_fts without a column filter) gives the same best weights
    if (fieldTables && !expr.includes(' AND ')) return checkRows(store, 'search_fts', expr, ids);
    // a column filter: one pass over the expression's matches (a column filter cannot be
    // looked up by rowid: FTS5 then walks the term's documents from that rowid to the next
    // one holding it in the column — measured 600 ms for 1,000 rowids of `exact : "norm"`
    // on 10^5 blocks)
    return matchRowidsIn(store, fieldExpr(expr, g), ids);
  };
  // the candidates whose weight for word wi is below `weight` (only they can gain from a
  // field of that weight: when there are none, the field's check is skipped)
  const cands0 = [...cands.values()];
  const below = (wi: number, weight: number) => cands0.filter((c) => c.per[wi] < weight).map((c) => c.rowid);
  words.forEach((w, wi) => {
    for (const g of FIELDS) {
      for (const r of inField(w.expr, g, below(wi, g.weight))) {
        const c = cands.get(r);
        if (c) c.per[wi] = Math.max(c.per[wi], g.weight);
      }
      if (!w.related) continue;
      for (const r of inField(w.related, g, below(wi, g.weight * RELATED_WEIGHT))) {
        const c = cands.get(r);
        if (c) c.per[wi] = Math.max(c.per[wi], g.weight * RELATED_WEIGHT);
      }
    }
    const df = wordDocs[wi].own || wordDocs[wi].related;
    idf.push(Math.log(1 + (n - df + 0.5) / (df + 0.5)) * (GENERIC.has(w.word) ? GENERIC_IDF : 1));
  });
  const idfSum = idf.reduce((a, b) => a + b, 0) || 1;
  // a block whose whole name is the query comes first, whatever the scores say (the
  // `exact` column holds the name's parts joined; `joined` holds letters and digits only
  // and is quoted)
  const exact = new Set(
    large || fieldTables
      ? exactList().filter((r) => cands.has(r))
      : exactExpr
        ? matchRowidsIn(store, exactExpr, candIds)
        : [],
  );
  // the words as a phrase (in query order, adjacent), per field: the best field's weight
  const phrase = new Map<number, number>();
  if (words.length > 1) {
    const p = words.map((w) => quoteTerm(w.word)).join(' + ');
    // a field's check is made only for the candidates that could gain from it: the phrase
    // in a field holds every word there, and a word found in a field has at least that
    // field's weight in c.per (each word's field checks ran, heaviest first, for every
    // candidate below the field's weight), so a candidate one of whose words weighs less
    // than the field cannot hold the phrase there
    const couldGain = (g: Field) =>
      cands0
        .filter((c) => (phrase.get(c.rowid) ?? 0) < g.weight && c.per.every((x) => x >= g.weight))
        .map((c) => c.rowid);
    for (const g of FIELDS) {
      const ids = opts.phraseChecks === 'every' ? candIds : couldGain(g);
      for (const r of inField(p, g, ids)) phrase.set(r, Math.max(phrase.get(r) ?? 0, g.weight));
    }
  }
  for (const c of cands.values()) {
    const matched = c.per.reduce((a, p, i) => a + p * idf[i], 0) / idfSum;
    const phrased = matched + (1 - matched) * PHRASE * (phrase.get(c.rowid) ?? 0);
    c.rel = (1 - NAME_SHARE) * phrased + NAME_SHARE * cover(c.rowid);
    c.every = c.per.every((p) => p > 0);
    c.exact = exact.has(c.rowid);
  }
  const all = [...cands.values()];
  let top = 0;
  for (const c of all) top = Math.max(top, c.rel);
  const tier = (c: Candidate) => (c.exact ? 0 : c.rel >= STRONG * top ? 1 : 2);
  const eps = 1e-9;
  const byScore = (a: Candidate, b: Candidate) =>
    tier(a) - tier(b) ||
    (tier(a) < 2 ? Number(b.status === 'validated') - Number(a.status === 'validated') : 0) ||
    (Math.abs(b.rel - a.rel) > eps ? b.rel - a.rel : 0);
  all.sort((a, b) => byScore(a, b) || a.rowid - b.rowid);
  // BM25 orders blocks of equal score; it is computed only for the blocks up to the last
  // one that ties with the page's last entry (an auxiliary function over every match
  // was most of a query's time)
  let last = Math.min(all.length, offset + limit) - 1;
  if (opts.group) {
    const seen = new Set<string>();
    last = all.length - 1;
    for (let i = 0; i < all.length; i++) {
      seen.add(all[i].name);
      if (seen.size === offset + limit) {
        last = i;
        break;
      }
    }
  }
  // BM25 decides only between blocks of equal score: a head in which no two neighbours tie
  // (one block: a class name the query names whole) is in its final order already, and
  // bm25() counts each phrase's documents whatever rows it ranks (a name of the synthetic
  // library holds the part `c` of 10^6 names: 65–110 ms for one row at 10^6)
  let headTies = opts.headBm25 === 'always';
  if (last >= 0 && !large) {
    for (let i = 0; i < Math.min(all.length - 1, last + 1) && !headTies; i++)
      headTies = byScore(all[i], all[i + 1]) === 0;
  }
  if (last >= 0 && !large && headTies) {
    let end = last;
    while (end + 1 < all.length && byScore(all[end + 1], all[last]) === 0) end++;
    const head = all.slice(0, end + 1);
    const bm = rankOf(
      store,
      union,
      RANK,
      head.map((c) => c.rowid),
    );
    for (const c of head) c.bm = bm.get(c.rowid) ?? 0;
    head.sort((a, b) => byScore(a, b) || b.bm - a.bm || a.rowid - b.rowid);
    all.splice(0, head.length, ...head);
  }
  let page: Candidate[];
  let totalGroups: number | undefined;
  if (opts.group) {
    // entries by class name in rank order; the page is `limit` entries after `offset`
    const byName = new Map<string, Candidate[]>();
    for (const c of all) byName.set(c.name, [...(byName.get(c.name) ?? []), c]);
    totalGroups = byName.size;
    page = [...byName.values()].slice(offset, offset + limit).flat();
  } else page = all.slice(offset, offset + limit);
  const docs = docsByRowid(
    store,
    page.map((c) => c.rowid),
  );
  const hits = page.map((c) => hitOf({ doc: docs.get(c.rowid)!, score: c.rel }));
  const mode: SearchResult['mode'] = all.length && !all[0].every && words.length > 1 ? 'any' : 'all';
  return {
    query,
    mode,
    total,
    capped: !complete || undefined,
    ranked: all.length,
    hits,
    groups: groupsOf(hits),
    totalGroups,
    hiddenFailed,
    failedOnly,
    ms: performance.now() - t0,
  };
}

/** The stored search document of a block (after sync). */
export function getDoc(store: IndexStore, id: string): SearchDoc | null {
  return storedDoc(store, id);
}

/** Every stored document, by id. */
export function listDocs(store: IndexStore): SearchDoc[] {
  return storedDocs(store);
}

/** The number of documents in the library (IDF's N), kept until the store changes. */
function libraryDocuments(store: IndexStore): number {
  return memoized(store, 'documents', () =>
    filterColumns(store).count({ repos: [], categories: [], validated: false, all: true }),
  );
}

/**
 * Build what every query of this store state reads before its first query needs it: the
 * filter columns, the class names' index, the number of documents and the facets (kept
 * until the store changes). A process that answers queries as they come (the catalog)
 * calls it once at its start, so its first page does not pay for them (at 10^6 blocks:
 * seconds, one read of every document's filter row and one split of every class name).
 * Returns the commonest class-name part (null without names): a query of it at the start
 * compiles the rest of a query's path (startServer renders one page of it).
 */
export function prepareSearch(store: IndexStore): string | null {
  // the columns, and the default filter's mask (a query without filters reads it)
  const shown = filterColumns(store).mask(docFilters({}));
  const { lists } = nameIndex(store);
  // the large path's name merge run on the commonest name part, twice: the first queries
  // then run its compiled code. Compiled during a query, it was most of the first catalog
  // pages' CPU (at 10^6 blocks ~30 ms a page: the merge of 10^5 names interpreted until
  // V8 compiles it, ~25 ms of compiler CPU a compilation, and compiled again after each
  // deoptimization)
  let common = '';
  let most = 0;
  for (const [p, l] of lists)
    if (l.length > most) {
      common = p;
      most = l.length;
    }
  if (common) {
    const words = queryWords(common, { isWord: () => true });
    for (let i = 0; i < 2; i++)
      nameCandidates(store, words, { ok: shown, okValue: MASK_SHOWN, picked: new Set() }, CANDIDATES);
  }
  libraryDocuments(store);
  facets(store);
  return common || null;
}

/** Distinct values of the filter columns, for the catalog's filter menus. */
export function facets(store: IndexStore): { repos: string[]; categories: string[]; statuses: string[] } {
  return memoized(store, 'facets', () => docFacets(store));
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
    const repoOf = (id: string) =>
      store.getBlock(id)?.repo ?? (id.includes(':') ? id.slice(0, id.lastIndexOf(':')) : null);
    ids = ids.filter((id) => repoOf(id) === repo);
  }
  if (ids.length > 1) {
    throw new UsageError(
      `${JSON.stringify(idOrName)} is ambiguous: ${ids.length} library blocks answer to it; give one of\n${ids.map((i) => `  ${i}`).join('\n')}`,
    );
  }
  if (!ids.length) {
    if (!all.length)
      throw new NnragError(
        `no library block ${JSON.stringify(idOrName)}: the library is empty (run \`nnrag extract\` or \`nnrag demo\` first)`,
        'unknown-block',
      );
    const near = suggest(
      name.split('.').pop()!,
      all.map((i) => i.slice(i.lastIndexOf('.') + 1)),
    );
    throw new NnragError(
      `no library block ${JSON.stringify(idOrName)}${near.length ? `; did you mean ${near.join(', ')}?` : ''}`,
      'unknown-block',
    );
  }
  return ids[0];
}

export { listExtractions };
