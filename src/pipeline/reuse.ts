// Warm runs (issue 27, "Warm runs cost nothing"): what a block's stored result was computed
// from (its inputs, `BlockRecord.inputs`), and whether they are still the same, so that
// extract + validate with nothing changed reads the stored record instead of emitting and
// validating again. A block's result depends on
//   - the files its closure read: every module its faithful and kept emission copied from
//     (provenance), its own module, the packages above each (their `__init__` runs first,
//     Language Reference §5.4.2, and re-exports through them) and the modules each imports
//     (the resolver follows those imports, §7.11); compared blob by blob, so changing one
//     file re-validates only the blocks that read it;
//   - the module names of every repository (a new or removed file can change what a name
//     resolves to: every block is redone, which is rare and never wrong), its package roots,
//     whether the sandbox can read its checkout (else the original does not import), and
//     where one checkout lies inside another (their files overlap); not the folder a
//     checkout lies in (issue 28): the stored texts name it `<owner/name>`
//     (validate/places.ts), so a result is the same wherever its files are, and a moved
//     checkout keeps its blocks (recorded values that name a file in a checkout name it
//     `<owner/name>/path` too; `rootsKeyed` keeps the folders where they still name an
//     absolute path, which a move does not rewrite);
//   - what the validation request carries besides the module: call sites, data sites,
//     the class's own witnesses (found in other files of the corpus); the providers (one
//     witness of every other witnessed class, for a block without witnesses of its own)
//     only when a parameter of the class could take one (the harness says which:
//     `providersWanted`), else a harvest that changed any class's witnesses would
//     re-validate every block without witnesses;
//   - the validation environment's id, the pipeline's options, and nnrag's own code.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BlockInputs, BlockRecord } from '../records/block.js';
import { gitBlobId } from '../repos/git.js';
import { importTargets, type CorpusModule } from '../resolve/corpus.js';
import { harnessSource } from '../validate/index.js';
import { sandboxCanRead } from '../validate/environment.js';
import type { Places } from '../validate/places.js';
import type { ValidationResult } from '../validate/types.js';
import type { Workspace } from '../workspace.js';
import { isInside } from '../util/fs.js';

const hash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 32);

let codeCache: string | null = null;

/** Digest of nnrag's own code as it runs (its compiled modules and the validation harness):
 *  another build may emit or validate differently, so nothing it stored is reused. */
export function codeDigest(): string {
  if (codeCache) return codeCache;
  const h = createHash('sha256');
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.js') || name.endsWith('.ts'))
        h.update(path.relative(root, p) + '\0').update(readFileSync(p));
    }
  };
  walk(root);
  h.update(harnessSource().hash);
  return (codeCache = h.digest('hex').slice(0, 32));
}

/** Digest of every repository's name, package roots, priority and module paths (not their
 *  contents), whether the sandbox can read its checkout, and the checkouts it lies in
 *  (with its path there); not the checkout's folder (see the header). */
export function layoutDigest(ws: Workspace): string {
  const h = createHash('sha256');
  const repos = ws.store.listRepos().sort((a, b) => a.name.localeCompare(b.name));
  for (const r of repos) {
    const within = repos
      .filter((o) => o !== r && isInside(o.root, r.root))
      .map((o) => `${o.name}:${path.relative(o.root, r.root)}`);
    const readable = sandboxCanRead(r.root) ? 'readable' : 'unreadable';
    h.update(`${r.name}\0${JSON.stringify(within)}\0${readable}\0${JSON.stringify(r.packageRoots)}\0${r.priority}\n`);
    for (const f of ws.store.listFiles(r.name)) h.update(`${f.path}\0${f.module ?? ''}\n`);
  }
  return h.digest('hex').slice(0, 32);
}

/** Whether a request's checkouts must be keyed by their folders: its recorded values (the
 *  witnesses and providers a harvest recorded, the user's inputs), as stored (a path under
 *  a checkout, the store or nnrag's home named by place, validate/places.ts storePlaces,
 *  and mapped back to this machine's folder where the request is built), still hold an
 *  absolute path, which names a folder of the machine the harvest ran on; a stored
 *  harvest outlives a move of the checkout (its key reads contents), so a result computed
 *  with those values is valid only where they were recorded. */
export function rootsKeyed(values: unknown): boolean {
  return /"\/[^"]/.test(JSON.stringify(values ?? null));
}

/** A request's sys.path as its validation key reads it (pipeline `keyed`, for a request
 *  whose values are not `rootsKeyed`): each checkout named `<owner/name>/path`
 *  (validate/places.ts), with whether the sandbox can read it. `seen` keeps each entry's
 *  answer for the run (every request of a repository has the same sys.path; the
 *  sandbox's test stats every folder above the checkout). */
export function keyedSysPath(
  sysPath: readonly string[],
  places: Places,
  seen: Map<string, string> = new Map(),
): string[] {
  return sysPath.map((p) => {
    let keyed = seen.get(p);
    if (keyed === undefined) {
      const named = places.name(p);
      keyed = sandboxCanRead(p) ? named : `${named}\0unreadable`;
      seen.set(p, keyed);
    }
    return keyed;
  });
}

