// The library API behind the CLI: a Workspace is an opened store (`--store DIR`) plus
// the corpus, resolver and discovery built from it on demand. Every command of the
// CLI is one function here, returning the records `--json` prints.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { RepoSpec } from './config/repos.js';
import { symbolMatches } from './config/scope.js';
import { Discovery, type Block } from './discover/discover.js';
import { parseBlockId } from './discover/ids.js';
import { emitModule, type NamespaceMap } from './emit/emitter.js';
import { slimClosure, type SlimResult } from './emit/slim/slim.js';
import { indexRepos, type IndexMode, type IndexProgress, type IndexReport } from './index/indexer.js';
import { initParser } from './parse/parser.js';
import { getExtraction, putExtraction, textHash } from './store/records.js';
import { blockFile, libraryDir, placeBlockFile } from './library/layout.js';
import type { EntryCall } from './emit/slim/values.js';
import { emptyRecord, type BlockRecord, type EmissionProfile } from './library/record.js';
import { RepoCache } from './repos/cache.js';
import { classSignature } from './resolve/classes.js';
import { ClosureBuilder } from './resolve/closure.js';
import { NnragError, UsageError } from './util/errors.js';
import { suggest } from './util/suggest.js';
import { Workspace } from './workspace.js';

export { Workspace };

/** Load the Python parser in this thread. The resolver parses modules it reads on demand
 *  (outside the configured paths) synchronously; without a parser only contents the store
 *  already has are usable that way. `index` calls it; so does the CLI. */
export async function ready(): Promise<void> {
  await initParser();
}

// ---------------------------------------------------------------- index

export interface IndexOptions {
  repos: RepoSpec[];
  mode?: IndexMode;
  update?: boolean;
  workers?: number;
  onProgress?: (p: IndexProgress) => void;
}

/** Prepare repositories (git clone/fetch or local folders) and index their Python files.
 *  Without repos, the repositories already in the store are indexed again. */
export async function index(ws: Workspace, opts: IndexOptions): Promise<IndexReport> {
  await ready();
  const cache = new RepoCache(path.join(ws.storeDir, 'repos'));
  let specs = opts.repos;
  if (!specs.length) {
    specs = ws.store.listRepos().map((r) => ({
      name: r.name,
      url: r.local ? null : r.url,
      path: r.local ? r.root : null,
      priority: r.priority,
      paths: [],
      description: null,
      packageRoots: r.packageRoots.length ? r.packageRoots : null,
    }));
    if (!specs.length) throw new UsageError('no repositories: give --repo PATH_OR_URL or --config repo_config.json');
  }
  const checkouts = [];
  for (const spec of specs) {
    const c = await cache.prepare(spec, { update: opts.update });
    checkouts.push({ ...c, paths: spec.paths.length ? spec.paths : undefined, priority: spec.priority });
  }
  const report = await indexRepos(ws.store, checkouts, { mode: opts.mode ?? 'missing', workers: opts.workers, onProgress: opts.onProgress });
  ws.invalidate();
  return report;
}

// ---------------------------------------------------------------- discover

export interface DiscoverOptions {
  /** symbol patterns (`timm.layers.*`, `Mlp`) */
  symbols?: string[];
  repos?: string[];
}

/** Discover every block of the corpus, store them, and return those in scope. */
export function discover(ws: Workspace, opts: DiscoverOptions = {}): Block[] {
  const d = new Discovery(ws.corpus(), ws.resolver());
  const all = d.discover();
  const byRepo = new Map<string, Block[]>();
  for (const r of ws.store.listRepos()) byRepo.set(r.name, []);
  for (const b of all) byRepo.get(b.repo)?.push(b);
  for (const [repo, rows] of byRepo) ws.store.replaceBlocks(repo, rows);
  // symbol patterns match case-insensitively (`*attention` finds WindowAttention)
  const symbols = opts.symbols?.map((p) => p.toLowerCase());
  return all.filter(
    (b) =>
      (!symbols?.length || symbolMatches(symbols, b.id.toLowerCase()) || symbolMatches(symbols, `${b.module}.${b.name}`.toLowerCase()) || symbolMatches(symbols, b.name.toLowerCase())) &&
      (!opts.repos?.length || opts.repos.includes(b.repo)),
  );
}

