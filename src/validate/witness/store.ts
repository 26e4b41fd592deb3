// Witness cache and lookup (src/validate/README.md "Witnesses"): one harvest per
// repository, stored in the index store under a key made of the blob ids of the
// repository's own files, the names of the files of the repositories on its sys.path, its
// tests and documents, and the environment's harvest id (the validation environment's
// identity with, of the harness, only the modules a harvest step runs: environment.ts
// harvestHarness; an edit of a validation stage keeps the stored harvests); the
// stored harvest is current while, besides, the files of other repositories it read (its
// list step's imports, its run steps' files: HarvestResult.depends) are unchanged. A
// re-run with nothing changed reads the stored harvest instead of building models again;
// an edit of another repository's file that the harvest never read leaves it current.
// When it is not current (a file was edited), the harvest runs again, but each of its
// run steps whose files are unchanged reuses the previous harvest's answer (harvest.ts
// RunReuse): the files a step depends on are those its run read (the harness's `reads`)
// and the modules those import names from (runDepends); of a Python module, what the
// step could have seen of it: its skeleton and the bodies of the functions that ran
// (parts.ts), a file opened or whose source was read counting whole.
// A harvest is stored with the folders its values name (a configuration file a test
// passed, the files its steps read) named by place (`<owner/name>/models/x.yaml`,
// places.ts `storePlaces`), so that two machines whose checkouts lie in different folders
// store the same bytes (issue 28), and read back with this machine's folders (`decode`):
// everything that uses a harvest sees the paths of this machine, as when it ran.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { sysPathRoots, type IndexStore } from '../../store/store.js';
import { fromIndexRepos } from '../../environment/pypi.js';
import { getHarvest, putHarvest } from '../../store/witnesses.js';
import { importTargets, type Corpus, type CorpusModule } from '../../resolve/corpus.js';
import { importBinds } from '../../parse/types.js';
import { gitBlobId } from '../../repos/git.js';
import type { ValidatorPool } from '../pool.js';
import { storeValuePlaces } from '../places.js';
import type { Witness } from '../types.js';
import {
  harvestRepo,
  type EntryReport,
  type HarvestDepends,
  type HarvestEntry,
  type HarvestResult,
  type RunFile,
  type RunReuse,
} from './harvest.js';
import { bodyOf, codeParts, partDigest, type CodeParts } from './parts.js';
import { initParser } from '../../parse/parser.js';

export interface RepoWitnesses {
  result: HarvestResult;
  /** read from the store (nothing changed since the harvest) */
  cached: boolean;
}

/** sys.path of a harvest: the repository's roots, then every other indexed repository's
 *  (lower priority: what its modules import from them, such as timm for Swin), except
 *  those the environment installs from the index at another version than their checkout
 *  (`skip`, environment/pypi.ts `fromIndexRepos`): the repository imports those installed. */
export function harvestSysPath(store: IndexStore, repo: string, skip: ReadonlySet<string> = new Set()): string[] {
  const own = store.getRepo(repo);
  if (!own) return [];
  const out: string[] = [];
  const add = (r: NonNullable<ReturnType<IndexStore['getRepo']>>) => {
    for (const p of sysPathRoots(r)) {
      const abs = path.join(r.root, ...p.split('/').filter(Boolean));
      if (!out.includes(abs)) out.push(abs);
    }
  };
  add(own);
  for (const r of store.listRepos().sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name)))
    if (r.name !== repo && !skip.has(r.name)) add(r);
  return out;
}

/** The version of the harvest's order and stopping rules (harvest.ts GreedyOrder,
 *  STALL_RUNS, PHASE_STEPS): part of the key, so a harvest an older rule stopped early is
 *  run again. 2: the stall rule counts each source of witnesses apart (stallSource).
 *  3: a phase's budget is counted in steps (PHASE_STEPS), no longer in summed CPU time
 *  (a backstop now), and every step has the whole entry budget. */
export const HARVEST_RULES = 3;

/** The cache key of a repository's harvest: the blob ids of its own indexed files, the
 *  names of the files of every other repository on its sys.path (a module added or
 *  removed there can change what an import finds), its tests and documents (docsDigest),
 *  the version of the harvest's rules (HARVEST_RULES) and the environment's harvest id
 *  (`harvestId`: ValidatorPool.harvestEnvId, the environment with only the harness
 *  modules a harvest runs; a harvest stored under a
 *  key made another way, such as the whole validation environment id of earlier builds,
 *  is simply not found). The content of other repositories' files is not in it: the
 *  files the harvest read are checked apart (HarvestResult.depends, harvestIsCurrent). */
