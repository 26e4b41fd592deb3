// Storage of extraction and validation records in the IndexStore (schema v2): one row
// per block id with the emitted module text, its content hash, and the record the CLI
// prints with --json, so everything printed is also in the store.
import { createHash } from 'node:crypto';
import { registerMigration, type IndexStore } from '../index/store.js';

registerMigration({
  version: 2,
  name: 'extraction records and emitted modules',
  up(db) {
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
});

export function textHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface StoredExtraction {
  id: string;
  hash: string;
  ok: boolean;
  /** 'validated' | 'failed' | 'extracted' (not validated) */
  status: string;
  lines: number;
  record: Record<string, unknown>;
  text: string;
}

export function putExtraction(store: IndexStore, e: StoredExtraction): void {
  store.write(() =>
    store
      .stmt('INSERT OR REPLACE INTO extractions(id, hash, ok, status, lines, record, text, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(e.id, e.hash, e.ok ? 1 : 0, e.status, e.lines, JSON.stringify(e.record), e.text, new Date().toISOString()),
  );
}

export function getExtraction(store: IndexStore, id: string): StoredExtraction | null {
  const r = store.stmt('SELECT * FROM extractions WHERE id = ?').get(id) as Record<string, unknown> | undefined;
  return r ? rowToExtraction(r) : null;
}

export function listExtractions(store: IndexStore): StoredExtraction[] {
  return (store.stmt('SELECT * FROM extractions ORDER BY id').all() as Record<string, unknown>[]).map(rowToExtraction);
}

/** Id and content hash of every stored extraction that has a module text (what the
 *  library's derived results are computed from), without loading the texts. */
export function extractionHashes(store: IndexStore): { id: string; hash: string }[] {
  return store.stmt("SELECT id, hash FROM extractions WHERE text IS NOT NULL AND text != '' ORDER BY id").all() as { id: string; hash: string }[];
}

function rowToExtraction(r: Record<string, unknown>): StoredExtraction {
  return {
    id: r.id as string,
    hash: r.hash as string,
    ok: !!r.ok,
    status: r.status as string,
    lines: r.lines as number,
    record: JSON.parse(r.record as string) as Record<string, unknown>,
    text: r.text as string,
  };
}

/** A validation result cached by module content hash and validation environment. */
export function getCachedValidation<T>(store: IndexStore, hash: string, env: string): T | null {
  const v = store.stmt('SELECT result FROM validations WHERE hash = ? AND env = ?').pluck().get(hash, env) as string | undefined;
  return v ? (JSON.parse(v) as T) : null;
}

export function putCachedValidation(store: IndexStore, hash: string, env: string, result: unknown): void {
  store.write(() => store.stmt('INSERT OR REPLACE INTO validations(hash, env, result) VALUES (?, ?, ?)').run(hash, env, JSON.stringify(result)));
}
