// Union of shard stores into one store (`nnrag merge`, docs/SCALE.md): a shard is the store
// one queue worker built for one repository (its *owner* repository) with that repository's
// universe indexed beside it. What a shard contributes:
// - content-addressed rows, taken whatever shard they come from: facts (by blob id; a newer
//   FACTS_VERSION wins), cached validations (by module hash + environment; when two shards
//   hold different results for one key, the smaller JSON text is kept, so the outcome does
//   not depend on the order of the merges), per-environment kv caches (same rule);
// - rows of its owner repository, which replace what the target held for it: the repository
//   row, its files, support files, problems, discovered blocks, extraction records and its
//   witness harvest;
// - rows of the other repositories of its universe only while no shard owning them has been
//   merged (their owner's shard replaces them when it comes; until then the smallest
//   `indexed_at` stays, again independent of order).
// - the de-duplication signatures of the owner's modules (by content hash; a newer signature
//   version wins; `nnrag merge` computes those a shard lacks);
// Derived tables (specs, dedup clusters, search documents) are not copied: `nnrag library`,
// `dedup` and `search` rebuild them on the merged store. Merging the same shard twice, or
// the shards in another order, gives the same rows.
import type { IndexStore } from './store.js';

/** The kv key that marks a finished shard (written last, by the worker, before the shard's
 *  folder is renamed into place); its value is ShardMark JSON. */
export const SHARD_MARK_KEY = 'shard:done';
/** kv key of the merged store recording which shard was merged for a repository. */
export const mergedKey = (repo: string) => `merged:${repo}`;

export interface ShardMark {
  /** the owner repository */
  repo: string;
  /** repositories indexed beside it (its universe, the owner included) */
  universe: string[];
  /** block ids of the owner repository the worker extracted */
  blocks: number;
  finished: string;
  /** wall time of the phases, ms */
  timings: Record<string, number>;
  /** peak resident memory of the worker's process, bytes (when known) */
  peakRss?: number;
  validate: boolean;
}

export function readShardMark(store: IndexStore): ShardMark | null {
  const v = store.db.prepare('SELECT value FROM kv WHERE key = ?').pluck().get(SHARD_MARK_KEY) as string | undefined;
  return v ? (JSON.parse(v) as ShardMark) : null;
}

export function writeShardMark(store: IndexStore, mark: ShardMark): void {
  store.write(() =>
    store.db.prepare('INSERT OR REPLACE INTO kv(key, value) VALUES (?, ?)').run(SHARD_MARK_KEY, JSON.stringify(mark)),
  );
}

/** The owner repositories already merged into `store`. */
export function mergedRepos(store: IndexStore): string[] {
  return store.db
    .prepare("SELECT substr(key, 8) FROM kv WHERE key LIKE 'merged:%' ORDER BY key")
    .pluck()
    .all() as string[];
}

export interface MergedRows {
  facts: number;
  files: number;
  blocks: number;
  extractions: number;
  validations: number;
  /** de-duplication signatures of the owner's modules taken (store/dedup-sigs.ts) */
  signatures: number;
}

/**
 * Merge the shard database `shardFile` (owner `mark.repo`) into `target`, in one
 * transaction. Extraction records are rewritten by `rewriteRecord` (the record names the
 * file the worker wrote; the merged library has its own). Returns counts of the shard's
 * rows that were taken.
 */