export function harvestKey(
  store: IndexStore,
  repo: string,
  harvestId: string,
  listing: FileListing = fileListing(store),
): string {
  const root = store.getRepo(repo)?.root;
  const h = createHash('sha256').update(`${HARVEST_RULES}\0${harvestId}\0${repo}\0`);
  for (const [r, l] of [...listing.repos].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)))
    h.update(r === repo ? l.blobs : l.names);
  return h.update(root ? docsDigest(root) : '').digest('hex');
}

/** Whether a stored harvest is current: what it read outside its key is unchanged. */
export function harvestIsCurrent(
  result: HarvestResult,
  listing: FileListing,
  blob: (file: string) => string | null = diskBlobs(),
): boolean {
  const d = result.depends;
  if (!d) return false;
  if ('listing' in d) return d.listing === listing.digest;
  return d.files.every(([f, b]) => blob(f) === b);
}

/** The dependencies of a harvest just made (HarvestDepends): the files its list step and
 *  its run steps read, less the repository's own indexed files (in its key). */
export function harvestDepends(
  result: HarvestResult,
  ownRoot: string,
  ownIndexed: ReadonlySet<string>,
  listing: FileListing,
  blob: (file: string) => string | null,
): HarvestDepends {
  const runs = result.runs;
  const recorded = runs ? Object.keys(runs).length : 0;
  const complete =
    !result.error &&
    !!runs &&
    Array.isArray(result.listReads) &&
    recorded === (result.reusedRuns ?? 0) + (result.ranRuns ?? 0);
  if (!complete) return { listing: listing.digest };
  const files = new Map<string, string | null>();
  const own = ownRoot.endsWith('/') ? ownRoot : ownRoot + '/';
  const add = (f: string, b: string | null) => {
    if (files.has(f)) return;
    if (f.startsWith(own) && ownIndexed.has(f.slice(own.length))) return;
    files.set(f, b);
  };
  for (const r of Object.values(runs!)) for (const [f, b] of r.files) add(f, b);
  for (const f of result.listReads!) add(f, blob(f));
  return {
    files: [...files]
      .filter((x): x is [string, string] => x[1] !== null)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
  };
}

const TEST_FILE = /^(test_.*|.*_test)\.py$/;
const SKIP_DIRS = new Set([
  'node_modules',
  'site-packages',
  'build',
  'dist',
  '__pycache__',
  'venv',
  '.venv',
  'third_party',
]);

/** A digest of what a harvest reads besides the indexed files (harvest_docs.py): test
 *  files and conftest.py (pytest's conventions), Markdown files, examples/ scripts — by
 *  content, so a changed test or README harvests again. */
