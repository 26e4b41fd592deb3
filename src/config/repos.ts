// Repository configuration: which repositories to index and how much of each.
//
// Accepts nn-rag's `repo_config.json` format, an object keyed by repository name:
//   { "huggingface/pytorch-image-models": {
//       "url": "https://github.com/huggingface/pytorch-image-models.git",
//       "priority": 1, "paths": ["timm/layers", "timm/models"], "description": "..." } }
// plus two nnrag extensions: "path" (a local folder or bare repository, used instead of
// a URL; relative to the config file) and "package_roots" (folders that are sys.path
// roots, overriding detection, '' or "." for the repository root).
// `paths` are path globs inside the repository (see scope.ts) that scope the sparse
// checkout and the indexing. Also builds a ConfiguredRepo from a `--repo PATH_OR_URL` argument.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { UsageError } from '../util/errors.js';
import { isBareRepo, nameFromUrl, vetSource } from './source.js';
import { normalizeRelPath } from './scope.js';

export {
  type Scope,
  matchGlob,
  inScope,
  symbolMatches,
  symbolInScope,
  repoMatches,
  pathInScope,
  globCouldMatchBelow,
  normalizeRelPath,
} from './scope.js';

/** A repository as the configuration (or the command line) asks for it, before it is
 *  fetched and indexed; the index's record of it is an `IndexedRepo` (store/store.ts). */
export interface ConfiguredRepo {
  /** `owner/name` (config key, or derived from the URL / folder name). */
  name: string;
  /** Remote or bare git source (https, ssh, git, file URL). */
  url: string | null;
  /** Local folder used in place (absolute). */
  path: string | null;
  /** nn-rag priority: lower numbers come first among the other repositories an import
   *  of a repository falls back to (its import universe, src/resolve/corpus.ts). */
  priority: number;
  /** Path globs inside the repository; empty = everything. */
  paths: string[];
  description: string | null;
  /** sys.path roots relative to the repository root ('' = root); null = detect. */
  packageRoots: string[] | null;
}

const DEFAULT_PRIORITY = 1;
const KNOWN_KEYS = new Set(['url', 'path', 'priority', 'paths', 'description', 'package_roots', 'packageRoots']);

/** Validate a path glob / folder written in a config or on the command line. */
export function checkRelPattern(p: string, where: string): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(p))
    throw new UsageError(`${where}: ${JSON.stringify(p)} contains control characters`);
  if (p.includes('\\')) throw new UsageError(`${where}: ${JSON.stringify(p)}: use "/" as the path separator`);
  if (/^\/|^[A-Za-z]:/.test(p) && p !== '/') {
    throw new UsageError(`${where}: ${JSON.stringify(p)} must be relative to the repository root`);
  }
  const n = normalizeRelPath(p);
  if (n.split('/').includes('..')) throw new UsageError(`${where}: ${JSON.stringify(p)} must not contain ".."`);
  return n;
}

function stringList(v: unknown, where: string): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new UsageError(`${where} must be a list of strings`);
  }
  return v as string[];
}

/** Parse a config object (already JSON-decoded). `file` is used in messages and to
 *  resolve relative "path" entries. */