export function mergeShardRows(
  target: IndexStore,
  shardFile: string,
  mark: ShardMark,
  rewriteRecord: (id: string, status: string, record: string, text: string) => string,
): MergedRows {
  const db = target.db;
  db.prepare('ATTACH DATABASE ? AS shard').run(shardFile);
  try {
    return target.write(() => {
      const R = mark.repo;
      const counts: MergedRows = { facts: 0, files: 0, blocks: 0, extractions: 0, validations: 0, signatures: 0 };
      // a repository some merged shard owns: its rows come from that shard only
      const owned = "(SELECT substr(key, 8) FROM main.kv WHERE key LIKE 'merged:%')";
      counts.facts = db
        .prepare(
          `INSERT INTO main.facts SELECT * FROM shard.facts WHERE true
           ON CONFLICT(blob) DO UPDATE SET version = excluded.version, data = excluded.data, size = excluded.size, lines = excluded.lines,
             errors = excluded.errors, first_error = excluded.first_error, parse_ms = excluded.parse_ms, encoding = excluded.encoding, problem = excluded.problem
           WHERE excluded.version > facts.version`,
        )
        .run().changes;
      counts.validations = db
        .prepare(
          `INSERT INTO main.validations SELECT * FROM shard.validations WHERE true
           ON CONFLICT(hash, env) DO UPDATE SET result = excluded.result WHERE excluded.result < validations.result`,
        )
        .run().changes;
      // per-environment caches (requirements probed, workers' versions): smallest value wins
      db.prepare(
        `INSERT INTO main.kv SELECT key, value FROM shard.kv WHERE key LIKE 'requirements:%' OR key LIKE 'workers:%'
         ON CONFLICT(key) DO UPDATE SET value = excluded.value WHERE excluded.value < kv.value`,
      ).run();

      // the owner repository: replaced
      for (const t of ['files', 'support_files', 'problems', 'blocks', 'witness_harvests'])
        db.prepare(`DELETE FROM main.${t} WHERE repo = ?`).run(R);
      db.prepare('DELETE FROM main.extractions WHERE id IN (SELECT id FROM shard.blocks WHERE repo = ?)').run(R);
      db.prepare('INSERT OR REPLACE INTO main.repos SELECT * FROM shard.repos WHERE name = ?').run(R);
      counts.files = db.prepare('INSERT INTO main.files SELECT * FROM shard.files WHERE repo = ?').run(R).changes;
      db.prepare('INSERT INTO main.support_files SELECT * FROM shard.support_files WHERE repo = ?').run(R);
      db.prepare('INSERT INTO main.problems SELECT * FROM shard.problems WHERE repo = ?').run(R);
      counts.blocks = db
        .prepare('INSERT OR REPLACE INTO main.blocks SELECT * FROM shard.blocks WHERE repo = ?')
        .run(R).changes;
      db.prepare(
        'INSERT OR REPLACE INTO main.witness_harvests SELECT * FROM shard.witness_harvests WHERE repo = ?',
      ).run(R);
      const ins = db.prepare(
        'INSERT OR REPLACE INTO main.extractions(id, hash, ok, status, lines, record, text, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      );
      const rows = db
        .prepare(
          'SELECT e.id, e.hash, e.ok, e.status, e.lines, e.record, e.text, e.updated FROM shard.extractions e JOIN shard.blocks b ON b.id = e.id WHERE b.repo = ? ORDER BY e.id',
        )
        .raw()
        .all(R) as [string, string, number, string, number, string, string, string][];
      for (const [id, hash, ok, status, lines, record, text, updated] of rows)
        ins.run(id, hash, ok, status, lines, rewriteRecord(id, status, record, text), text, updated);
      counts.extractions = rows.length;
      // their de-duplication signatures, content-addressed: a signature of a newer version
      // replaces an older one; of the same version, the module and so the bytes are the same
      counts.signatures = db
        .prepare(
          `INSERT INTO main.dedup_signatures SELECT s.hash, s.version, s.error, s.data FROM shard.dedup_signatures s
           WHERE s.hash IN (SELECT e.hash FROM shard.extractions e JOIN shard.blocks b ON b.id = e.id WHERE b.repo = ?)
           ON CONFLICT(hash) DO UPDATE SET version = excluded.version, error = excluded.error, data = excluded.data
           WHERE excluded.version > dedup_signatures.version`,
        )
        .run(R).changes;
      // the specs, clusters and search documents of the owner's blocks are derived: stale now
      db.prepare('DELETE FROM main.specs WHERE repo = ?').run(R);
      db.prepare('INSERT OR REPLACE INTO main.kv(key, value) VALUES (?, ?)').run(mergedKey(R), JSON.stringify(mark));

      // the rest of the universe, for repositories no merged shard owns
      db.prepare(
        `INSERT INTO main.repos SELECT * FROM shard.repos WHERE name != ? AND name NOT IN ${owned} AND true
         ON CONFLICT(name) DO UPDATE SET url = excluded.url, root = excluded.root, revision = excluded.revision, local = excluded.local,
           priority = excluded.priority, package_roots = excluded.package_roots, indexed_at = excluded.indexed_at
         WHERE excluded.indexed_at < repos.indexed_at`,
      ).run(R);
      for (const t of ['files', 'support_files']) {
        db.prepare(
          `INSERT OR IGNORE INTO main.${t} SELECT * FROM shard.${t} WHERE repo != ? AND repo NOT IN ${owned}`,
        ).run(R);
      }
      db.prepare(
        `INSERT OR IGNORE INTO main.blocks SELECT * FROM shard.blocks WHERE repo != ? AND repo NOT IN ${owned}`,
      ).run(R);
      return counts;
    });
  } finally {
    db.prepare('DETACH DATABASE shard').run();
  }
}

// ---------------------------------------------------------------- the facts cache of a machine

/**
 * The facts cache of one machine's workers: an ordinary store (`<cache>/.facts`) holding the
 * files and facts of every repository a shard on this machine indexed. Before a shard
 * indexes its universe, the facts of the universe's files the cache knows are copied into
 * it (`seedFacts`), so indexing finds them by blob id and parses only what changed, as a
 * second `nnrag index` into one store would; after, the shard's files and facts are copied
 * back (`shareFacts`). Facts are content-addressed, so which worker wrote them is immaterial.
 */
export function seedFacts(target: IndexStore, cacheFile: string, repos: string[]): number {
  const db = target.db;
  db.prepare('ATTACH DATABASE ? AS cache').run(cacheFile);
  try {
    return target.write(
      () =>
        db
          .prepare(
            `INSERT OR IGNORE INTO main.facts SELECT * FROM cache.facts
             WHERE blob IN (SELECT blob FROM cache.files WHERE repo IN (SELECT value FROM json_each(?)))`,
          )
          .run(JSON.stringify(repos)).changes,
    );
  } finally {
    db.prepare('DETACH DATABASE cache').run();
  }
}

/** Copy a finished shard's files (per repository, replacing) and facts into the cache. */
export function shareFacts(cache: IndexStore, shardFile: string): void {
  const db = cache.db;
  db.prepare('ATTACH DATABASE ? AS shard').run(shardFile);
  try {
    cache.write(() => {
      db.prepare('DELETE FROM main.files WHERE repo IN (SELECT name FROM shard.repos)').run();
      db.prepare('INSERT OR REPLACE INTO main.files SELECT * FROM shard.files').run();
      db.prepare(
        `INSERT INTO main.facts SELECT * FROM shard.facts WHERE true
         ON CONFLICT(blob) DO UPDATE SET version = excluded.version, data = excluded.data, size = excluded.size, lines = excluded.lines,
           errors = excluded.errors, first_error = excluded.first_error, parse_ms = excluded.parse_ms, encoding = excluded.encoding, problem = excluded.problem
         WHERE excluded.version > facts.version`,
      ).run();
    });
  } finally {
    db.prepare('DETACH DATABASE shard').run();
  }
}