export function docsDigest(root: string): string {
  const h = createHash('sha256');
  const walk = (dir: string, rel: string, depth: number) => {
    let ents: import('node:fs').Dirent[];
    try {
      ents = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } catch {
      return;
    }
    for (const d of ents) {
      const n = d.name;
      if (n.startsWith('.') || SKIP_DIRS.has(n)) continue;
      const r = rel ? `${rel}/${n}` : n;
      if (d.isDirectory()) {
        if (depth < 12) walk(path.join(dir, n), r, depth + 1);
        continue;
      }
      const wanted =
        TEST_FILE.test(n) ||
        n === 'conftest.py' ||
        /\.(md|markdown)$/i.test(n) ||
        (/^examples?\//.test(r) && n.endsWith('.py'));
      if (!wanted || !d.isFile()) continue;
      try {
        h.update(r + '\0')
          .update(readFileSync(path.join(dir, n)))
          .update('\0');
      } catch {
        /* unreadable: left out, as the harvest leaves it out */
      }
    }
  };
  walk(root, '', 0);
  return h.digest('hex');
}

/** Every repository's indexed files (read once when several keys are wanted): per
 *  repository its paths with their blob ids, and its paths alone; the digest of all. */
export interface FileListing {
  repos: Map<string, { blobs: string; names: string }>;
  digest: string;
}

export function fileListing(store: IndexStore): FileListing {
  const repos = new Map<string, { blobs: string; names: string }>();
  const all = createHash('sha256');
  for (const r of store
    .listRepos()
    .map((x) => x.name)
    .sort()) {
    const blobs: string[] = [];
    const names: string[] = [];
    for (const f of store.listFiles(r).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
      blobs.push(`${r}\0${f.path}\0${f.blob}\n`);
      names.push(`${r}\0${f.path}\n`);
    }
    const l = { blobs: blobs.join(''), names: names.join('') };
    all.update(l.blobs);
    repos.set(r, l);
  }
  return { repos, digest: all.digest('hex') };
}

const SCRIPT_STATEMENTS = new Set(['for_statement', 'while_statement', 'with_statement']);

/** Modules of the repository that a harvest may import: library modules, not scripts.
 *  Importing a module runs its top level (Language Reference §5.3), so a module whose top
 *  level loops, opens contexts or calls something for its effect (after the docstring) is
 *  a script — train.py, prepare.py — and is not imported (the `__main__` guard of PEP 299
 *  style modules keeps their script part from running, those are imported). */
export function libraryModules(corpus: Corpus, repo: string): string[] {
  const out: string[] = [];
  for (const m of corpus.modules()) {
    if (m.repo !== repo || /(^|\.)(tests?|conftest|setup)(\.|$)/.test(m.name)) continue;
    const sts = m.facts.statements;
    const script = sts.some(
      (st, i) =>
        SCRIPT_STATEMENTS.has(st.kind) ||
        (st.kind === 'expression_statement' && !st.binds.length && i > 0 && st.refs.length > 0),
    );
    if (!script) out.push(m.name);
  }
  return out.sort();
}

/** The corpus's modules by absolute file, built once per corpus: runDepends runs for every
 *  harvest step (hundreds per repository) and each would walk every module again. */
const moduleFileMaps = new WeakMap<Corpus, Map<string, CorpusModule>>();
function modulesByFile(corpus: Corpus, fileOf: (m: CorpusModule) => string | null): Map<string, CorpusModule> {
  let byFile = moduleFileMaps.get(corpus);
  if (!byFile) {
    byFile = new Map();
    for (const m of corpus.modules()) {
      const f = fileOf(m);
      if (f) byFile.set(f, m);
    }
    moduleFileMaps.set(corpus, byFile);
  }
  return byFile;
}

/**
 * The files a run step depends on: the files its run read (code that ran, files opened),
 * the entry point's own module (imported before the step, by the zygote) and test file,
 * and for each module read: the packages above it (their `__init__` ran first, Language
 * Reference §5.4.2) and the modules it imports names from (§7.11; a name imported from a
 * package is followed through the package's own imports that bind it, re-exports, up to
 * three packages deep). A module-level value such as a constant is read at import time,
 * so its module is one of those.
 */
export function runDepends(
  corpus: Corpus | undefined,
  repo: string,
  root: string,
  read: string[],
  e: HarvestEntry,
): string[] {
  const out = new Set(read);
  if (e.file) out.add(path.join(root, ...e.file.split('/')));
  if (!corpus) return [...out].sort();
  const roots = new Map<string, string>();
  const fileOf = (m: CorpusModule) => {
    let r = roots.get(m.repo);
    if (r === undefined) roots.set(m.repo, (r = corpus.repos.get(m.repo)?.root ?? ''));
    return r ? path.join(r, ...m.path.split('/')) : null;
  };
  const byFile = modulesByFile(corpus, fileOf);
  const add = (m: CorpusModule | undefined) => {
    const f = m && fileOf(m);
    if (f) out.add(f);
  };
  const withPackages = (name: string, from: string) => {
    const parts = name.split('.');
    for (let i = 1; i <= parts.length; i++) add(corpus.module(parts.slice(0, i).join('.'), from));
  };
  const reexports = (pkg: CorpusModule, name: string, depth: number) => {
    if (depth > 3 || !pkg.isPackage) return;
    for (const st of pkg.facts.statements)
      for (const x of st.imports) {
        const binds = importBinds(x);
        if (binds !== name && !(x.kind === 'from' && x.name === '*')) continue;
        for (const t of importTargets(pkg, x)) {
          withPackages(t, pkg.repo);
          const tm = corpus.module(t, pkg.repo);
          if (tm && x.kind === 'from') reexports(tm, x.name === '*' ? name : x.name, depth + 1);
        }
      }
  };
  const own = corpus.module(e.module, repo);
  const mods = [...(own ? [own] : []), ...read.map((f) => byFile.get(f)).filter((m): m is CorpusModule => !!m)];
  for (const m of mods) {
    add(m);
    withPackages(m.name, m.repo);
    for (const st of m.facts.statements)
      for (const x of st.imports)
        for (const t of importTargets(m, x)) {
          withPackages(t, m.repo);
          const tm = corpus.module(t, m.repo);
          if (tm && x.kind === 'from' && x.name !== '*') reexports(tm, x.name, 1);
        }
  }
  return [...out].sort();
}

/** The parts of Python files read from disk now (witness/parts.ts), by blob id: a file
 *  read again at another blob is parsed again; null for a file gone or not parsed. */
function diskParts(blob: (file: string) => string | null): (file: string) => CodeParts | null {
  const byBlob = new Map<string, CodeParts | null>();
  return (file) => {
    const b = blob(file);
    if (!b) return null;
    let p = byBlob.get(b);
    if (p === undefined) {
      try {
        p = codeParts(readFileSync(file, 'utf8'));
      } catch {
        p = null;
      }
      byBlob.set(b, p);
    }
    return p;
  };
}

/** Blob ids of files read from disk now (once per file), null for a file that is gone. */
function diskBlobs(): (file: string) => string | null {
  const cache = new Map<string, string | null>();
  return (file) => {
    let b = cache.get(file);
    if (b === undefined) {
      try {
        b = gitBlobId(readFileSync(file));
      } catch {
        b = null;
      }
      cache.set(file, b);
    }
    return b;
  };
}

/** A harvest as stored: its folders named by place. */
export function encodeHarvest(store: IndexStore, result: HarvestResult): string {
  return JSON.stringify(storeValuePlaces(store).nameValue(result));
}

/** A stored harvest with this machine's folders. */
export function decodeHarvest(store: IndexStore, text: string | null): HarvestResult | null {
  return text ? storeValuePlaces(store).localValue(JSON.parse(text) as HarvestResult) : null;
}

/** The repository's harvest: stored when its key is unchanged, else run and stored (its
 *  run steps reuse the answers of the previous harvest whose files are unchanged). */
export async function repoWitnesses(
  store: IndexStore,
  pool: ValidatorPool,
  repo: string,
  opts: {
    force?: boolean;
    entryMs?: number;
    repoMs?: number;
    entryMemoryMb?: number;
    repoMemoryMb?: number;
    testMs?: number;
    docsMs?: number;
    onEntry?: (r: EntryReport) => void;
    modules?: string[];
    /** the corpus, to follow the imports of the modules a run read (runDepends) */
    corpus?: Corpus;
    /** no reuse of run steps (every entry point runs) */
    noRunReuse?: boolean;
  } = {},
): Promise<RepoWitnesses | null> {
  const row = store.getRepo(repo);
  if (!row) return null;
  const listing = fileListing(store);
  const key = harvestKey(store, repo, pool.harvestEnvId, listing);
  const blob = diskBlobs();
  if (!opts.force) {
    const result = decodeHarvest(store, getHarvest(store, repo, key));
    if (result && harvestIsCurrent(result, listing, blob)) return { result, cached: true };
  }
  const modules =
    opts.modules ??
    store
      .listFiles(repo)
      .map((f) => f.module)
      .filter((m): m is string => !!m)
      .sort();
  if (!modules.length) return null;
  const tops = new Map<string, number>();
  for (const m of modules) tops.set(m.split('.')[0], (tops.get(m.split('.')[0]) ?? 0) + 1);
  const zygoteModule = [...tops].sort((a, b) => b[1] - a[1])[0][0];
  const own = sysPathRoots(row).length;
  const previous = opts.noRunReuse ? null : storedHarvest(store, repo);
  await initParser();
  const parts = diskParts(blob);
  const testFile = (e: HarvestEntry) => (e.file ? path.join(row.root, ...e.file.split('/')) : null);
  const places = storeValuePlaces(store);
  const reuse: RunReuse = {
    envId: pool.harvestEnvId,
    named: (v) => places.nameValue(v),
    runs: previous?.runs ?? {},
    // where a wall-clock backstop stopped the previous harvest, if made by these rules
    // (a harvest of older rules stopped by time at a step these rules need not stop at)
    ...(previous?.wallStops && previous.rules === HARVEST_RULES ? { wallStops: previous.wallStops } : {}),
    depends: (read, e, calls) => {
      const opened = new Set(calls?.opened ?? []);
      return runDepends(opts.corpus, repo, row.root, read, e).flatMap((f): RunFile[] => {
        const b = blob(f);
        if (!b) return [];
        // a module whose functions' runs are known: its skeleton and the bodies that ran
        // (witness/parts.ts); a file opened (read as data) or the entry's test file: whole
        if (!calls || opened.has(f) || f === testFile(e) || !f.endsWith('.py')) return [[f, b]];
        const p = parts(f);
        if (!p) return [[f, b]];
        const names = [...new Set([...(calls.calls[f] ?? []), ...(calls.importCalls[f] ?? [])].map(bodyOf))]
          .filter((n) => p.bodies.has(n))
          .sort();
        return [[f, b, partDigest(p, names), names]];
      });
    },
    blob,
    part: (f, names) => {
      const p = parts(f);
      return p ? partDigest(p, names) : null;
    },
  };
  const result = await harvestRepo(pool, {
    reuse,
    repo,
    // the pool runs `<environment>/bin/python`
    sysPath: harvestSysPath(store, repo, fromIndexRepos(path.dirname(path.dirname(pool.env.python)))),
    ownRoots: own,
    modules,
    zygoteModule,
    entryMs: opts.entryMs,
    repoMs: opts.repoMs,
    entryMemoryMb: opts.entryMemoryMb,
    repoMemoryMb: opts.repoMemoryMb,
    testMs: opts.testMs,
    docsMs: opts.docsMs,
    repoRoot: row.root,
    onEntry: opts.onEntry,
  });
  result.depends = harvestDepends(result, row.root, new Set(store.listFiles(repo).map((f) => f.path)), listing, blob);
  result.rules = HARVEST_RULES;
  putHarvest(store, repo, key, pool.envId, encodeHarvest(store, result));
  return { result, cached: false };
}

/** The stored harvest of a repository if it is still current: same own files, same
 *  names on its sys.path, same files read elsewhere, same harvest id (`harvestId`, see
 *  harvestKey; no worker is needed to know it, see ValidatorPool.probe). */
export function currentHarvest(
  store: IndexStore,
  repo: string,
  harvestId: string,
  listing: FileListing = fileListing(store),
): HarvestResult | null {
  const result = decodeHarvest(store, getHarvest(store, repo, harvestKey(store, repo, harvestId, listing)));
  return result && harvestIsCurrent(result, listing) ? result : null;
}

/** The stored harvest of a repository, whatever its key (for `nnrag witnesses` without running). */
export function storedHarvest(store: IndexStore, repo: string): HarvestResult | null {
  return decodeHarvest(store, getHarvest(store, repo));
}

/** Witnesses of one class (`module.Qualname`), at most n. */
export function witnessesOf(result: HarvestResult | undefined, classId: string, n = 3): Witness[] {
  return (result?.witnesses[classId] ?? []).slice(0, n);
}

/** At most this many provider witnesses go with one request (see providersOf). */
const MAX_PROVIDERS = 64;

/** Witnesses that can build a module for another class's constructor parameter
 *  (ValidationRequest.providers): per witnessed class other than `classId`, its first
 *  witness (called ones come first), without its recorded inputs and outputs; none
 *  larger than `maxChars` of JSON (a witness holding a large value is left out). */
export function providersOf(
  result: HarvestResult | undefined,
  classId: string,
  maxChars = 4000,
  maxCount = MAX_PROVIDERS,
): Record<string, Witness> {
  const out: Record<string, Witness> = {};
  if (!result) return out;
  const chosen = providerOrder(result, maxChars)
    .filter((p) => p.id !== classId)
    .slice(0, maxCount);
  for (const p of chosen.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) out[p.id] = p.w;
  return out;
}

/** The provider candidates of a harvest in the order they are chosen (the classes whose
 *  forward ran first, then the smallest, as the harness orders them): computed once per
 *  harvest and size limit, not for every block that asks. */
const providerOrders = new WeakMap<HarvestResult, Map<number, { id: string; w: Witness }[]>>();
function providerOrder(result: HarvestResult, maxChars: number): { id: string; w: Witness }[] {
  let bySize = providerOrders.get(result);
  if (!bySize) providerOrders.set(result, (bySize = new Map()));
  let order = bySize.get(maxChars);
  if (order) return order;
  const all: { id: string; w: Witness; size: number }[] = [];
  for (const [id, ws] of Object.entries(result.witnesses)) {
    const w = ws[0];
    if (!w) continue;
    const slim: Witness = { args: w.args, kwargs: w.kwargs, params: w.params, entry: w.entry };
    // whether its forward ran (the harness prefers such providers), not the inputs themselves
    if (w.inputs) slim.inputs = { args: [], kwargs: {} };
    const size = JSON.stringify(slim).length;
    if (size <= maxChars) all.push({ id, w: slim, size });
  }
  all.sort((a, b) => Number(!!b.w.inputs) - Number(!!a.w.inputs) || a.size - b.size || (a.id < b.id ? -1 : 1));
  order = all.map(({ id, w }) => ({ id, w }));
  bySize.set(maxChars, order);
  return order;
}

/** Top-level module names of the repository's classes (see ValidationRequest.witnessRepoTops). */
export function repoTops(result: HarvestResult): string[] {
  return [...new Set(result.classes.map((c) => c.split('.')[0]))].sort();
}
