// RepoCache: turns a ConfiguredRepo into a work tree on disk with a known revision.
//
// * Remote sources (https, ssh, git, file URLs, and local bare repositories through
//   file:// so that --depth works) are cloned shallow (`--depth 1`), blobless
//   (`--filter=blob:none`) and sparse (non-cone patterns that select only `.py` files
//   inside the configured paths plus the `__init__.py` of their ancestor folders), so
//   weights and other large binaries (*.pth, *.bin, *.safetensors, ...) are never
//   downloaded or written. Clones go to a temporary folder renamed into place when
//   complete, so a killed clone never leaves a half repository that looks finished.
//   `update` asks the remote for its HEAD (`git ls-remote`) and fetches + resets only
//   when it moved.
// * Local folders (a git work tree or a plain folder) are used in place; the revision
//   is the HEAD commit when the folder is in a git work tree, else null.
// * Every clone/update/open of a cached repository runs under a per-repository lock
//   (lock.ts), so several processes can share one cache.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, realpath, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConfiguredRepo } from '../config/repos.js';
import { NnragError, UsageError } from '../util/errors.js';
import { writeFileAtomic } from '../util/fs.js';
import { detectPackageRoots, importedNamesOf, listPythonFiles } from './files.js';
import { git } from './git.js';
import { acquireLock, type LockOptions } from './lock.js';
import { isBareRepo, vetSource } from '../config/source.js';

export { gitBlobId } from './git.js';
export {
  listPythonFiles,
  detectPackageRoots,
  moduleNameFor,
  moduleNameCandidates,
  importedNamesOf,
  isIdentifier,
  MAX_PY_FILE_BYTES,
  type PyFile,
  type FileProblem,
} from './files.js';

export interface RepoCheckout {
  name: string;
  /** absolute work tree */
  root: string;
  /** commit sha, null for a plain folder */
  revision: string | null;
  originUrl: string | null;
  /** used in place (not a cache clone) */
  local: boolean;
  /** posix dirs relative to root, '' = root */
  packageRoots: string[];
  /** what prepare did: cloned, updated (new remote head), unchanged (cached), or local */
  action: 'cloned' | 'updated' | 'unchanged' | 'local';
}

export interface RepoCacheOptions extends LockOptions {
  /** Time limit for one git command (default 10 minutes). */
  gitTimeoutMs?: number;
}

/** Recorded in `<checkout>/.git/nnrag-state.json` after every successful operation. */
interface CacheState {
  url: string;
  revision: string;
  sparse: string[];
  complete: boolean;
}

/** Non-cone sparse-checkout patterns (gitignore syntax, anchored with a leading '/')
 *  selecting only `.py` files inside `paths` (all `.py` files when empty), plus the
 *  `__init__.py` of each literal ancestor folder so package roots can be detected. */
export function sparsePatterns(paths: readonly string[]): string[] {
  const out = new Set<string>();
  if (paths.length === 0) return ['*.py'];
  for (const raw of paths) {
    let p = raw.replace(/\/+$/, '');
    while (p.startsWith('./')) p = p.slice(2);
    p = p.replace(/^\/+/, '');
    if (p === '' || p === '.' || p === '**') return ['*.py'];
    // Escape characters that are special at the start of a gitignore line or at its end.
    p = p.replace(/\\/g, '\\\\').replace(/ $/, '\\ ');
    if (p.endsWith('.py')) {
      out.add(`/${p}`);
    } else {
      out.add(`/${p}.py`); // module form: "models_vit" names models_vit.py
      out.add(`/${p}/**/*.py`); // a folder and everything below it
    }
    const segs = p.split('/');
    const firstGlob = segs.findIndex((s) => /[*?[]/.test(s));
    const literal = firstGlob < 0 ? segs.length - 1 : firstGlob;
    for (let i = 1; i <= literal; i++) out.add(`/${segs.slice(0, i).join('/')}/__init__.py`);
    if (firstGlob >= 0 && firstGlob < segs.length - 1) out.add('__init__.py');
  }
  return [...out];
}

/** A file-system-safe, collision-free folder name for a remote source. */
export function cacheKey(name: string, url: string): string {
  const safe =
    name
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^[._]+/, '')
      .slice(0, 80) || 'repo';
  return `${safe}-${createHash('sha1').update(url).digest('hex').slice(0, 10)}`;
}