export function parseRepoConfig(data: unknown, file: string): ConfiguredRepo[] {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new UsageError(`${file}: the top level must be an object keyed by repository name ("owner/name": {...})`);
  }
  const baseDir = path.dirname(path.resolve(file));
  const specs: ConfiguredRepo[] = [];
  for (const [key, value] of Object.entries(data as Record<string, unknown>)) {
    const at = `${file}: repository "${key}"`;
    if (key.trim() === '' || key !== key.trim())
      throw new UsageError(
        `${file}: repository names must be non-empty without surrounding spaces (got ${JSON.stringify(key)})`,
      );
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new UsageError(`${at}: expected an object like {"url": ..., "paths": [...]}`);
    }
    const v = value as Record<string, unknown>;
    for (const k of Object.keys(v)) {
      if (!KNOWN_KEYS.has(k) && !k.startsWith('_')) {
        throw new UsageError(
          `${at}: unknown field "${k}" (known: url, path, priority, paths, description, package_roots)`,
        );
      }
    }
    let url: string | null = null;
    let local: string | null = null;
    if (v.url !== undefined && v.url !== null) {
      if (typeof v.url !== 'string') throw new UsageError(`${at}: "url" must be a string`);
      const kind = vetSource(v.url, `${at}: "url"`);
      if (kind.kind === 'url') url = kind.url;
      else local = path.resolve(baseDir, kind.path);
    }
    if (v.path !== undefined && v.path !== null) {
      if (typeof v.path !== 'string') throw new UsageError(`${at}: "path" must be a string`);
      if (url !== null || local !== null) throw new UsageError(`${at}: give either "url" or "path", not both`);
      const kind = vetSource(v.path, `${at}: "path"`);
      if (kind.kind !== 'path')
        throw new UsageError(`${at}: "path" must be a local folder; use "url" for ${JSON.stringify(v.path)}`);
      local = path.resolve(baseDir, kind.path);
    }
    if (url === null && local === null)
      throw new UsageError(`${at}: needs a "url" (git URL) or a "path" (local folder)`);
    // A local bare repository is cloned like a remote one (file:// so --depth works).
    if (local !== null && isBareRepo(local)) {
      url = pathToFileURL(local).href;
      local = null;
    }
    let priority = DEFAULT_PRIORITY;
    if (v.priority !== undefined && v.priority !== null) {
      if (typeof v.priority !== 'number' || !Number.isFinite(v.priority))
        throw new UsageError(`${at}: "priority" must be a number`);
      priority = v.priority;
    }
    const paths =
      v.paths === undefined || v.paths === null
        ? []
        : stringList(v.paths, `${at}: "paths"`).map((p, i) => checkRelPattern(p, `${at}: "paths"[${i}]`));
    let description: string | null = null;
    if (v.description !== undefined && v.description !== null) {
      if (typeof v.description !== 'string') throw new UsageError(`${at}: "description" must be a string`);
      description = v.description;
    }
    const rootsRaw = v.package_roots ?? v.packageRoots;
    const packageRoots =
      rootsRaw === undefined || rootsRaw === null
        ? null
        : stringList(rootsRaw, `${at}: "package_roots"`).map((p, i) =>
            checkRelPattern(p, `${at}: "package_roots"[${i}]`).replace(/\/$/, ''),
          );
    specs.push({ name: key, url, path: local, priority, paths, description, packageRoots });
  }
  return specs;
}

/** Read and validate a `repo_config.json` file. */
export function loadRepoConfig(file: string): ConfiguredRepo[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`${file}: cannot read repository config: ${(e as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${file}: not valid JSON: ${(e as Error).message}`);
  }
  return parseRepoConfig(data, file);
}

/** ConfiguredRepo for `--repo PATH_OR_URL`. Order: URL; a name configured in `config`
 *  (`owner/name` shorthand is never guessed into a URL); an existing local folder
 *  (a bare repository is cloned through file://, a work tree or plain folder used in place). */
export function configuredRepoFromArg(arg: string, config: readonly ConfiguredRepo[] = []): ConfiguredRepo {
  const kind = vetSource(arg, '--repo');
  const base = { priority: DEFAULT_PRIORITY, paths: [] as string[], description: null, packageRoots: null };
  if (kind.kind === 'url') return { ...base, name: nameFromUrl(kind.url), url: kind.url, path: null };
  const configured = config.find((s) => s.name === arg);
  if (configured) return configured;
  const abs = path.resolve(kind.path);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    /* reported below */
  }
  if (!isDir) {
    const hint = /^[\w.-]+\/[\w.-]+$/.test(arg)
      ? ' ("owner/name" is only accepted when the repository config defines it; otherwise give a URL)'
      : '';
    throw new UsageError(
      `--repo ${JSON.stringify(arg)}: not a URL, a configured repository, or an existing folder${hint}`,
    );
  }
  if (isBareRepo(abs)) {
    return {
      ...base,
      name: path.basename(abs).replace(/\.git$/, '') || 'repo',
      url: pathToFileURL(abs).href,
      path: null,
    };
  }
  return { ...base, name: path.basename(abs) || 'repo', url: null, path: abs };
}
