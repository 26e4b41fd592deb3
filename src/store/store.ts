// IndexStore: the SQLite database (better-sqlite3, WAL) that holds everything nnrag
// knows about the indexed repositories: repos, files (with a stat cache), per-file parse
// facts keyed by git blob id (content address), problems, indexing runs, discovered
// blocks, the modules read on demand outside the configured paths (support_files) and
// a generic key/value table.
//
// Robustness rules (docs/ARCHITECTURE.md "Storage"):
// - WAL + synchronous=NORMAL: a crash loses at most the last transactions, never
//   consistency. Every write goes through an IMMEDIATE transaction so two processes
//   serialise on the write lock (busy_timeout) instead of failing with SQLITE_BUSY
//   on a read→write lock upgrade.
// - The schema is versioned with `PRAGMA user_version` and the one static ordered list
//   of migrations in migrations.ts, each applied in its own transaction on every open.
//
// This file is the store's core (open, migrate, transactions) and the tables of the
// index (repos, files, facts, problems, runs, blocks, support files, kv). The other table
// groups have their own modules next to it (records.ts, specs.ts, search.ts, kv.ts);
// nothing outside src/store/ writes SQL (test/store/layers.test.ts checks it).
import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { FileFacts } from '../parse/types.js';
import { FACTS_VERSION } from '../parse/types.js';
import { NnragError } from '../util/errors.js';
import { ensureDir } from '../util/fs.js';
import type { KvKey } from './kv.js';
import { STORE_FILE, storeExists } from './location.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS, type DB, type Migration } from './migrations.js';

export type { DB, Migration };

/** The schema version this build of nnrag knows. */
export function latestSchemaVersion(): number {
  return LATEST_SCHEMA_VERSION;
}

/** A repository as the index holds it (the `repos` table): where its checkout is, the
 *  revision indexed, its priority and package roots. What the configuration asks for is a
 *  `ConfiguredRepo` (config/repos.ts). */
export interface IndexedRepo {
  name: string;
  url: string | null;
  root: string;
  revision: string | null;
  local: boolean;
  priority: number;
  packageRoots: string[];
  indexedAt: string | null;
}

/** A repository's sys.path entries relative to its root (its package roots; the root
 *  itself, '', when none were detected or configured). */
export function sysPathRoots(r: Pick<IndexedRepo, 'packageRoots'>): string[] {
  return r.packageRoots.length ? r.packageRoots : [''];
}

export interface FileRow {
  repo: string;
  path: string;
  module: string | null;
  blob: string;
  size: number;
  /** file mtime, or -1 when the stat cache must not be trusted (racily clean file) */
  mtimeMs: number;
}

export interface ProblemRow {
  repo: string;
  path: string;
  /** 'too-large' | 'invalid-utf8' | 'binder-error' | 'read-error' | 'symlink-loop' | ... */
  kind: string;
  message: string;
}

/** A stored facts row; `json` is `JSON.stringify(FileFacts)` or null when the binder failed. */
export interface FactsRow {
  blob: string;
  version: number;
  json: string | null;
  size: number;
  lines: number;
  errors: number;
  /** 'line L:C: message' of the first syntax error */
  firstError: string | null;
  parseMs: number;
  /** the encoding the text was decoded with ('utf-8', or a PEP 263 codec) */
  encoding: string | null;
  /** a content-level problem (undecodable bytes, binder failure) that every file with
   *  this content reports */
  problem: string | null;
}

/** A facts row as indexing checks it (`hasData`: the binder succeeded on this content). */
export interface FactsMeta {
  version: number;
  errors: number;
  firstError: string | null;
  problem: string | null;
  hasData: boolean;
}

export interface BlockRow {
  id: string;
  name: string;
  module: string;
  repo: string;
  path: string;
  line: number;
  bases: string[];
  /** anything else discovery wants to keep (JSON-serialisable) */
  data?: unknown;
}

