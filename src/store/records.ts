// The extraction and validation tables (migration 2): one row per block id with the
// emitted module text, its content hash and the record the CLI prints with --json (so
// everything printed is also in the store), and validation results cached by module
// content hash and validation environment id.
import { createHash } from 'node:crypto';
import {
  BLOCK_RECORD_VERSION,
  BLOCK_STATUSES,
  validationsOf,
  type BlockRecord,
  type BlockStatus,
} from '../records/block.js';
import type { IndexStore } from './store.js';
import { putDedupSignatures, type DedupSignatureRow } from './dedup-sigs.js';

export function textHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface StoredExtraction {
  id: string;
  hash: string;
  ok: boolean;
  status: BlockStatus;
  lines: number;
  record: BlockRecord;
  text: string;
}

/** An extraction as written: with the de-duplication signature of its module text when the
 *  caller computed it (src/library/dedup.ts dedupSignatureRow), stored by content hash in
 *  the same transaction (store/dedup-sigs.ts). */
export type ExtractionWrite = StoredExtraction & { signature?: Omit<DedupSignatureRow, 'hash'> };

export function putExtraction(store: IndexStore, e: ExtractionWrite): void {
  store.write(() => {
    store
      .stmt(
        'INSERT OR REPLACE INTO extractions(id, hash, ok, status, lines, record, text, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(e.id, e.hash, e.ok ? 1 : 0, e.status, e.lines, JSON.stringify(e.record), e.text, new Date().toISOString());
    if (e.signature) putDedupSignatures(store, [{ ...e.signature, hash: e.hash }]);
    // the per-environment verdicts (migration 11), for the `--env` filters
    store.stmt('DELETE FROM block_environments WHERE id = ?').run(e.id);
    const ins = store.stmt('INSERT INTO block_environments(id, env, label, ok) VALUES (?, ?, ?, ?)');
    for (const [env, v] of Object.entries(validationsOf(e.record))) ins.run(e.id, env, v.label, v.ok ? 1 : 0);
  });
}

/** One block's verdict in one environment. */
export interface BlockEnvironment {
  id: string;
  env: string;
  label: string;
  ok: boolean;
}

/** Every (block, environment) verdict stored, by block id. */
export function blockEnvironments(store: IndexStore): BlockEnvironment[] {
  return (
    store.stmt('SELECT id, env, label, ok FROM block_environments ORDER BY id, env').all() as {
      id: string;
      env: string;
      label: string;
      ok: number;
    }[]
  ).map((r) => ({ ...r, ok: !!r.ok }));
}

/** The environments blocks were validated in: id, label, blocks passed and failed. */
export function environmentSummaries(
  store: IndexStore,
): { env: string; label: string; passed: number; failed: number }[] {
  return store
    .stmt(
      'SELECT env, MAX(label) AS label, SUM(ok) AS passed, SUM(1 - ok) AS failed FROM block_environments GROUP BY env ORDER BY label',
    )
    .all() as { env: string; label: string; passed: number; failed: number }[];
}

export function getExtraction(store: IndexStore, id: string): StoredExtraction | null {
  const r = store.stmt('SELECT * FROM extractions WHERE id = ?').get(id) as Record<string, unknown> | undefined;
  return r ? rowToExtraction(r) : null;
}

export function listExtractions(store: IndexStore): StoredExtraction[] {
  return (store.stmt('SELECT * FROM extractions ORDER BY id').all() as Record<string, unknown>[]).map(rowToExtraction);
}

/** Id and content hash of every stored extraction that has a module text (what the
 *  library's derived results are computed from), without loading the texts: read from
 *  the index extractions_list alone (migration 14). */
export const EXTRACTION_HASHES_SQL = 'SELECT id, hash FROM extractions WHERE octet_length(text) > 0 ORDER BY id';
export function extractionHashes(store: IndexStore): { id: string; hash: string }[] {
  return store.stmt(EXTRACTION_HASHES_SQL).all() as {
    id: string;
    hash: string;
  }[];
}

function rowToExtraction(r: Record<string, unknown>): StoredExtraction {
  return {
    id: r.id as string,
    hash: r.hash as string,
    ok: !!r.ok,
    status: decodeStatus(r.status as string),
    lines: r.lines as number,
    record: decodeRecord(r.record as string),
    text: r.text as string,
  };
}

function decodeStatus(s: string): BlockStatus {
  return (BLOCK_STATUSES as readonly string[]).includes(s) ? (s as BlockStatus) : 'extracted';
}

/**
 * A stored record as the current `BlockRecord`. Records written before the record was
 * versioned lack `version`, `repository`, `source` and `emission` (they were faithful
 * emissions), and records of blocks that emitted nothing lack `provenance` and `renames`:
 * those get their defaults; version-1 records have one `validation` and no
 * `validations`: it becomes the map's one entry (its environment's verdict is the
 * record's `ok`); every other field is kept as stored.
 */
export function decodeRecord(json: string): BlockRecord {
  const r = JSON.parse(json) as Partial<BlockRecord> & Pick<BlockRecord, 'id'>;
  // version 1 kept one validation: it becomes the only entry of the per-environment map
  const validations =
    r.validations ?? (r.validation ? validationsOf({ validation: r.validation, ok: r.ok ?? false }) : undefined);
  return {
    ...r,
    ...(validations ? { validations } : {}),
    version: BLOCK_RECORD_VERSION,
    id: r.id,
    repository: r.repository ?? r.source?.repo ?? null,
    source: r.source ?? null,
    signature: r.signature ?? null,
    file: r.file ?? '',
    ok: r.ok ?? false,
    lines: r.lines ?? 0,
    diagnostics: r.diagnostics ?? [],
    interned: r.interned ?? [],
    externs: r.externs ?? [],
    provenance: r.provenance ?? [],
    renames: r.renames ?? [],
    emission: r.emission ?? { profile: 'faithful' },
    ms: r.ms ?? 0,
  };
}

/** A validation result cached by module content hash and validation environment. */
export function getCachedValidation<T>(store: IndexStore, hash: string, env: string): T | null {
  const v = store.stmt('SELECT result FROM validations WHERE hash = ? AND env = ?').pluck().get(hash, env) as
    | string
    | undefined;
  return v ? (JSON.parse(v) as T) : null;
}

export function putCachedValidation(store: IndexStore, hash: string, env: string, result: unknown): void {
  store.write(() =>
    store
      .stmt('INSERT OR REPLACE INTO validations(hash, env, result) VALUES (?, ?, ?)')
      .run(hash, env, JSON.stringify(result)),
  );
}

/** Every cached validation result (JSON text), for the library's timings and layers. */
export function cachedValidationTexts(store: IndexStore): Iterable<string> {
  return store.stmt('SELECT result FROM validations').pluck().iterate() as Iterable<string>;
}

/** Is a block id stored? */
export function hasExtraction(store: IndexStore, id: string): boolean {
  return store.stmt('SELECT 1 FROM extractions WHERE id = ?').get(id) !== undefined;
}

/** Every stored block id. */
export function extractionIds(store: IndexStore): string[] {
  return store.stmt('SELECT id FROM extractions ORDER BY id').pluck().all() as string[];
}

/** What decides whether a block's derived rows (search document, signatures) are current. */
export interface ExtractionStamp {
  id: string;
  hash: string;
  status: string;
  /** time of the last write (a re-validation rewrites it) */
  updated: string;
}

export function extractionStamps(store: IndexStore): ExtractionStamp[] {
  return store.stmt('SELECT id, hash, status, updated FROM extractions').all() as ExtractionStamp[];
}

/** What de-duplication needs of every stored extraction with a module text, without its
 *  text: id, content hash, repository (the discovered block's, else the record's first
 *  provenance) and the validation's parse stage (null when not validated), by id. Read
 *  from the index extractions_list (migration 14) alone: its expressions are the ones
 *  below, written the same way (SQLite uses an indexed expression only where it is
 *  written as indexed; test/store/records.test.ts checks the plan). */
export interface DedupRow {
  id: string;
  hash: string;
  repo: string | null;
  parse: string | null;
}

export const DEDUP_ROWS_SQL = `SELECT e.id AS id, e.hash AS hash,
    COALESCE(b.repo, json_extract(e.record, '$.provenance[0].repo')) AS repo,
    json_extract(e.record, '$.validation.stages.parse') AS parse
  FROM extractions e LEFT JOIN blocks b ON b.id = e.id
  WHERE octet_length(e.text) > 0 ORDER BY e.id`;

export function dedupRows(store: IndexStore): DedupRow[] {
  return store.stmt(DEDUP_ROWS_SQL).all() as DedupRow[];
}

/** The emitted module text of a block ('' when the block is not stored). */
export function extractionText(store: IndexStore, id: string): string {
  return (store.stmt('SELECT text FROM extractions WHERE id = ?').pluck().get(id) as string | undefined) ?? '';
}

/** Forget one stored block (its record and module text). */
export function deleteExtraction(store: IndexStore, id: string): void {
  store.write(() => {
    store.stmt('DELETE FROM extractions WHERE id = ?').run(id);
    store.stmt('DELETE FROM block_environments WHERE id = ?').run(id);
  });
}
