// Modules read on demand. A repository's configured `paths` say where its blocks are
// (they scope discovery); a block's closure may need any other module of the same
// repository (`torch_geometric/typing.py` for `torch_geometric/nn`, `mmocr/registry.py`
// for `mmocr/models`). The Corpus asks this loader for a module name it does not hold;
// the loader finds the file the way Python's path based finder would in the
// repository's sys.path entries (its package roots), reads it from the work tree or,
// for a sparse blobless clone, from git (`git cat-file` fetches the one blob), and
// indexes it like any other content: facts keyed by blob id in the index store, parsed
// only when the store does not have them, the file recorded in `support_files`.
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { factsRow, MAX_FILE_BYTES } from '../indexer/indexer.js';
import { parseBuffer } from '../indexer/parse-one.js';
import { decodePython, gitBlobId } from '../indexer/source.js';
import { sysPathRoots, type IndexStore, type IndexedRepo } from '../store/store.js';
import type { FileFacts } from '../parse/types.js';
import { parserReady } from '../parse/parser.js';
import { isIdentifier } from '../repos/files.js';
import { gitSync } from '../repos/git.js';
import type { CorpusModule, ModuleLoader } from './corpus.js';

export interface OnDemandStats {
  /** modules read on demand */
  loaded: number;
  /** of those, contents the store did not have (parsed now) */
  parsed: number;
  /** files fetched through git (sparse blobless clones) */
  fetched: number;
  /** time spent finding, reading and parsing them */
  ms: number;
}

export class OnDemandLoader implements ModuleLoader {
  readonly stats: OnDemandStats = { loaded: 0, parsed: 0, fetched: 0, ms: 0 };
  /** per remote repository: files and folders of the indexed commit's tree */
  private readonly trees = new Map<string, { files: Set<string>; dirs: Set<string> } | null>();

  constructor(private readonly store: IndexStore) {}

  /** sys.path entries of the repository, relative to its root. */
  private roots(repo: IndexedRepo): string[] {
    return sysPathRoots(repo);
  }

  private isRemote(repo: IndexedRepo): boolean {
    return repo.local === false;
  }

  load(repo: IndexedRepo, name: string): { module: CorpusModule; text: string } | null {
    const parts = name.split('.');
    if (!parts.every(isIdentifier)) return null;
    const t0 = performance.now();
    try {
      for (const root of this.roots(repo)) {
        const base = [root, ...parts].filter(Boolean).join('/');
        // importlib's FileFinder (Language Reference §5.5, PEP 420 "Specification"): in
        // one sys.path entry a folder with __init__ (a regular package) comes before a
        // module file of the same name
        for (const rel of [`${base}/__init__.py`, `${base}.py`]) {
          const buf = this.read(repo, rel);
          if (!buf) continue;
          const m = this.index(repo, rel, name, buf);
          if (m) return m;
        }
      }
      return null;
    } finally {
      this.stats.ms += performance.now() - t0;
    }
  }

  /** Facts of an indexed file whose stored facts an older nnrag wrote (another
   *  FACTS_VERSION): the same bytes (same blob id) parsed again now and stored; null
   *  when the file changed or is gone since it was indexed, or no parser is ready. */
  reparse(repo: IndexedRepo, rel: string, blob: string): FileFacts | null {
    if (!parserReady()) return null;
    const buf = this.read(repo, rel);
    if (!buf || gitBlobId(buf) !== blob) return null;
    const o = parseBuffer(rel, buf);
    this.store.putFacts([factsRow(o)]);
    this.stats.parsed++;
    return o.json ? (JSON.parse(o.json) as FileFacts) : null;
  }

  hasFolder(repo: IndexedRepo, name: string): boolean {
    const parts = name.split('.');
    if (!parts.every(isIdentifier)) return false;
    for (const root of this.roots(repo)) {
      const rel = [root, ...parts].filter(Boolean).join('/');
      if (holdsPython(path.join(repo.root, ...rel.split('/')))) return true;
      if (this.isRemote(repo) && this.tree(repo)?.dirs.has(rel)) return true;
    }
    return false;
  }

  /** The file's bytes from the work tree, else (sparse clone) from git; null when absent. */
  private read(repo: IndexedRepo, rel: string): Buffer | null {
    const file = path.join(repo.root, ...rel.split('/'));
    try {
      const st = statSync(file);
      if (st.isFile() && st.size <= MAX_FILE_BYTES) {
        // like the listing: a symlink may not lead out of the repository
        const real = realpathSync(file);
        const root = realpathSync(repo.root);
        if (real.startsWith(root + path.sep)) return readFileSync(file);
      }
      return null;
    } catch {
      /* not in the work tree */
    }
    if (!this.isRemote(repo) || !this.tree(repo)?.files.has(rel)) return null;
    const rev = repo.revision ?? 'HEAD';
    const buf = gitSync(['cat-file', 'blob', `${rev}:${rel}`], { cwd: repo.root });
    if (!buf || buf.length > MAX_FILE_BYTES) return null;
    this.stats.fetched++;
    return buf;
  }

  /** Paths of the indexed commit's tree (trees are in a blobless clone: no blob fetched). */
  private tree(repo: IndexedRepo): { files: Set<string>; dirs: Set<string> } | null {
    if (this.trees.has(repo.name)) return this.trees.get(repo.name)!;
    const out = gitSync(['ls-tree', '-r', '-z', '--name-only', repo.revision ?? 'HEAD'], { cwd: repo.root });
    let t: { files: Set<string>; dirs: Set<string> } | null = null;
    if (out) {
      t = { files: new Set(), dirs: new Set() };
      for (const p of out.toString('utf8').split('\0')) {
        if (!p.endsWith('.py')) continue;
        t.files.add(p);
        for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) t.dirs.add(p.slice(0, i));
      }
    }
    this.trees.set(repo.name, t);
    return t;
  }

  /** Facts of the content (stored, else parsed now and stored), the file recorded. */
  private index(
    repo: IndexedRepo,
    rel: string,
    name: string,
    buf: Buffer,
  ): { module: CorpusModule; text: string } | null {
    const blob = gitBlobId(buf);
    let facts: FileFacts | null = this.store.hasFacts(blob) ? this.store.getFacts(blob) : null;
    if (!facts) {
      if (this.store.hasFacts(blob) || !parserReady()) return null; // the binder failed on it, or no parser here
      const o = parseBuffer(rel, buf);
      this.store.putFacts([factsRow(o)]);
      this.stats.parsed++;
      if (!o.json) return null;
      facts = JSON.parse(o.json) as FileFacts;
    }
    this.store.putSupportFile(repo.name, rel, name, blob);
    this.stats.loaded++;
    return {
      module: { name, repo: repo.name, path: rel, isPackage: rel.endsWith('/__init__.py'), blob, facts },
      text: decodePython(buf).text,
    };
  }
}

/** A folder that could provide Python modules: it holds a `.py` file, or a subfolder
 *  that does (a folder of data or configuration only is not a package of the code). */
function holdsPython(dir: string, depth = 0): boolean {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  if (entries.some((e) => e.isFile() && e.name.endsWith('.py'))) return true;
  return (
    depth < 2 &&
    entries.some((e) => e.isDirectory() && !e.name.startsWith('.') && holdsPython(path.join(dir, e.name), depth + 1))
  );
}