export interface RunRow {
  id: number;
  started: string;
  finished: string | null;
  mode: string;
  repos: string[];
  stats: Record<string, unknown> | null;
  timings: Record<string, number> | null;
}

/** The repositories and files of the whole index, as stored (resolve/load.ts builds the
 *  resolver's `Corpus` from them). */
export interface IndexContents {
  repos: IndexedRepo[];
  files: { repo: string; path: string; module: string | null; blob: string }[];
}

const BUSY_TIMEOUT_MS = 10_000;

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function isBusy(e: unknown): boolean {
  const code = (e as { code?: string }).code ?? '';
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
}

export class IndexStore {
  readonly file: string;
  private readonly stmts = new Map<string, Database.Statement>();

  private constructor(
    readonly db: DB,
    readonly dir: string,
  ) {
    this.file = db.name;
  }

  /** Does `dir` hold a store (its database file)? */
  static exists(dir: string): boolean {
    return storeExists(dir);
  }

  /** Open (creating and migrating if needed) the store in `dir` (`--store DIR`,
   *  default ./.nnrag): the database is `<dir>/index.sqlite`. With `create: false`
   *  (read-only commands) a folder that holds no store is refused instead of becoming an
   *  empty store. */
  static open(dir = '.nnrag', opts: { create?: boolean } = {}): IndexStore {
    const file = path.join(dir, STORE_FILE);
    if (opts.create === false && !existsSync(file)) {
      throw new NnragError(
        `no nnrag store in ${path.resolve(dir)} (index repositories there first with \`nnrag index --store ${dir}\`)`,
        'no-store',
      );
    }
    let db: DB;
    try {
      ensureDir(dir, 'store folder');
      db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
    } catch (e) {
      throw new NnragError(`cannot open index store ${file}: ${(e as Error).message}`, 'store');
    }
    try {
      // Switching to WAL needs an exclusive lock for a moment; with another process
      // inside a transaction this can report busy without calling the busy handler.
      retryBusy(() => db.pragma('journal_mode = WAL'));
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = OFF');
      migrate(db);
    } catch (e) {
      db.close();
      if (e instanceof NnragError) throw e;
      throw new NnragError(`cannot open index store ${file}: ${(e as Error).message}`, 'store');
    }
    return new IndexStore(db, dir);
  }