async function readState(gitDir: string): Promise<CacheState | null> {
  try {
    return JSON.parse(await readFile(path.join(gitDir, 'nnrag-state.json'), 'utf8')) as CacheState;
  } catch {
    return null;
  }
}

async function writeState(gitDir: string, s: CacheState): Promise<void> {
  writeFileAtomic(path.join(gitDir, 'nnrag-state.json'), JSON.stringify(s, null, 1), { createDirs: false });
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export class RepoCache {
  readonly cacheDir: string;
  private readonly opts: RepoCacheOptions;

  constructor(cacheDir: string, opts: RepoCacheOptions = {}) {
    this.cacheDir = path.resolve(cacheDir);
    this.opts = opts;
  }

  /** Make the repository available on disk and describe the checkout. */
  async prepare(spec: ConfiguredRepo, opts: { update?: boolean } = {}): Promise<RepoCheckout> {
    if (spec.url !== null && spec.path !== null)
      throw new UsageError(`repository "${spec.name}": give either a url or a path, not both`);
    if (spec.path !== null) {
      const kind = vetSource(spec.path, `repository "${spec.name}" path`);
      if (kind.kind !== 'path')
        throw new UsageError(`repository "${spec.name}": path ${JSON.stringify(spec.path)} is not a local folder`);
      const abs = path.resolve(kind.path);
      if (isBareRepo(abs)) return this.prepareRemote(spec, pathToFileURL(abs).href, opts);
      return this.prepareLocal(spec, abs);
    }
    if (spec.url === null) throw new UsageError(`repository "${spec.name}" has neither a url nor a path`);
    const kind = vetSource(spec.url, `repository "${spec.name}" url`);
    if (kind.kind === 'path') {
      // A plain path in the url field: a bare repository is cloned, anything else used in place.
      const abs = path.resolve(kind.path);
      if (isBareRepo(abs)) return this.prepareRemote(spec, pathToFileURL(abs).href, opts);
      return this.prepareLocal(spec, abs);
    }
    return this.prepareRemote(spec, kind.url, opts);
  }

  private gitOpts(cwd?: string, input?: string) {
    return { cwd, input, timeoutMs: this.opts.gitTimeoutMs };
  }

  private async packageRoots(spec: ConfiguredRepo, root: string): Promise<string[]> {
    if (spec.packageRoots !== null) return [...new Set(spec.packageRoots.map((r) => r.replace(/\/+$/, '')))].sort();
    const { files } = await listPythonFiles(root, { paths: spec.paths });
    // Ancestor __init__.py files may lie outside the path globs: look on disk. The
    // files' imports are read only when a folder without __init__.py needs a decision.
    return detectPackageRoots(
      files.map((f) => f.path),
      (dir) => existsSync(path.join(root, ...dir.split('/'), '__init__.py')),
      () =>
        files.flatMap((f) => {
          try {
            return importedNamesOf(readFileSync(path.join(root, ...f.path.split('/')), 'latin1'));
          } catch {
            return [];
          }
        }),
    );
  }

  private async prepareLocal(spec: ConfiguredRepo, abs: string): Promise<RepoCheckout> {
    let st;
    try {
      st = await stat(abs);
    } catch {
      throw new UsageError(`repository "${spec.name}": folder ${abs} does not exist`);
    }
    if (!st.isDirectory()) throw new UsageError(`repository "${spec.name}": ${abs} is not a folder`);
    const root = await realpath(abs);
    // the revision, the origin and the package roots are independent: asked at once (two
    // git processes and a walk of the tree; `nnrag index` waits for them before listing)
    const [revision, origin, packageRoots] = await Promise.all([
      // not a git work tree, no commit yet, or not readable by git: no revision
      git(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], this.gitOpts(root)).then(
        (r) => r.stdout.trim() || null,
        () => null,
      ),
      git(['config', '--get', 'remote.origin.url'], this.gitOpts(root)).then(
        (r) => r.stdout.trim() || null,
        () => null,
      ),
      this.packageRoots(spec, root),
    ]);
    return {
      name: spec.name,
      root,
      revision,
      // the origin of a folder git has no commit in is not recorded
      originUrl: revision !== null ? origin : null,
      local: true,
      packageRoots,
      action: 'local',
    };
  }

  private async prepareRemote(spec: ConfiguredRepo, url: string, opts: { update?: boolean }): Promise<RepoCheckout> {
    await mkdir(this.cacheDir, { recursive: true });
    const key = cacheKey(spec.name, url);
    const dir = path.join(this.cacheDir, key);
    const gitDir = path.join(dir, '.git');
    const sparse = sparsePatterns(spec.paths);
    const release = await acquireLock(path.join(this.cacheDir, `${key}.lock`), this.opts);
    let action: RepoCheckout['action'];
    let revision: string;
    try {
      await this.removeLeftovers(key);
      if (!existsSync(gitDir)) {
        if (existsSync(dir)) await rm(dir, { recursive: true, force: true }); // not ours: never completed
        revision = await this.cloneInto(url, dir, key, sparse);
        action = 'cloned';
      } else {
        const state = await readState(gitDir);
        revision = (await git(['rev-parse', 'HEAD'], this.gitOpts(dir))).stdout.trim();
        let needCheckout = !state?.complete || state.revision !== revision || !sameList(state.sparse, sparse);
        action = 'unchanged';
        if (opts.update) {
          const remoteHead = await this.remoteHead(url);
          if (remoteHead !== revision) {
            await writeState(gitDir, { url, revision, sparse, complete: false });
            // `origin` (not the URL) so the partial-clone filter recorded for it applies.
            await git(['fetch', '--quiet', '--depth', '1', '--no-tags', 'origin', 'HEAD'], this.gitOpts(dir));
            await git(['reset', '--quiet', '--hard', 'FETCH_HEAD'], this.gitOpts(dir));
            revision = (await git(['rev-parse', 'HEAD'], this.gitOpts(dir))).stdout.trim();
            action = 'updated';
            needCheckout = !sameList(state?.sparse ?? [], sparse) || !state?.complete;
          }
        }
        if (needCheckout) {
          // A previous run died mid-update, or the paths changed: re-apply and re-check-out.
          await writeState(gitDir, { url, revision, sparse, complete: false });
          await rm(path.join(gitDir, 'index.lock'), { force: true });
          await git(['sparse-checkout', 'set', '--no-cone', '--stdin'], this.gitOpts(dir, sparse.join('\n') + '\n'));
          await git(['reset', '--quiet', '--hard', 'HEAD'], this.gitOpts(dir));
        }
        await writeState(gitDir, { url, revision, sparse, complete: true });
      }
    } finally {
      await release();
    }
    return {
      name: spec.name,
      root: dir,
      revision,
      originUrl: url,
      local: false,
      packageRoots: await this.packageRoots(spec, dir),
      action,
    };
  }

  /** Temporary clones of this repository left by killed processes (we hold its lock). */
  private async removeLeftovers(key: string): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.cacheDir);
    } catch {
      return;
    }
    for (const n of names) {
      if (n.startsWith(`${key}.tmp-`) || n.startsWith(`${key}.lock.stale-`)) {
        await rm(path.join(this.cacheDir, n), { recursive: true, force: true });
      }
    }
  }

  private async remoteHead(url: string): Promise<string> {
    const out = (await git(['ls-remote', '--', url, 'HEAD'], this.gitOpts())).stdout;
    const m = /^([0-9a-f]{40,64})\tHEAD$/m.exec(out);
    if (!m) throw new NnragError(`${url}: the remote has no HEAD (empty repository?)`, 'git');
    return m[1];
  }

  /** Clone into `<key>.tmp-<pid>-<rand>`, check out the sparse patterns, then rename into place. */
  private async cloneInto(url: string, dir: string, key: string, sparse: string[]): Promise<string> {
    const tmp = path.join(this.cacheDir, `${key}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      await git(
        ['clone', '--quiet', '--depth', '1', '--filter=blob:none', '--no-checkout', '--no-tags', '--', url, tmp],
        this.gitOpts(this.cacheDir),
      );
      await git(['sparse-checkout', 'set', '--no-cone', '--stdin'], this.gitOpts(tmp, sparse.join('\n') + '\n'));
      await git(['checkout', '--quiet'], this.gitOpts(tmp));
      const revision = (await git(['rev-parse', 'HEAD'], this.gitOpts(tmp))).stdout.trim();
      await writeState(path.join(tmp, '.git'), { url, revision, sparse, complete: true });
      await rename(tmp, dir);
      return revision;
    } catch (e) {
      await rm(tmp, { recursive: true, force: true });
      if (e instanceof NnragError) throw new NnragError(`cannot clone ${url}: ${e.message}`, 'git');
      throw e;
    }
  }
}
