// Witness cache and lookup (src/validate/README.md "Witnesses"): one harvest per
// repository, stored in the index store under a key made of the blob ids of every file
// the harvest imports from (the repository and the repositories on its sys.path) and
// the validation environment id (which covers the harness); a re-run with nothing
// changed reads the stored harvest instead of building models again. When the key
// changed (a file was edited), the harvest runs again, but each of its run steps whose
// files are unchanged reuses the previous harvest's answer (harvest.ts RunReuse): the
// files a step depends on are those its run read (the harness's `reads`) and the
// modules those import names from (runDepends).
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
import type { Witness } from '../types.js';
import { harvestRepo, type EntryReport, type HarvestEntry, type HarvestResult, type RunReuse } from './harvest.js';

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

/** The cache key of a repository's harvest: blob ids of the files of every repository
 *  on its sys.path, and the environment id. */
export function harvestKey(
  store: IndexStore,
  repo: string,
  envId: string,
  listing: string = fileListing(store),
): string {
  const root = store.getRepo(repo)?.root;
  return createHash('sha256')
    .update(envId + '\0' + repo + '\0')
    .update(listing)
    .update(root ? docsDigest(root) : '')
    .digest('hex');
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

/** Every indexed file with its blob id, in a fixed order: the part of every repository's
 *  harvest key that is the same for all (read once when several keys are wanted). */
export function fileListing(store: IndexStore): string {
  const lines: string[] = [];
  for (const r of store
    .listRepos()
    .map((x) => x.name)
    .sort()) {
    for (const f of store.listFiles(r).sort((a, b) => a.path.localeCompare(b.path)))
      lines.push(`${r}\0${f.path}\0${f.blob}\n`);
  }
  return lines.join('');
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
  const key = harvestKey(store, repo, pool.envId);
  if (!opts.force) {
    const got = getHarvest(store, repo, key);
    if (got) return { result: JSON.parse(got) as HarvestResult, cached: true };
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
  const blob = diskBlobs();
  const previous = opts.noRunReuse ? null : storedHarvest(store, repo);
  const reuse: RunReuse = {
    envId: pool.envId,
    runs: previous?.runs ?? {},
    ...(previous?.wallStops ? { wallStops: previous.wallStops } : {}),
    depends: (read, e) =>
      runDepends(opts.corpus, repo, row.root, read, e).flatMap((f) => {
        const b = blob(f);
        return b ? [[f, b] as [string, string]] : [];
      }),
    blob,
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
  putHarvest(store, repo, key, pool.envId, JSON.stringify(result));
  return { result, cached: false };
}

/** The stored harvest of a repository if it is still current: same files on its sys.path,
 *  same environment id (no worker is needed to know it, see ValidatorPool.probe). */
export function currentHarvest(store: IndexStore, repo: string, envId: string, listing?: string): HarvestResult | null {
  const got = getHarvest(store, repo, harvestKey(store, repo, envId, listing));
  return got ? (JSON.parse(got) as HarvestResult) : null;
}

/** The stored harvest of a repository, whatever its key (for `nnrag witnesses` without running). */
export function storedHarvest(store: IndexStore, repo: string): HarvestResult | null {
  const got = getHarvest(store, repo);
  return got ? (JSON.parse(got) as HarvestResult) : null;
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
