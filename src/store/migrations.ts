// The store's schema: ONE static, ordered list of migrations, applied by `IndexStore.open`
// whatever command runs (docs/ARCHITECTURE.md "Storage"). Nothing registers migrations at
// module load any more: before, the tables a store had depended on which modules the
// command happened to import (a `search` run on a store only `index` had opened found no
// `specs` table).
//
// Rules for a new migration: append it with the next free version (versions are never
// reused or renumbered: stores in the field list the versions they applied); make it
// additive (new tables, new columns with defaults) so that an older nnrag keeps opening
// the store; set `breaking` only when it changes tables older code reads, which makes
// older nnrag builds refuse the store instead of misreading it.
import type Database from 'better-sqlite3';
import { transcodeDedupRows } from './dedup-layout.js';

export type DB = Database.Database;

/** FTS columns and their BM25 weights (the block's own name counts most). */
export const SEARCH_COLUMNS: readonly { name: string; weight: number }[] = [
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

export const FTS_SQL = `CREATE VIRTUAL TABLE search_fts USING fts5(
        ${SEARCH_COLUMNS.map((c) => c.name).join(', ')},
        tokenize = 'porter unicode61 remove_diacritics 2',
        prefix = '2 3'
      )`;

/** One schema step. `version` is the user_version the store has after `up` ran. */
export interface Migration {
  version: number;
  name: string;
  /** it changes tables that code without this migration uses: such code must refuse
   *  the store (additive migrations, e.g. new tables, leave this unset) */
  breaking?: boolean;
  up(db: DB): void;
}

/** Every migration nnrag knows, in increasing version order (checked by the store test). */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema: repos, files, facts, problems, runs, blocks, kv',
    up(db) {
      db.exec(`
        CREATE TABLE repos(
          name TEXT PRIMARY KEY,
          url TEXT,
          root TEXT NOT NULL,
          revision TEXT,
          local INTEGER NOT NULL DEFAULT 0,
          priority INTEGER NOT NULL DEFAULT 0,
          package_roots TEXT NOT NULL DEFAULT '[]',
          indexed_at TEXT
        );
        -- size + mtime_ms are the stat cache: an unchanged (size, mtime) pair means the
        -- stored blob id is still right and the file is not read again.
        CREATE TABLE files(
          repo TEXT NOT NULL,
          path TEXT NOT NULL,
          module TEXT,
          blob TEXT NOT NULL,
          size INTEGER NOT NULL,
          mtime_ms REAL NOT NULL,
          PRIMARY KEY(repo, path)
        ) WITHOUT ROWID;
        CREATE INDEX files_blob ON files(blob);
        -- one row per distinct file content. data is the FileFacts JSON, NULL when the
        -- binder failed on this content (the failure is in problem).
        CREATE TABLE facts(
          blob TEXT PRIMARY KEY,
          version INTEGER NOT NULL,
          data TEXT,
          size INTEGER NOT NULL DEFAULT 0,
          lines INTEGER NOT NULL DEFAULT 0,
          errors INTEGER NOT NULL DEFAULT 0,
          first_error TEXT,
          parse_ms REAL NOT NULL DEFAULT 0,
          encoding TEXT,
          problem TEXT
        );
        CREATE TABLE problems(
          repo TEXT NOT NULL,
          path TEXT NOT NULL,
          kind TEXT NOT NULL,
          message TEXT NOT NULL
        );
        CREATE INDEX problems_repo ON problems(repo);
        CREATE TABLE runs(
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          started TEXT NOT NULL,
          finished TEXT,
          mode TEXT NOT NULL,
          repos TEXT NOT NULL DEFAULT '[]',
          stats TEXT,
          timings TEXT
        );
        CREATE TABLE blocks(
          id TEXT PRIMARY KEY,
          name TEXT NOT NULL,
          module TEXT NOT NULL,
          repo TEXT NOT NULL,
          path TEXT NOT NULL,
          line INTEGER NOT NULL,
          bases TEXT NOT NULL DEFAULT '[]',
          data TEXT
        );
        CREATE INDEX blocks_repo ON blocks(repo);
        CREATE TABLE kv(key TEXT PRIMARY KEY, value TEXT);
      `);
    },
  },
  {
    version: 2,
    name: 'extraction records and emitted modules',
    up(db) {
      // one row per block id: the emitted module text, its content hash and the record
      // (`BlockRecord`, src/records/block.ts) the CLI prints with --json; validation
      // results cached by module content hash and validation environment id
      db.exec(`
        CREATE TABLE extractions(
          id TEXT PRIMARY KEY,
          hash TEXT NOT NULL,
          ok INTEGER NOT NULL,
          status TEXT NOT NULL,
          lines INTEGER NOT NULL,
          record TEXT NOT NULL,
          text TEXT NOT NULL,
          updated TEXT NOT NULL
        );
        CREATE TABLE validations(
          hash TEXT NOT NULL,
          env TEXT NOT NULL,
          result TEXT NOT NULL,
          PRIMARY KEY(hash, env)
        );
      `);
    },
  },
  {
    version: 3,
    name: 'library: block specs and de-duplication clusters',
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS specs(
          id TEXT PRIMARY KEY,
          repo TEXT NOT NULL,
          status TEXT NOT NULL,
          category TEXT NOT NULL,
          json TEXT NOT NULL,
          updated TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS specs_repo ON specs(repo);
        CREATE TABLE IF NOT EXISTS dedup_clusters(
          cluster INTEGER PRIMARY KEY,
          kind TEXT NOT NULL,
          representative TEXT NOT NULL,
          members TEXT NOT NULL,
          scores TEXT NOT NULL DEFAULT '[]'
        );
        CREATE TABLE IF NOT EXISTS dedup_members(
          block TEXT PRIMARY KEY,
          cluster INTEGER NOT NULL
        );
      `);
    },
  },
  {
    version: 4,
    name: 'search: FTS5 index of library blocks, similarity signatures',
    up(db) {
      // search_docs: one row per block, the filter columns and the SearchDoc JSON; `key`
      // identifies its inputs. search_fts: rowid = search_docs.rowid. search_sigs: MinHash
      // signatures of each module content, for `similar`.
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
  },
  {
    version: 9,
    name: 'support_files: modules read on demand outside the configured paths',
    up(db) {
      // a module a closure needed outside the repository's `paths`: resolved against,
      // never discovered; its facts are kept (content-addressed) like the indexed ones
      db.exec(`
        CREATE TABLE support_files(
          repo TEXT NOT NULL,
          path TEXT NOT NULL,
          module TEXT NOT NULL,
          blob TEXT NOT NULL,
          PRIMARY KEY(repo, path)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 10,
    name: 'witness_harvests: per repository, what its own model builds gave each class',
    up(db) {
      // one harvest per repository (src/validate/witness/), valid while `key` (blob ids of
      // the files on its sys.path + environment id) is unchanged; result: HarvestResult JSON
      db.exec(
        'CREATE TABLE witness_harvests(repo TEXT PRIMARY KEY, key TEXT NOT NULL, env TEXT NOT NULL, result TEXT NOT NULL)',
      );
    },
  },
  {
    version: 11,
    name: "block_environments: each block's verdict per validation environment",
    up(db) {
      // one row per (block, environment id) the block's module was validated in, with the
      // environment's short label (record.ts EnvValidation); derived from the record's
      // `validations` (written with it, store/records.ts putExtraction). Stores from before
      // keep one validation per block: it becomes that block's only row.
      db.exec(
        'CREATE TABLE block_environments(id TEXT NOT NULL, env TEXT NOT NULL, label TEXT NOT NULL, ok INTEGER NOT NULL, PRIMARY KEY(id, env)) WITHOUT ROWID',
      );
      db.exec(`
        INSERT OR REPLACE INTO block_environments(id, env, label, ok)
        SELECT id, env, COALESCE(label, python, 'environment ' || substr(env, 1, 8)), ok FROM (
          SELECT id, ok,
            json_extract(record, '$.validation.envId') AS env,
            json_extract(record, '$.validation.environment.label') AS label,
            json_extract(record, '$.validation.python') AS python
          FROM extractions WHERE json_valid(record)
        ) WHERE env IS NOT NULL
      `);
    },
  },
  {
    version: 12,
    name: 'search_bands: LSH band keys of the similarity signatures, for `similar`',
    up(db) {
      // one row per (band key, signature): the blocks sharing a band with a block are found
      // by the primary key's index instead of a scan of every signature (src/search/similar.ts
      // computes the keys; a store from before is filled from its stored signatures on the
      // next sync, see the kv entry `similar:bands`)
      db.exec(
        'CREATE TABLE search_bands(key INTEGER NOT NULL, sig INTEGER NOT NULL, PRIMARY KEY(key, sig)) WITHOUT ROWID',
      );
    },
  },
  {
    version: 13,
    name: 'dedup_sigs: the de-duplication signatures of each module content',
    up(db) {
      // one row per emitted module content (extractions.hash): what `nnrag dedup` computes
      // per block (src/library/dedup.ts encodeSignatures: MinHash signatures, shingle sets,
      // their keys and range counts), computed when the block is extracted or its shard
      // merged, so that dedup loads them instead of tokenizing every module again. `version`
      // is dedup.ts SIGNATURE_VERSION: a row of another version is recomputed, never used.
      // `error`: the lexical error of a module that cannot be tokenized (its data is the
      // header only).
      db.exec(
        'CREATE TABLE dedup_sigs(hash TEXT PRIMARY KEY, version INTEGER NOT NULL, error TEXT, data BLOB NOT NULL)',
      );
    },
  },
  {
    version: 14,
    name: 'extractions_list: the block list of dedup as a covering index',
    up(db) {
      // what `nnrag dedup` lists of every block (src/store/records.ts dedupRows: id, module
      // content hash, the provenance's repository, the parse verdict, whether there is a
      // module text), in id order. Without it the list read every block's row, module text
      // and record included, in id order (a random walk through the table: 21.8 s of CPU and
      // 55 s at 10^6 blocks); SQLite reads indexed expressions from the index (an index on
      // expressions, https://sqlite.org/expridx.html), so the list reads ~150 bytes a block.
      // The hashes alone (pruneDedupSignatures, the freshness digest) come from it too.
      db.exec(
        `CREATE INDEX extractions_list ON extractions(id, hash, json_extract(record, '$.provenance[0].repo'),
           json_extract(record, '$.validation.stages.parse'), octet_length(text))`,
      );
    },
  },
  {
    version: 15,
    name: 'dedup_signatures: the de-duplication signatures in a denser layout',
    // older builds read and write dedup_sigs, which this drops
    breaking: true,
    up(db) {
      // the rows of dedup_sigs rewritten in the layout of store/dedup-layout.ts (band keys
      // instead of the MinHash, range counts counted again on reading, the sets packed: 5.65
      // → ~3.6 KB a block at 10^6, where dedup's read of 5.6 GB was mostly the page cache),
      // without the module texts; in a table of their own, written in one pass, so that its
      // pages follow each other in the file (the old table's pages go to the free list).
      // A row that does not transcode is left out: the next dedup computes it from its
      // module. Same columns as dedup_sigs (store/dedup-sigs.ts).
      db.exec(
        'CREATE TABLE dedup_signatures(hash TEXT PRIMARY KEY, version INTEGER NOT NULL, error TEXT, data BLOB NOT NULL)',
      );
      transcodeDedupRows(db);
      db.exec('DROP TABLE dedup_sigs');
    },
  },
];

/** The schema version this build of nnrag knows. */
export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;