/** Stored blocks (discovering first when the store has none yet). */
export function storedBlocks(ws: Workspace): Block[] {
  const rows = ws.store.listBlocks();
  if (rows.length) return rows.map(({ data: _data, ...b }) => b);
  return discover(ws);
}

export interface NameResolution {
  id: string;
  requested: string;
}

/** Accept ids, `repo:module.Class`, `module.Class`, a dotted tail of it (`common.Conv`)
 *  or the bare class name, each only where it names one block. A name no block has is
 *  an NnragError ('unknown-block'); a name several blocks answer to is a UsageError
 *  (exit 2) listing the candidates with their repositories. */
export function resolveBlockNames(ws: Workspace, names: string[]): NameResolution[] {
  const blocks = storedBlocks(ws);
  const byId = new Map(blocks.map((b) => [b.id, b]));
  return names.map((requested) => {
    if (byId.has(requested)) return { id: requested, requested };
    const want = parseBlockId(requested);
    const cands = blocks.filter((b) => {
      if (want.repo !== null && want.repo !== b.repo) return false;
      const q = `${b.module}.${b.name}`;
      return q === want.qualified || b.name === want.qualified || q.endsWith(`.${want.qualified}`);
    });
    if (!cands.length) {
      if (!blocks.length) {
        const hint = ws.store.listRepos().length ? 'no blocks were discovered in the indexed repositories' : 'nothing is indexed: run `nnrag index --repo PATH` first (or `nnrag extract --repo PATH --block NAME`)';
        throw new NnragError(`no block named ${JSON.stringify(requested)}: ${hint}`, 'unknown-block');
      }
      const near = suggest(want.qualified.split('.').pop()!, blocks.map((b) => b.name));
      throw new NnragError(
        `no block named ${JSON.stringify(requested)}${near.length ? `; did you mean ${near.join(', ')}?` : ''} (\`nnrag discover\` lists the blocks)`,
        'unknown-block',
      );
    }
    if (cands.length > 1) {
      const list = cands.map((b) => `  ${b.id}  (${b.repo}, ${b.path}:${b.line})`).join('\n');
      throw new UsageError(`${JSON.stringify(requested)} is ambiguous: ${cands.length} blocks answer to it; give one of\n${list}`);
    }
    return { id: cands[0].id, requested };
  });
}

// ---------------------------------------------------------------- extract

export interface ExtractOptions {
  /** output folder for emitted modules (default `<store>/library`) */
  out?: string;
  intern?: string[];
  extern?: string[];
  /** top-level modules importable in the validation environment (its probe) */
  importable?: readonly string[];
  /** 'faithful' (the default here): every option of the original works; 'slim': without
   *  registration decorators and unreached options (src/emit/slim). The validating
   *  pipeline defaults to slim and keeps it only when it validates as the faithful
   *  module does (pipeline.ts); without validation nothing proves it */
  profile?: EmissionProfile;
}

export type { EmissionProfile };

/** What slim emission may use beyond the code: texts whose strings the block can be
 *  called with, decorators the sandbox proved to return their argument. */
export interface SlimInputs {
  seeds?: readonly string[];
  proven?: ReadonlySet<string>;
  /** calls of the block from outside (call sites, validated arguments; emit/slim/values.ts) */
  entry?: readonly EntryCall[];
}

/** The record of one block (src/library/record.ts); the name the API had before. */
export type ExtractionRecord = BlockRecord;