/** The files a block's result was computed from (see the header), with their blob ids. */
export function closureFiles(ws: Workspace, id: string, records: readonly BlockRecord[]): [string, string, string][] {
  const corpus = ws.corpus();
  const out = new Map<string, [string, string, string]>();
  const add = (m: CorpusModule | undefined) => {
    if (m) out.set(`${m.repo}\0${m.path}`, [m.repo, m.path, m.blob]);
  };
  const withPackages = (name: string, repo: string) => {
    const parts = name.split('.');
    for (let i = 1; i <= parts.length; i++) add(corpus.module(parts.slice(0, i).join('.'), repo));
  };
  const read = new Set<CorpusModule>();
  const own = ws.blockModule(id)?.mod;
  if (own) read.add(own);
  for (const r of records) {
    for (const p of r.provenance) {
      const m = corpus.ownModule(p.repo, p.module);
      if (m) read.add(m);
    }
  }
  for (const m of read) {
    add(m);
    withPackages(m.name, m.repo);
    for (const st of m.facts.statements)
      for (const e of st.imports) for (const t of importTargets(m, e)) withPackages(t, m.repo);
  }
  return [...out.values()].sort((a, b) => a[0].localeCompare(b[0]) || a[1].localeCompare(b[1]));
}

/** The parts of a block's inputs that are not per file, as digests. */
export function inputDigests(parts: {
  code: string;
  env: string;
  options: unknown;
  layout: string;
  request: unknown;
  /** the request's parts, to say which changed: its call and data sites, the class's own
   *  witnesses (and the user's inputs) */
  sites?: unknown;
  witnesses?: unknown;
  /** the request's providers, when it has them */
  providers?: unknown;
}): Omit<BlockInputs, 'files'> {
  return {
    code: parts.code,
    env: parts.env,
    options: hash(JSON.stringify(parts.options)),
    layout: parts.layout,
    request: hash(JSON.stringify(parts.request)),
    ...(parts.sites !== undefined ? { sites: hash(JSON.stringify(parts.sites)) } : {}),
    ...(parts.witnesses !== undefined ? { witnesses: hash(JSON.stringify(parts.witnesses)) } : {}),
    ...(parts.providers !== undefined ? { providers: hash(JSON.stringify(parts.providers)) } : {}),
  };
}

/** Whether a validation given providers could have used them: the harness named a
 *  parameter they could fill, or did not say although the class was instantiated (a
 *  result from before it said: counted in). */
export function providersRelevant(r: Pick<ValidationResult, 'providersWanted' | 'stages'>): boolean {
  if (r.providersWanted) return r.providersWanted.length > 0;
  return !!r.stages.instantiate && r.stages.instantiate !== 'skip';
}

/** Current blob ids of files, from the index (indexed and on-demand modules), else read
 *  from disk now; null for a file that is gone. */
export class Blobs {
  private readonly byRepo = new Map<string, Map<string, string>>();
  constructor(private readonly ws: Workspace) {}

  get(repo: string, rel: string): string | null {
    let m = this.byRepo.get(repo);
    if (!m) {
      m = new Map();
      for (const f of this.ws.store.listFiles(repo)) m.set(f.path, f.blob);
      this.byRepo.set(repo, m);
    }
    const got = m.get(rel);
    if (got !== undefined) return got;
    // modules read on demand (outside the indexed paths): hashed from disk
    const root = this.ws.store.getRepo(repo)?.root;
    let blob: string | null = null;
    try {
      if (root) blob = gitBlobId(readFileSync(path.join(root, ...rel.split('/'))));
    } catch {
      blob = null;
    }
    m.set(rel, blob ?? '');
    return blob;
  }
}

/** Why the stored inputs differ from the current ones, or null when they are the same. */
export function inputsChanged(
  stored: BlockInputs | undefined,
  now: Omit<BlockInputs, 'files'>,
  blobs: Blobs,
): string | null {
  if (!stored) return 'no stored inputs';
  if (stored.code !== now.code) return 'nnrag changed';
  if (stored.env !== now.env) return 'validation environment changed';
  if (stored.options !== now.options) return 'options changed';
  if (stored.layout !== now.layout) return 'files were added, removed or moved';
  if (stored.request !== now.request) {
    // which part, where the stored inputs say
    if (stored.witnesses !== undefined && stored.witnesses !== now.witnesses) return "the class's witnesses changed";
    if (stored.sites !== undefined && stored.sites !== now.sites) return 'call sites or data sites changed';
    return 'call sites, data sites or witnesses changed';
  }
  // stored only when the providers could bear on the result (providersRelevant)
  if (stored.providers !== undefined && stored.providers !== now.providers) return 'the providers changed';
  const changed = stored.files
    .filter(([repo, rel, blob]) => blobs.get(repo, rel) !== blob)
    .map(([repo, rel]) => `${repo}:${rel}`);
  if (changed.length)
    return `changed: ${changed.slice(0, 5).join(', ')}${changed.length > 5 ? ` and ${changed.length - 5} more` : ''}`;
  return null;
}
