// The indexing run: list each repository's Python files, find each file's content
// (git blob id) through a stat cache, parse the contents the store does not have yet
// on the worker pool, and record the repository's files, problems and the run.
//
// Incremental policy:
// - stat cache: a file whose (size, mtime) equals the stored row keeps its stored blob
//   id and is not read. Files modified within 2 s of the run ("racily clean", as git
//   calls them: a later edit could keep the same mtime) are stored with mtime -1 so
//   the next run reads them again.
// - content address: facts are keyed by blob id, so content already parsed in any
//   repository or revision is never parsed again (`missing`). `force` parses every
//   distinct content once; `skip` parses nothing and only records files. Facts of an
//   older FACTS_VERSION count as missing.
// - crash safety: facts rows are self-contained and committed batch by batch; a
//   repository's files/problems rows are replaced in one transaction at the end, and
//   only point at contents whose facts are stored. A run killed at any moment leaves
//   the previous consistent state plus some extra facts; the next run reuses those
//   facts and completes. The runs row of a killed run keeps finished = NULL.
// - work split: the main thread reads and hashes the stat-cache misses, so contents are
//   de-duplicated before any parsing (timm, 4.8 MB: 30-55 ms of a ~2 s cold run); the
//   workers re-read the files they parse and report the blob id they actually saw.
// - problems (reported, never fatal): files > 2 MB (`too-large`), unreadable files and
//   symlink loops (`read-error`, `symlink-loop`), undecodable bytes (`invalid-utf8`,
//   see source.ts), binder failures, syntax errors (`syntax-error`, file and line; the
//   file is still indexed as far as tree-sitter's error recovery allows).
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { FACTS_VERSION } from '../parse/types.js';
import { listPythonFiles, moduleNameFor } from '../repos/files.js';
import type { RepoCheckout } from '../repos/cache.js';
import { UsageError } from '../util/errors.js';
import { ParsePool } from './pool.js';
import type { ParseItem, ParseOutcome } from './pool.js';
import { gitBlobId } from './source.js';
import type { FactsMeta, FactsRow, FileRow, IndexStore, ProblemRow, IndexedRepo } from '../store/store.js';

export type IndexMode = 'missing' | 'force' | 'skip';

/** What the indexer needs from a prepared repository (RepoCache.prepare's result). */
export type IndexCheckout = Pick<
  RepoCheckout,
  'name' | 'root' | 'revision' | 'originUrl' | 'local' | 'packageRoots'
> & {
  /** optional: restrict to these sub-paths (else IndexOptions.paths) */
  paths?: string[];
  priority?: number;
};

export interface ListedFile {
  /** POSIX path relative to the repository root */
  path: string;
  size: number;
  mtimeMs: number;
}

export interface ListProblem {
  path: string;
  kind?: string;
  problem?: string;
  message?: string;
}

export type Lister = (
  root: string,
  opts: { paths?: string[] },
) => { files: ListedFile[]; problems: ListProblem[] } | Promise<{ files: ListedFile[]; problems: ListProblem[] }>;

export type ModuleNamer = (relPath: string, packageRoots: string[]) => string | null;

export interface IndexProgress {
  phase: 'list' | 'hash' | 'parse' | 'store';
  repo?: string;
  done: number;
  total: number;
}

export interface IndexOptions {
  mode?: IndexMode;
  /** parse workers (default os.availableParallelism()) */
  workers?: number;
  /** sub-paths to index, for every repo or per repo name */
  paths?: string[] | Record<string, string[]>;
  onProgress?: (p: IndexProgress) => void;
  /** files larger than this are reported, not parsed (default 2 MB) */
  maxFileBytes?: number;
  /** an existing pool to use (not closed by indexRepos) */
  pool?: ParsePool;
  /** listing and module naming (default: src/repos) */
  list?: Lister;
  moduleName?: ModuleNamer;
}

export interface RepoIndexReport {
  name: string;
  files: number;
  bytes: number;
  parsed: number;
  reused: number;
  problems: number;
}

export interface IndexTimings {
  list: number;
  hash: number;
  parse: number;
  store: number;
  total: number;
  /** sum of per-file binder time across workers */
  parseCpu: number;
}

export interface IndexReport {
  runId: number;
  mode: IndexMode;
  workers: number;
  repos: RepoIndexReport[];
  /** files recorded in the index by this run */
  files: number;
  bytes: number;
  /** files read and hashed (stat cache misses) */
  hashed: number;
  /** distinct contents parsed in this run */
  parsed: number;
  /** files whose facts were already stored */
  reused: number;
  /** files with at least one syntax error */
  parseErrors: number;
  problems: ProblemRow[];
  timings: IndexTimings;
}