export interface Extraction {
  record: ExtractionRecord;
  text: string;
  /** names of the emitted module and what they denote in the originals (for validation) */
  namespace?: NamespaceMap;
  /** slim emission: decorators not proven statically (for the sandbox probe) */
  unknownDecorators?: SlimResult['unknownDecorators'];
}

/** Compute the closure of one block and emit its standalone module (not written). */
export function extractText(ws: Workspace, id: string, opts: ExtractOptions = {}, slim: SlimInputs = {}): Extraction {
  const t0 = performance.now();
  const corpus = ws.corpus();
  const found = ws.blockModule(id);
  if (!found) {
    return { record: { ...emptyRecord(id), error: `${id} is not a class of an indexed module`, ms: performance.now() - t0 }, text: '' };
  }
  const { mod, className, cls } = found;
  const base = { ...emptyRecord(id, mod.repo, ws.blockSource(id)), signature: classSignature(ws.resolver(), mod, cls) };
  try {
    const resolver = ws.resolver({ extern: opts.extern, intern: opts.intern, importable: opts.importable });
    const profile = opts.profile ?? 'faithful';
    const sl = profile === 'slim' ? slimClosure(corpus, resolver, mod, className, slim) : null;
    const closure = sl ? sl.closure : new ClosureBuilder(corpus, resolver).build(mod, className);
    const em = emitModule(corpus, closure, sl ? { edits: sl.edits, header: sl.header } : {});
    const diagnostics = [...closure.diagnostics, ...em.diagnostics];
    const errors = diagnostics.filter((d) => d.severity === 'error');
    return {
      record: {
        ...base,
        ok: errors.length === 0,
        lines: em.lines,
        diagnostics,
        interned: em.interned,
        externs: em.externs,
        provenance: em.provenance,
        renames: em.renames,
        emission: { profile, ...(sl ? { removed: sl.removed } : {}) },
        ms: performance.now() - t0,
      },
      text: em.text,
      namespace: em.namespace,
      ...(sl ? { unknownDecorators: sl.unknownDecorators } : {}),
    };
  } catch (e) {
    return { record: { ...base, error: (e as Error).message, ms: performance.now() - t0 }, text: '' };
  }
}

/** Extract one block and write it under `<out>/extracted/` (no validation). */
export function extractBlock(ws: Workspace, id: string, opts: ExtractOptions = {}): BlockRecord {
  return extractBlocks(ws, [id], opts)[0];
}

/** Extract blocks and write them under `<out>/extracted/`, recording them in the store.
 *  A block whose emitted module is unchanged keeps its stored validation (and its file in
 *  `blocks/` or `failed/`): extraction without validation proves nothing new, so it must
 *  not demote what was validated. */
export function extractBlocks(ws: Workspace, ids: string[], opts: ExtractOptions = {}, slimInputs?: (id: string, prev: BlockRecord) => SlimInputs): BlockRecord[] {
  const out = libraryDir(ws.storeDir, opts.out);
  return ids.map((id) => {
    // a validated slim module stays when the same slim module comes out again (no
    // profile asked for: the library's choice stands)
    const stored = opts.profile === undefined && slimInputs ? getExtraction(ws.store, id) : null;
    const slimHeld = stored && stored.status !== 'extracted' && stored.record.emission.profile === 'slim';
    const { record, text } = slimHeld ? extractText(ws, id, { ...opts, profile: 'slim' }, slimInputs!(id, stored.record)) : extractText(ws, id, opts);
    const prev = text ? getExtraction(ws.store, id) : null;
    if (prev && prev.status !== 'extracted' && prev.hash === textHash(text)) {
      const file = blockFile(out, prev.status, id);
      if (existsSync(file)) return { ...prev.record, file, ms: record.ms };
    }
    if (text) {
      record.file = placeBlockFile(out, 'extracted', id, '.py', text);
      putExtraction(ws.store, { id, hash: textHash(text), ok: record.ok, status: 'extracted', lines: record.lines, record, text });
    }
    return record;
  });
}