  /** Settings for a bulk load by this connection (a library of 10^6 blocks built at once):
   *  no sync to disk at each commit (a crash may lose the last commits, never corrupt the
   *  file in WAL mode) and a page cache of `cacheMb`, so the indexes being filled stay in
   *  memory. For this handle only; the next open has the defaults. */
  bulkLoad(cacheMb = 1024): void {
    this.db.pragma('synchronous = OFF');
    this.db.pragma(`cache_size = -${cacheMb * 1024}`);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** Highest applied migration version. */
  get schemaVersion(): number {
    return this.db.pragma('user_version', { simple: true }) as number;
  }

  /** Versions of the applied migrations. */
  appliedMigrations(): number[] {
    return this.stmt('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
  }

  /** Cached prepared statement. */
  stmt(sql: string): Database.Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  /** Run `fn` in an IMMEDIATE transaction (takes the write lock up front, so a second
   *  process waits on busy_timeout rather than failing on a lock upgrade). */
  write<T>(fn: () => T): T {
    return retryBusy(() => this.db.transaction(fn).immediate());
  }

  // ---------------------------------------------------------------- facts

  /** Stored facts for this content and facts version (a binder failure counts as
   *  stored: it is not retried until FACTS_VERSION changes or mode is force). */
  hasFacts(blob: string, version = FACTS_VERSION): boolean {
    const v = this.stmt('SELECT version FROM facts WHERE blob = ?').pluck().get(blob) as number | undefined;
    return v === version;
  }

  /** What indexing needs to know of a stored facts row (one cached statement: it runs
   *  once per file of an index run). */
  factsMeta(blob: string): FactsMeta | null {
    return (
      (this.stmt(
        'SELECT version, errors, first_error AS firstError, problem, data IS NOT NULL AS hasData FROM facts WHERE blob = ?',
      ).get(blob) as FactsMeta | undefined) ?? null
    );
  }

  /** The content (blob id) of an indexed file of a repository. */
  indexedBlob(repo: string, file: string): string | null {
    return (
      (this.stmt('SELECT blob FROM files WHERE repo = ? AND path = ?').pluck().get(repo, file) as string | undefined) ??
      null
    );
  }

  /** Counters that change whenever the database changed: another connection's commits
   *  (`PRAGMA data_version`) and this connection's own writes (`total_changes()`); both O(1). */
  changeCounters(): { dataVersion: number; ownChanges: number } {
    return {
      dataVersion: this.db.pragma('data_version', { simple: true }) as number,
      ownChanges: this.stmt('SELECT total_changes()').pluck().get() as number,
    };
  }

  /** The facts row's metadata (without the JSON). */
  factsInfo(blob: string): Omit<FactsRow, 'json'> | null {
    const r = this.stmt(
      'SELECT blob, version, size, lines, errors, first_error AS firstError, parse_ms AS parseMs, encoding, problem FROM facts WHERE blob = ?',
    ).get(blob) as Omit<FactsRow, 'json'> | undefined;
    return r ?? null;
  }

  getFacts(blob: string): FileFacts | null {
    const s = this.stmt('SELECT data FROM facts WHERE blob = ?').pluck().get(blob) as string | null | undefined;
    return s ? (JSON.parse(s) as FileFacts) : null;
  }

  /** Insert or replace facts rows, all in one transaction. */
  putFacts(rows: FactsRow[]): void {
    if (!rows.length) return;
    const ins = this.stmt(
      `INSERT OR REPLACE INTO facts(blob, version, data, size, lines, errors, first_error, parse_ms, encoding, problem)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.write(() => {
      for (const r of rows) {
        ins.run(r.blob, r.version, r.json, r.size, r.lines, r.errors, r.firstError, r.parseMs, r.encoding, r.problem);
      }
    });
  }

  /** Facts of every content some file refers to, parsed, keyed by blob id.
   *  Read by the resolver for every extraction: one query, plain JSON.parse per row
   *  (measured on timm in bench/index.ts). */
  loadAllFacts(): Map<string, FileFacts> {
    const out = new Map<string, FileFacts>();
    const rows = this.stmt(`SELECT blob, data FROM facts WHERE data IS NOT NULL AND blob IN (SELECT blob FROM files)`)
      .raw()
      .all() as [string, string][];
    for (const [blob, data] of rows) out.set(blob, JSON.parse(data) as FileFacts);
    return out;
  }

  /** The JSON text of every stored facts row (benchmarks compare decoders on it). */
  allFactsTexts(): string[] {
    return this.stmt('SELECT data FROM facts WHERE data IS NOT NULL').pluck().all() as string[];
  }

  /** Like loadAllFacts, but each file's JSON is parsed on first use (for callers that
   *  touch only part of the corpus; JSON.parse is ~80% of loadAllFacts on timm). */
  loadFactsLazy(): LazyFacts {
    const rows = this.stmt(`SELECT blob, data FROM facts WHERE data IS NOT NULL AND blob IN (SELECT blob FROM files)`)
      .raw()
      .all() as [string, string][];
    return new LazyFacts(new Map(rows));
  }

  /** Delete facts no file refers to; returns how many rows went. Not to be run while
   *  another process indexes: the facts a running index stores are unreferenced until
   *  its files are written at the end of the run. */
  gc(): number {
    return this.write(
      () =>
        this.stmt(
          'DELETE FROM facts WHERE blob NOT IN (SELECT blob FROM files) AND blob NOT IN (SELECT blob FROM support_files)',
        ).run().changes,
    );
  }

  /** Record a module read on demand outside the repository's configured paths. */
  putSupportFile(repo: string, path: string, module: string, blob: string): void {
    this.write(() =>
      this.stmt('INSERT OR REPLACE INTO support_files(repo, path, module, blob) VALUES (?, ?, ?, ?)').run(
        repo,
        path,
        module,
        blob,
      ),
    );
  }

  /** Modules read on demand, per repository. */
  listSupportFiles(repo?: string): { repo: string; path: string; module: string; blob: string }[] {
    const sql =
      'SELECT repo, path, module, blob FROM support_files' +
      (repo === undefined ? ' ORDER BY repo, path' : ' WHERE repo = ? ORDER BY path');
    const s = this.stmt(sql);
    return (repo === undefined ? s.all() : s.all(repo)) as {
      repo: string;
      path: string;
      module: string;
      blob: string;
    }[];
  }

  // ---------------------------------------------------------------- repos & files

  listRepos(): IndexedRepo[] {
    const rows = this.stmt('SELECT * FROM repos ORDER BY priority DESC, name').all() as Record<string, unknown>[];
    return rows.map(repoFromDb);
  }

  getRepo(name: string): IndexedRepo | null {
    const r = this.stmt('SELECT * FROM repos WHERE name = ?').get(name) as Record<string, unknown> | undefined;
    return r ? repoFromDb(r) : null;
  }

  /** Does the store record any file of this repository? */
  hasFiles(repo: string): boolean {
    return this.stmt('SELECT 1 FROM files WHERE repo = ? LIMIT 1').get(repo) !== undefined;
  }

  listFiles(repo?: string): FileRow[] {
    const sql =
      'SELECT repo, path, module, blob, size, mtime_ms AS mtimeMs FROM files' +
      (repo === undefined ? ' ORDER BY repo, path' : ' WHERE repo = ? ORDER BY path');
    const s = this.stmt(sql);
    return (repo === undefined ? s.all() : s.all(repo)) as FileRow[];
  }

  /** Replace what the store records for one repository (its row, its files, its
   *  problems) in one transaction: readers see the old or the new state, never a mix. */
  replaceRepo(repo: IndexedRepo, files: FileRow[], problems: ProblemRow[]): void {
    const upRepo = this.stmt(
      `INSERT OR REPLACE INTO repos(name, url, root, revision, local, priority, package_roots, indexed_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const delFiles = this.stmt('DELETE FROM files WHERE repo = ?');
    const insFile = this.stmt(
      'INSERT OR REPLACE INTO files(repo, path, module, blob, size, mtime_ms) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const delProblems = this.stmt('DELETE FROM problems WHERE repo = ?');
    // modules read on demand belong to the previous state of the repository
    const delSupport = this.stmt('DELETE FROM support_files WHERE repo = ?');
    const insProblem = this.stmt('INSERT INTO problems(repo, path, kind, message) VALUES (?, ?, ?, ?)');
    const sig = (rows: { path: string; module: string | null; blob: string }[]) =>
      rows
        .map((f) => `${f.path}\0${f.module ?? ''}\0${f.blob}`)
        .sort()
        .join('\n');
    this.write(() => {
      const old = this.stmt('SELECT path, module, blob FROM files WHERE repo = ?').all(repo.name) as {
        path: string;
        module: string | null;
        blob: string;
      }[];
      const oldRepo = this.getRepo(repo.name);
      // discovered blocks follow the index: any change of files, contents, module
      // names or package roots forgets them all (a base class may live in another
      // repository), and the next listing discovers again
      if (
        sig(old) !== sig(files) ||
        JSON.stringify(oldRepo?.packageRoots ?? null) !== JSON.stringify(repo.packageRoots) ||
        oldRepo?.root !== repo.root
      ) {
        this.stmt('DELETE FROM blocks').run();
      }
      upRepo.run(
        repo.name,
        repo.url,
        repo.root,
        repo.revision,
        repo.local ? 1 : 0,
        repo.priority,
        JSON.stringify(repo.packageRoots),
        repo.indexedAt,
      );
      delFiles.run(repo.name);
      for (const f of files) insFile.run(repo.name, f.path, f.module, f.blob, f.size, f.mtimeMs);
      delProblems.run(repo.name);
      delSupport.run(repo.name);
      for (const p of problems) insProblem.run(repo.name, p.path, p.kind, p.message);
    });
  }

  /** Forget a repository (its files, support files, problems, and every discovered block,
   *  since another repository's classes may have had their bases there; facts stay until gc()). */
  removeRepo(name: string): void {
    this.write(() => {
      for (const t of ['files', 'problems', 'support_files']) this.stmt(`DELETE FROM ${t} WHERE repo = ?`).run(name);
      this.stmt('DELETE FROM blocks').run();
      this.stmt('DELETE FROM repos WHERE name = ?').run(name);
    });
  }

  listProblems(repo?: string): ProblemRow[] {
    const sql =
      'SELECT repo, path, kind, message FROM problems' +
      (repo === undefined ? '' : ' WHERE repo = ?') +
      ' ORDER BY repo, path, kind';
    const s = this.stmt(sql);
    return (repo === undefined ? s.all() : s.all(repo)) as ProblemRow[];
  }

  /** Repos and files (with module names and blob ids) of the whole index. */
  indexContents(): IndexContents {
    return {
      repos: this.listRepos(),
      files: this.stmt(
        'SELECT repo, path, module, blob FROM files ORDER BY repo, path',
      ).all() as IndexContents['files'],
    };
  }

  // ---------------------------------------------------------------- blocks

  /** Replace the discovered blocks of one repository. */
  replaceBlocks(repo: string, rows: BlockRow[]): void {
    const ins = this.stmt(
      'INSERT OR REPLACE INTO blocks(id, name, module, repo, path, line, bases, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.write(() => {
      this.stmt('DELETE FROM blocks WHERE repo = ?').run(repo);
      for (const b of rows) {
        ins.run(
          b.id,
          b.name,
          b.module,
          repo,
          b.path,
          b.line,
          JSON.stringify(b.bases),
          b.data === undefined ? null : JSON.stringify(b.data),
        );
      }
    });
  }

  /** A discovered block by id. */
  getBlock(id: string): BlockRow | null {
    const r = this.stmt('SELECT * FROM blocks WHERE id = ?').get(id) as Record<string, unknown> | undefined;
    return r ? blockFromDb(r) : null;
  }

  listBlocks(repo?: string): BlockRow[] {
    const sql = 'SELECT * FROM blocks' + (repo === undefined ? '' : ' WHERE repo = ?') + ' ORDER BY repo, module, line';
    const s = this.stmt(sql);
    const rows = (repo === undefined ? s.all() : s.all(repo)) as Record<string, unknown>[];
    return rows.map(blockFromDb);
  }

  // ---------------------------------------------------------------- runs

  /** Record the start of a run (keeps the last 1000 runs). */
  beginRun(mode: string, repos: string[]): number {
    return this.write(() => {
      const id = Number(
        this.stmt('INSERT INTO runs(started, mode, repos) VALUES (?, ?, ?)').run(
          new Date().toISOString(),
          mode,
          JSON.stringify(repos),
        ).lastInsertRowid,
      );
      this.stmt('DELETE FROM runs WHERE id <= ?').run(id - 1000);
      return id;
    });
  }

  finishRun(id: number, stats: object, timings: Record<string, number>): void {
    this.write(() =>
      this.stmt('UPDATE runs SET finished = ?, stats = ?, timings = ? WHERE id = ?').run(
        new Date().toISOString(),
        JSON.stringify(stats),
        JSON.stringify(timings),
        id,
      ),
    );
  }

  /** The last finished run (interrupted runs have finished = NULL and are skipped). */
  lastRun(): RunRow | null {
    const r = this.stmt('SELECT * FROM runs WHERE finished IS NOT NULL ORDER BY id DESC LIMIT 1').get() as
      | Record<string, unknown>
      | undefined;
    if (!r) return null;
    return {
      id: r.id as number,
      started: r.started as string,
      finished: r.finished as string | null,
      mode: r.mode as string,
      repos: JSON.parse(r.repos as string) as string[],
      stats: r.stats ? JSON.parse(r.stats as string) : null,
      timings: r.timings ? JSON.parse(r.timings as string) : null,
    };
  }

  // ---------------------------------------------------------------- kv

  getKV(key: KvKey): string | null {
    return (this.stmt('SELECT value FROM kv WHERE key = ?').pluck().get(key) as string | undefined) ?? null;
  }

  setKV(key: KvKey, value: string | null): void {
    this.write(() => {
      if (value === null) this.stmt('DELETE FROM kv WHERE key = ?').run(key);
      else this.stmt('INSERT OR REPLACE INTO kv(key, value) VALUES (?, ?)').run(key, value);
    });
  }

  /** `PRAGMA integrity_check` result ('ok' when the file is sound). */
  integrityCheck(): string {
    const rows = this.db.pragma('integrity_check', { simple: false }) as { integrity_check: string }[];
    return rows.map((r) => r.integrity_check).join('\n');
  }
}

/** Summary of what the store holds: `nnrag stats --json`. */
export interface StoreStats {
  schemaVersion: number;
  repos: { name: string; files: number; bytes: number; revision: string | null; indexedAt: string | null }[];
  files: number;
  bytes: number;
  /** distinct contents with stored facts */
  facts: number;
  /** files with at least one syntax error */
  parseErrors: number;
  syntaxErrors: number;
  problems: number;
  problemsByKind: Record<string, number>;
  blocks: number;
  lastRun: {
    id: number;
    mode: string;
    started: string;
    finished: string | null;
    timings: Record<string, number> | null;
    stats: Record<string, unknown> | null;
  } | null;
}

export function storeStats(store: IndexStore): StoreStats {
  const q = <T>(sql: string) => store.stmt(sql).get() as T;
  const repos = store
    .stmt(
      `SELECT r.name, r.revision, r.indexed_at AS indexedAt, COUNT(f.path) AS files, COALESCE(SUM(f.size), 0) AS bytes
     FROM repos r LEFT JOIN files f ON f.repo = r.name GROUP BY r.name ORDER BY r.priority DESC, r.name`,
    )
    .all() as StoreStats['repos'];
  const tot = q<{ files: number; bytes: number }>(
    'SELECT COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes FROM files',
  );
  const err = q<{ files: number; errors: number }>(
    `SELECT COUNT(*) AS files, COALESCE(SUM(x.errors), 0) AS errors FROM files f JOIN facts x ON x.blob = f.blob WHERE x.errors > 0`,
  );
  const byKind: Record<string, number> = {};
  for (const r of store.stmt('SELECT kind, COUNT(*) AS n FROM problems GROUP BY kind ORDER BY kind').all() as {
    kind: string;
    n: number;
  }[]) {
    byKind[r.kind] = r.n;
  }
  const last = store.lastRun();
  return {
    schemaVersion: store.schemaVersion,
    repos,
    files: tot.files,
    bytes: tot.bytes,
    facts: q<{ n: number }>('SELECT COUNT(*) AS n FROM facts').n,
    parseErrors: err.files,
    syntaxErrors: err.errors,
    problems: Object.values(byKind).reduce((a, b) => a + b, 0),
    problemsByKind: byKind,
    blocks: q<{ n: number }>('SELECT COUNT(*) AS n FROM blocks').n,
    lastRun: last && {
      id: last.id,
      mode: last.mode,
      started: last.started,
      finished: last.finished,
      timings: last.timings,
      stats: last.stats,
    },
  };
}

/** Facts by blob id, parsed from JSON on first access. */
export class LazyFacts {
  private readonly parsed = new Map<string, FileFacts>();
  constructor(private readonly text: Map<string, string>) {}

  get size(): number {
    return this.text.size;
  }

  has(blob: string): boolean {
    return this.text.has(blob);
  }

  get(blob: string): FileFacts | undefined {
    let f = this.parsed.get(blob);
    if (!f) {
      const t = this.text.get(blob);
      if (t === undefined) return undefined;
      f = JSON.parse(t) as FileFacts;
      this.parsed.set(blob, f);
    }
    return f;
  }

  keys(): IterableIterator<string> {
    return this.text.keys();
  }
}

function blockFromDb(r: Record<string, unknown>): BlockRow {
  const b: BlockRow = {
    id: r.id as string,
    name: r.name as string,
    module: r.module as string,
    repo: r.repo as string,
    path: r.path as string,
    line: r.line as number,
    bases: JSON.parse(r.bases as string) as string[],
  };
  if (r.data != null) b.data = JSON.parse(r.data as string);
  return b;
}

function repoFromDb(r: Record<string, unknown>): IndexedRepo {
  return {
    name: r.name as string,
    url: (r.url as string | null) ?? null,
    root: r.root as string,
    revision: (r.revision as string | null) ?? null,
    local: !!r.local,
    priority: r.priority as number,
    packageRoots: JSON.parse(r.package_roots as string) as string[],
    indexedAt: (r.indexed_at as string | null) ?? null,
  };
}

/** Retry an operation that reported SQLITE_BUSY (lock upgrades and journal-mode
 *  switches bypass the busy handler), up to the busy timeout. */
function retryBusy<T>(fn: () => T): T {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
    try {
      return fn();
    } catch (e) {
      if (!isBusy(e) || Date.now() > deadline) throw e;
      sleepSync(wait);
    }
  }
}

/** Apply every migration of MIGRATIONS the store has not had yet, in version order, each
 *  in its own IMMEDIATE transaction (re-checked inside it, so two processes opening
 *  a store at once apply each migration exactly once).
 *
 *  Applied migrations are listed in `schema_migrations`; `PRAGMA user_version` is the
 *  highest applied version. A store written by a newer nnrag may hold migrations this
 *  build does not know: that is fine unless one of them is marked `breaking` (it
 *  changed tables this code uses), in which case the store is refused. */
function migrate(db: DB): void {
  const userVersion = () => db.pragma('user_version', { simple: true }) as number;
  retryBusy(() =>
    db
      .transaction(() => {
        const exists = db
          .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
          .get();
        if (exists) return;
        db.exec(
          'CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, name TEXT NOT NULL, breaking INTEGER NOT NULL DEFAULT 0, applied_at TEXT NOT NULL)',
        );
        // a store made before schema_migrations existed: its user_version counts
        const uv = userVersion();
        const ins = db.prepare('INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)');
        for (const m of MIGRATIONS) if (m.version <= uv) ins.run(m.version, m.name, new Date().toISOString());
      })
      .immediate(),
  );
  const applied = () =>
    new Map(
      (
        db.prepare('SELECT version, breaking FROM schema_migrations').all() as { version: number; breaking: number }[]
      ).map((r) => [r.version, r.breaking]),
    );
  const known = new Set(MIGRATIONS.map((m) => m.version));
  const unknownBreaking = [...applied()].filter(([v, b]) => b && !known.has(v)).map(([v]) => v);
  if (unknownBreaking.length) {
    throw new NnragError(
      `index store has schema changes (${unknownBreaking.join(', ')}) newer than this nnrag supports; ` +
        'use a newer nnrag or a fresh --store',
      'store',
    );
  }
  const done = applied();
  for (const m of MIGRATIONS) {
    if (done.has(m.version)) continue;
    retryBusy(() =>
      db
        .transaction(() => {
          if (db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version)) return;
          m.up(db);
          db.prepare('INSERT INTO schema_migrations(version, name, breaking, applied_at) VALUES (?, ?, ?, ?)').run(
            m.version,
            m.name,
            m.breaking ? 1 : 0,
            new Date().toISOString(),
          );
          if (m.version > userVersion()) db.pragma(`user_version = ${m.version}`);
        })
        .immediate(),
    );
  }
}