export const MAX_FILE_BYTES = 2 * 1024 * 1024;
const RACY_MS = 2000;

interface Entry {
  path: string;
  abs: string;
  module: string | null;
  size: number;
  mtimeMs: number;
  blob: string;
}

interface RepoState {
  checkout: IndexCheckout;
  entries: Entry[];
  problems: ProblemRow[];
  parsed: number;
}

/** Facts metadata needed per file: whether stored, syntax errors, content problem. */
type Meta = FactsMeta;

const now = () => performance.now();

/** Kind of a listing problem from its message (src/repos/files.ts wording). */
function listProblemKind(message: string): string {
  if (/symlink loop/i.test(message)) return 'symlink-loop';
  if (/too large/i.test(message)) return 'too-large';
  if (/broken symlink/i.test(message)) return 'broken-symlink';
  if (/leaves the repository/i.test(message)) return 'symlink-outside';
  if (/unreadable/i.test(message)) return 'read-error';
  return 'list-error';
}

function pathsFor(c: IndexCheckout, opts: IndexOptions): string[] | undefined {
  if (c.paths) return c.paths;
  if (Array.isArray(opts.paths)) return opts.paths;
  return opts.paths?.[c.name];
}

/** Index the given repositories into the store (see the policy in the header). */
export async function indexRepos(
  store: IndexStore,
  checkouts: IndexCheckout[],
  opts: IndexOptions = {},
): Promise<IndexReport> {
  const names = checkouts.map((c) => c.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) throw new UsageError(`repository ${JSON.stringify(dup)} given twice`);
  // A repository name names one folder: another folder of the same name (a second
  // `models/` checkout) must not silently replace the one indexed, whose blocks and
  // records would be lost. A stored folder that no longer exists (moved) may be replaced.
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  for (const c of checkouts) {
    const old = store.getRepo(c.name);
    if (old && existsSync(old.root) && real(old.root) !== real(c.root)) {
      throw new UsageError(
        `repository ${JSON.stringify(c.name)} is already indexed from ${old.root}; ${c.root} has the same name: ` +
          'give one of them another name (a repository config, --config) or use another store',
      );
    }
  }
  const t0 = now();
  const wallStart = Date.now();
  const mode = opts.mode ?? 'missing';
  const maxBytes = opts.maxFileBytes ?? MAX_FILE_BYTES;
  const list: Lister = opts.list ?? listPythonFiles;
  const moduleName: ModuleNamer = opts.moduleName ?? moduleNameFor;
  const progress = opts.onProgress ?? (() => {});
  const timings: IndexTimings = { list: 0, hash: 0, parse: 0, store: 0, total: 0, parseCpu: 0 };
  const runId = store.beginRun(
    mode,
    checkouts.map((c) => c.name),
  );
  const pool = opts.pool ?? new ParsePool(opts.workers);
  const ownPool = !opts.pool;

  const metaCache = new Map<string, Meta | null>();
  const meta = (blob: string): Meta | null => {
    let m = metaCache.get(blob);
    if (m === undefined) {
      m = store.factsMeta(blob);
      metaCache.set(blob, m);
    }
    return m;
  };
  const hasCurrent = (blob: string) => meta(blob)?.version === FACTS_VERSION;

  const states: RepoState[] = [];
  /** contents to parse this run: blob → one file that has it */
  const toParse = new Map<string, ParseItem & { size: number }>();
  let hashed = 0;

  try {
    // A first index of these repositories (or a forced one) parses everything: start
    // tree-sitter in the workers now, while the main thread lists and hashes, instead
    // of after the first files to parse are found.
    if (mode === 'force' || (mode !== 'skip' && checkouts.every((c) => !store.hasFiles(c.name)))) pool.warm();
    // ---------------------------------------------------------------- list + hash
    for (const c of checkouts) {
      const tl = now();
      const listing = await list(c.root, { paths: pathsFor(c, opts) });
      timings.list += now() - tl;
      progress({ phase: 'list', repo: c.name, done: listing.files.length, total: listing.files.length });

      const th = now();
      const st: RepoState = { checkout: c, entries: [], problems: [], parsed: 0 };
      states.push(st);
      for (const p of listing.problems) {
        const message = p.message ?? p.problem ?? 'problem';
        const kind = p.kind ?? listProblemKind(message);
        st.problems.push({ repo: c.name, path: p.path, kind, message });
      }
      const stored = new Map(store.listFiles(c.name).map((f) => [f.path, f]));
      let done = 0;
      for (const f of listing.files) {
        done++;
        if (f.size > maxBytes) {
          st.problems.push({
            repo: c.name,
            path: f.path,
            kind: 'too-large',
            message: `${f.size} bytes > ${maxBytes}: not parsed`,
          });
          continue;
        }
        const abs = path.join(c.root, f.path);
        const prev = stored.get(f.path);
        let blob: string;
        let size = f.size;
        let mtimeMs = f.mtimeMs;
        if (prev && prev.mtimeMs >= 0 && prev.size === f.size && prev.mtimeMs === f.mtimeMs) {
          blob = prev.blob;
        } else {
          let buf: Buffer;
          try {
            buf = readFileSync(abs);
          } catch (e) {
            const err = e as NodeJS.ErrnoException;
            st.problems.push({
              repo: c.name,
              path: f.path,
              kind: err.code === 'ELOOP' ? 'symlink-loop' : 'read-error',
              message: err.message,
            });
            continue;
          }
          hashed++;
          blob = gitBlobId(buf);
          if (buf.length !== size) {
            size = buf.length;
            mtimeMs = -1; // changed while listing: read again next time
          }
          if (size > maxBytes) {
            st.problems.push({
              repo: c.name,
              path: f.path,
              kind: 'too-large',
              message: `${size} bytes > ${maxBytes}: not parsed`,
            });
            continue;
          }
        }
        if (mtimeMs >= wallStart - RACY_MS) mtimeMs = -1;
        st.entries.push({ path: f.path, abs, module: moduleName(f.path, c.packageRoots), size, mtimeMs, blob });
        if (mode !== 'skip' && !toParse.has(blob) && (mode === 'force' || !hasCurrent(blob))) {
          toParse.set(blob, { path: abs, blob, size });
          // start tree-sitter in the workers while we keep hashing: one for a small
          // update, all of them once there is enough to parse
          if (toParse.size === 1) pool.warm(1);
          else if (toParse.size === 8) pool.warm();
        }
        if (done % 256 === 0) progress({ phase: 'hash', repo: c.name, done, total: listing.files.length });
      }
      timings.hash += now() - th;
    }

    // ---------------------------------------------------------------- parse
    const parsedBlobs = new Set<string>();
    if (toParse.size) {
      const tp = now();
      let storeMs = 0;
      // Two rounds at most: the second parses contents whose file changed between
      // hashing and parsing (another file with the old content still needs them).
      for (let round = 0; round < 2 && toParse.size; round++) {
        const items = [...toParse.values()].sort((a, b) => b.size - a.size);
        toParse.clear();
        const total = items.length;
        let done = 0;
        const batches = makeBatches(items, pool.size);
        const byPath = new Map<string, Entry[]>();
        for (const st of states)
          for (const e of st.entries) {
            const l = byPath.get(e.abs);
            if (l) l.push(e);
            else byPath.set(e.abs, [e]);
          }
        await Promise.all(
          batches.map(async (batch) => {
            const outcomes = await pool.parse(batch);
            const rows: FactsRow[] = [];
            for (const o of outcomes) {
              timings.parseCpu += o.parseMs;
              if (o.readFailed || !o.blob) continue;
              const row = factsRow(o);
              rows.push(row);
              parsedBlobs.add(o.blob);
              metaCache.set(o.blob, {
                version: row.version,
                errors: row.errors,
                firstError: firstErrorOf(o),
                problem: row.problem,
                hasData: row.json !== null,
              });
              const expected = batch.find((b) => b.path === o.path)?.blob;
              if (expected && expected !== o.blob) {
                // The file changed after we hashed it: record what was parsed.
                for (const e of byPath.get(o.path) ?? []) {
                  e.blob = o.blob;
                  e.mtimeMs = -1;
                  e.size = o.size;
                }
              }
            }
            const ts = now();
            store.putFacts(rows);
            storeMs += now() - ts;
            done += outcomes.length;
            progress({ phase: 'parse', done, total });
          }),
        );
        // Contents still without current facts (vanished or changed files) go again.
        for (const st of states)
          for (const e of st.entries) {
            if (!hasCurrent(e.blob) && !toParse.has(e.blob) && !parsedBlobs.has(e.blob) && round === 0) {
              toParse.set(e.blob, { path: e.abs, blob: e.blob, size: e.size });
            }
          }
      }
      timings.store += storeMs;
      timings.parse += now() - tp - storeMs;
    }

    // ---------------------------------------------------------------- store files
    const ts = now();
    const repoReports: RepoIndexReport[] = [];
    const allProblems: ProblemRow[] = [];
    let files = 0,
      bytes = 0,
      reused = 0,
      parseErrors = 0;
    const counted = new Set<string>();
    for (const st of states) {
      const c = st.checkout;
      const rows: FileRow[] = [];
      let rParsed = 0,
        rReused = 0,
        rBytes = 0;
      for (const e of st.entries) {
        const m = meta(e.blob);
        if (mode !== 'skip' && m?.version !== FACTS_VERSION) {
          st.problems.push({
            repo: c.name,
            path: e.path,
            kind: 'read-error',
            message: 'file could not be read for parsing',
          });
          continue;
        }
        rows.push({ repo: c.name, path: e.path, module: e.module, blob: e.blob, size: e.size, mtimeMs: e.mtimeMs });
        rBytes += e.size;
        if (parsedBlobs.has(e.blob) && !counted.has(e.blob)) {
          counted.add(e.blob);
          rParsed++;
        } else rReused++;
        if (m) {
          if (m.problem) {
            const p = JSON.parse(m.problem) as { kind: string; message: string };
            st.problems.push({ repo: c.name, path: e.path, kind: p.kind, message: p.message });
          }
          if (m.errors > 0) {
            parseErrors++;
            st.problems.push({
              repo: c.name,
              path: e.path,
              kind: 'syntax-error',
              message: (m.firstError ?? 'syntax error') + (m.errors > 1 ? ` (+${m.errors - 1} more)` : ''),
            });
          }
        }
      }
      const repoRow: IndexedRepo = {
        name: c.name,
        url: c.originUrl ?? null,
        root: c.root,
        revision: c.revision ?? null,
        local: !!c.local,
        priority: c.priority ?? 0,
        packageRoots: c.packageRoots,
        indexedAt: new Date().toISOString(),
      };
      st.problems.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.kind.localeCompare(b.kind)));
      store.replaceRepo(repoRow, rows, st.problems);
      progress({ phase: 'store', repo: c.name, done: rows.length, total: rows.length });
      files += rows.length;
      bytes += rBytes;
      reused += rReused;
      allProblems.push(...st.problems);
      repoReports.push({
        name: c.name,
        files: rows.length,
        bytes: rBytes,
        parsed: rParsed,
        reused: rReused,
        problems: st.problems.length,
      });
    }
    timings.store += now() - ts;
    timings.total = now() - t0;
    for (const k of Object.keys(timings) as (keyof IndexTimings)[]) timings[k] = Math.round(timings[k] * 10) / 10;

    const report: IndexReport = {
      runId,
      mode,
      workers: pool.size,
      repos: repoReports,
      files,
      bytes,
      hashed,
      parsed: parsedBlobs.size,
      reused,
      parseErrors,
      problems: allProblems,
      timings,
    };
    const { problems: _p, timings: _t, runId: _r, ...summary } = report;
    store.finishRun(runId, { ...summary, problems: allProblems.length }, { ...timings });
    return report;
  } finally {
    if (ownPool) await pool.close();
  }
}

/** Split parse items (largest first) into batches: small enough that the workers
 *  finish together, large enough to amortise messaging. */
function makeBatches<T extends { size: number }>(items: T[], workers: number): T[][] {
  const total = items.reduce((s, i) => s + i.size, 0);
  const target = Math.min(256 * 1024, Math.max(16 * 1024, Math.ceil(total / (workers * 16))));
  const batches: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const it of items) {
    cur.push(it);
    bytes += it.size;
    if (bytes >= target || cur.length >= 64) {
      batches.push(cur);
      cur = [];
      bytes = 0;
    }
  }
  if (cur.length) batches.push(cur);
  return batches;
}

function firstErrorOf(o: ParseOutcome): string | null {
  return o.firstError ?? null;
}

export function factsRow(o: ParseOutcome): FactsRow {
  return {
    blob: o.blob,
    version: FACTS_VERSION,
    json: o.json,
    size: o.size,
    lines: o.lines,
    errors: o.errors,
    parseMs: Math.round(o.parseMs * 100) / 100,
    encoding: o.encoding,
    problem: o.problem ? JSON.stringify(o.problem) : null,
    firstError: firstErrorOf(o),
  };
}

export { storeStats as stats, type StoreStats } from '../store/store.js';
