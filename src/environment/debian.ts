// The package set of a validation root filesystem (`nnrag env create DIR --store S`,
// `nnrag env sync DIR --store S`): which distributions the store's repositories and blocks
// need, which Debian package provides each (dh-python's PyPI-to-Debian table, then the
// Debian Python Policy's `python3-<name>`, §4.3), installing those that exist with apt
// inside the root filesystem, the rest from local wheels with `pip --no-index` when the
// user has them, and a manifest (`var/lib/nnrag/environment.json` in the root filesystem)
// that says what was asked for, what was installed and what has no Debian package, by name.
//
// The root filesystem's Debian package set (`var/lib/dpkg/status`) is part of the
// environment id (environment.ts), so every stored validation is redone after a change.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import path from 'node:path';
import { NnragError } from '../util/errors.js';
import { debianPackageFor, type RepoRequirements } from './repo-requirements.js';
import { normalizeDistName } from './names.js';
import { parseAptPolicy } from './apt.js';

/** One distribution the store needs. */
export interface EnvNeed {
  distribution: string;
  /** top-level import names the blocks use for it (empty when only declared) */
  modules: string[];
  /** repositories that import (`import`, with block counts) or declare (`declared`) it */
  neededBy: { repo: string; why: 'import' | 'declared'; blocks?: number }[];
  /** an indexed repository of the store provides its import name: blocks intern it and
   *  originals import it from that repository (nothing to install) */
  indexedBy?: string;
}

export type PackageStatus = 'installed' | 'present' | 'no-package' | 'failed' | 'wheel' | 'indexed';

export interface ManifestEntry extends EnvNeed {
  /** the Debian package tried first (dh-python's table, else python3-<distribution>) */
  debian: string;
  /** the Debian package that provides it, when one does */
  package: string | null;
  status: PackageStatus;
  /** apt's or pip's message when the install failed */
  error?: string;
  /** the wheel file installed with pip --no-index */
  wheel?: string;
}

export interface EnvManifest {
  version: 1;
  suite: string;
  updated: string;
  /** Debian packages given with --packages */
  packages: string[];
  entries: ManifestEntry[];
}

const MANIFEST = 'var/lib/nnrag/environment.json';
// distributions no Debian package can stand for: the interpreter itself and pip's tooling
const NOT_A_PACKAGE = new Set(['python', 'pip', 'setuptools', 'wheel']);

/** What the store needs from the environment: every third-party distribution its blocks
 *  import, and what its repositories declare for installation (group `install`, without
 *  an environment marker, PEP 508: a marker makes it conditional). */
export function storeNeeds(reqs: RepoRequirements[], indexed: Map<string, string> = new Map()): EnvNeed[] {
  const out = new Map<string, EnvNeed>();
  const need = (dist: string, repo: string, why: 'import' | 'declared', module?: string, blocks?: number) => {
    const key = normalizeDistName(dist);
    if (NOT_A_PACKAGE.has(key)) return;
    let n = out.get(key);
    if (!n) out.set(key, (n = { distribution: dist, modules: [], neededBy: [] }));
    if (module && !n.modules.includes(module)) n.modules.push(module);
    const by = n.neededBy.find((b) => b.repo === repo && b.why === why);
    if (by) by.blocks = (by.blocks ?? 0) + (blocks ?? 0);
    else n.neededBy.push({ repo, why, ...(blocks ? { blocks } : {}) });
  };
  for (const r of reqs) {
    for (const i of r.imports) need(i.distribution, r.repo, 'import', i.module, i.blocks);
    for (const d of r.declared) if (d.group === 'install' && !d.spec.includes(';')) need(d.name, r.repo, 'declared');
  }
  // the distribution's import names: what the blocks import, else its own name as a module
  // (PEP 503 name with `_`, as most distributions are imported: mmengine, timm)
  for (const n of out.values()) {
    const names = n.modules.length ? n.modules : [normalizeDistName(n.distribution).replace(/-/g, '_')];
    const by = names.map((m) => indexed.get(m)).find(Boolean);
    if (by) n.indexedBy = by;
  }
  return [...out.values()].sort((a, b) => a.distribution.localeCompare(b.distribution));
}

/** Debian packages that could provide a distribution, in order: dh-python's table (or the
 *  policy name of the distribution), then the policy name of each import name (Debian
 *  Python Policy §4.3 names a module's package `python3-<module>`: `sklearn` →
 *  python3-sklearn). */
export function debianCandidatesFor(n: Pick<EnvNeed, 'distribution' | 'modules'>): string[] {
  const out = [debianPackageFor(n.distribution)];
  for (const m of n.modules) {
    const p = `python3-${m.toLowerCase().replace(/[_.]+/g, '-')}`;
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

// ------------------------------------------------------------------ the root filesystem

/** Installed Debian packages of a root filesystem, `name=version`, sorted. */
export function installedDebianPackages(rootfs: string): string[] {
  let text: string;
  try {
    text = readFileSync(path.join(rootfs, 'var/lib/dpkg/status'), 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const para of text.split(/\n\n+/)) {
    const pkg = /^Package:\s*(\S+)/m.exec(para)?.[1];
    const status = /^Status:.*\binstalled$/m.test(para);
    const version = /^Version:\s*(\S+)/m.exec(para)?.[1];
    if (pkg && status) out.push(`${pkg}=${version ?? ''}`);
  }
  return out.sort();
}

/** Digest of a root filesystem's package set (for the environment id). */
export function packageSetDigest(rootfs: string): string {
  return createHash('sha256').update(installedDebianPackages(rootfs).join('\n')).digest('hex').slice(0, 16);
}

export function readManifest(rootfs: string): EnvManifest | null {
  try {
    return JSON.parse(readFileSync(path.join(rootfs, MANIFEST), 'utf8')) as EnvManifest;
  } catch {
    return null;
  }
}

function writeManifest(rootfs: string, m: EnvManifest): void {
  mkdirSync(path.dirname(path.join(rootfs, MANIFEST)), { recursive: true });
  writeFileSync(path.join(rootfs, MANIFEST), JSON.stringify(m, null, 1) + '\n');
}

interface Run {
  code: number;
  out: string;
}

/** Run a command inside the root filesystem (chroot, as root), output collected. */
function inRoot(rootfs: string, cmd: string[], onLog?: (l: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn('chroot', [rootfs, ...cmd], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', DEBIAN_FRONTEND: 'noninteractive', HOME: '/root' },
    });
    let out = '';
    const on = (d: Buffer) => {
      const s = d.toString();
      out += s;
      if (out.length > 1 << 20) out = out.slice(-(1 << 19));
      for (const line of s.split('\n')) if (line.trim()) onLog?.(line);
    };
    p.stdout.on('data', on);
    p.stderr.on('data', on);
    p.on('error', (e) => reject(new NnragError(`cannot run ${cmd[0]} in ${rootfs}: ${e.message}`)));
    p.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

/** /proc inside the root filesystem while packages are installed (maintainer scripts read
 *  it), and the host's resolver configuration when the root filesystem has none. */
async function withMounts<T>(rootfs: string, f: () => Promise<T>): Promise<T> {
  const resolv = path.join(rootfs, 'etc/resolv.conf');
  if (!existsSync(resolv) && existsSync('/etc/resolv.conf')) copyFileSync('/etc/resolv.conf', resolv);
  const proc = path.join(rootfs, 'proc');
  const mounted = await new Promise<boolean>((resolve) => {
    const p = spawn('mount', ['-t', 'proc', 'proc', proc], { stdio: 'ignore' });
    p.on('error', () => resolve(false));
    p.on('close', (c) => resolve(c === 0));
  });
  try {
    return await f();
  } finally {
    if (mounted)
      await new Promise<void>((resolve) =>
        spawn('umount', ['-l', proc], { stdio: 'ignore' })
          .on('close', () => resolve())
          .on('error', () => resolve()),
      );
  }
}

/** Debian's candidate version of each package in the root filesystem's apt lists (null:
 *  no such package in its suite). */
async function rootfsCandidates(rootfs: string, pkgs: string[]): Promise<Map<string, string | null>> {
  if (!pkgs.length) return new Map();
  const r = await inRoot(rootfs, ['apt-cache', 'policy', ...pkgs]);
  return parseAptPolicy(r.out, pkgs);
}

/** apt-get install, all at once; when that fails, one package at a time, so one broken
 *  package does not keep the others out. Returns the error per package that failed. */
async function aptInstall(rootfs: string, pkgs: string[], onLog?: (l: string) => void): Promise<Map<string, string>> {
  const failed = new Map<string, string>();
  if (!pkgs.length) return failed;
  const base = ['apt-get', 'install', '-y', '-q', '--no-install-recommends'];
  const all = await inRoot(rootfs, [...base, ...pkgs], onLog);
  if (all.code !== 0) {
    for (const p of pkgs) {
      const one = await inRoot(rootfs, [...base, p], onLog);
      if (one.code !== 0) failed.set(p, lastLines(one.out));
    }
  }
  await inRoot(rootfs, ['apt-get', 'clean']);
  return failed;
}

function lastLines(s: string): string {
  return (
    s
      .trim()
      .split('\n')
      .filter((l) => /^E:|error|Error/.test(l))
      .slice(-3)
      .join(' | ')
      .slice(0, 500) || s.trim().slice(-300)
  );
}

/** The first `deb URL SUITE COMPONENTS…` source of a root filesystem (what debootstrap
 *  writes to etc/apt/sources.list), or null. */
function aptSource(rootfs: string): { url: string; suite: string; components: string[] } | null {
  try {
    for (const line of readFileSync(path.join(rootfs, 'etc/apt/sources.list'), 'utf8').split('\n')) {
      const m = /^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.+)$/.exec(line);
      if (m) return { url: m[1].replace(/\/+$/, ''), suite: m[2], components: m[3].trim().split(/\s+/) };
    }
  } catch {
    /* no sources.list */
  }
  return null;
}

/** Debian's Contents index: for each entry, the python3-* package that ships
 *  `dist-packages/<module>/__init__.py`, `<module>.py` or an extension module
 *  `<module>.cpython-*.so` for one of its import names (Debian Python Policy §4.2: public
 *  modules live in /usr/lib/python3/dist-packages), or the distribution's `.dist-info` /
 *  `.egg-info` (PEP 376; PEP 503 names with `_`). The `Contents-<arch>.gz` and
 *  `Contents-all.gz` files of the root filesystem's apt source are read as a stream; they
 *  only choose package names, which apt then installs from its verified lists (apt-file
 *  would refuse a mirror whose Contents and Release disagree mid-sync). Keys: PEP 503 names. */
async function contentsLookup(
  rootfs: string,
  entries: ManifestEntry[],
  log?: (l: string) => void,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const src = aptSource(rootfs);
  if (!src) {
    log?.('no apt source in the root filesystem: Contents not searched');
    return out;
  }
  const archRun = await inRoot(rootfs, ['dpkg', '--print-architecture']);
  const arch = archRun.out.trim() || 'amd64';
  const want = new Map<string, string>(); // dist-packages entry stem → entry key
  const wantDist = new Map<string, string>();
  for (const e of entries) {
    const key = normalizeDistName(e.distribution);
    for (const m of e.modules) want.set(m, key);
    wantDist.set(key.replace(/-/g, '_'), key);
  }
  const PREFIX = 'usr/lib/python3/dist-packages/';
  for (const comp of src.components) {
    for (const file of [`Contents-${arch}.gz`, 'Contents-all.gz']) {
      const url = `${src.url}/dists/${src.suite}/${comp}/${file}`;
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(300_000) });
        if (!res.ok || !res.body) {
          log?.(`${url}: HTTP ${res.status}`);
          continue;
        }
        const lines = createInterface({
          input: Readable.fromWeb(res.body as never).pipe(createGunzip()),
          crlfDelay: Infinity,
        });
        for await (const line of lines) {
          if (!line.startsWith(PREFIX)) continue;
          const sp = line.search(/\s+\S+$/);
          if (sp < 0) continue;
          const p = line.slice(PREFIX.length, sp);
          const slash = p.indexOf('/');
          const head = slash < 0 ? p : p.slice(0, slash);
          let key: string | undefined;
          if (slash < 0) key = want.get(head.replace(/(\.cpython-[^/]*\.so|\.py)$/, ''));
          else if (p.slice(slash) === '/__init__.py') key = want.get(head);
          const info = /^(.+?)-[^-/]*\.(dist|egg)-info$/.exec(head);
          if (!key && info) key = wantDist.get(normalizeDistName(info[1]).replace(/-/g, '_'));
          if (!key || out.has(key)) continue;
          const pkg = line
            .slice(sp)
            .trim()
            .split(',')
            .map((x) => x.split('/').pop()!)
            .find((x) => x.startsWith('python3-'));
          if (pkg) out.set(key, pkg);
        }
      } catch (e) {
        log?.(`${url}: ${(e as Error).message}`);
      }
    }
  }
  log?.(
    `Debian's Contents index: ${out.size} of ${entries.length} found (${[...out].map(([k, p]) => `${k} → ${p}`).join(', ') || 'none'})`,
  );
  return out;
}

/** The wheel files of a folder that provide a distribution (PEP 427 file names: the
 *  distribution part with `-`, `.` and `_` all as `_`). */
export function wheelsFor(dir: string, dist: string): string[] {
  const want = normalizeDistName(dist).replace(/-/g, '_');
  let files: string[] = [];
  try {
    files = readdirSync(dir);
  } catch {
    return [];
  }
  return files
    .filter((f) => f.endsWith('.whl') && normalizeDistName(f.split('-')[0]).replace(/-/g, '_') === want)
    .sort();
}

export interface SyncOptions {
  /** Debian suite of the root filesystem, recorded in the manifest */
  suite?: string;
  /** extra Debian packages (--packages), installed as given */
  packages?: string[];
  /** folder of wheels for what Debian has not: `pip install --no-index --find-links` */
  wheels?: string;
  onLog?: (line: string) => void;
}

export interface SyncResult {
  manifest: EnvManifest;
  /** Debian packages installed by this run */
  installed: string[];
  /** entries whose distribution has no Debian package (and no wheel) */
  missing: ManifestEntry[];
  failed: ManifestEntry[];
  before: string;
  after: string;
}

/** Install into a root filesystem what `needs` asks for and it does not have yet; the
 *  manifest keeps every need with its outcome (none is dropped). */
export async function syncEnvironment(rootfs: string, needs: EnvNeed[], opts: SyncOptions = {}): Promise<SyncResult> {
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    throw new NnragError(
      'installing packages into a root filesystem needs root (apt-get in a chroot); run it with sudo',
    );
  if (!existsSync(path.join(rootfs, 'var/lib/dpkg/status')))
    throw new NnragError(`${rootfs} is not a root filesystem made by \`nnrag env create\` (no var/lib/dpkg/status)`);
  if (opts.wheels && !existsSync(opts.wheels)) throw new NnragError(`--wheels: ${opts.wheels} does not exist`);
  const log = opts.onLog;
  const before = packageSetDigest(rootfs);
  const old = readManifest(rootfs);
  const entries = new Map<string, ManifestEntry>();
  for (const e of old?.entries ?? []) entries.set(normalizeDistName(e.distribution), e);
  return withMounts(rootfs, async () => {
    log?.('apt-get update in the root filesystem');
    const upd = await inRoot(rootfs, ['apt-get', 'update', '-q'], log);
    if (upd.code !== 0) throw new NnragError(`apt-get update failed in ${rootfs}: ${lastLines(upd.out)}`);
    const installedPkgs = () => new Set(installedDebianPackages(rootfs).map((p) => p.split('=')[0]));
    const have = installedPkgs();
    const cands = await rootfsCandidates(rootfs, [
      ...new Set(needs.filter((n) => !n.indexedBy).flatMap(debianCandidatesFor)),
    ]);
    const toInstall = new Set<string>(opts.packages ?? []);
    const fresh: ManifestEntry[] = [];
    for (const n of needs) {
      const key = normalizeDistName(n.distribution);
      const prev = entries.get(key);
      if (n.indexedBy) {
        const e: ManifestEntry = { ...n, debian: debianPackageFor(n.distribution), package: null, status: 'indexed' };
        entries.set(key, e);
        fresh.push(e);
        continue;
      }
      const tries = debianCandidatesFor(n);
      const pkg = tries.find((p) => have.has(p)) ?? tries.find((p) => cands.get(p)) ?? null;
      const e: ManifestEntry = {
        ...n,
        debian: tries[0],
        package: pkg,
        status: pkg ? (have.has(pkg) ? 'present' : 'installed') : 'no-package',
      };
      if (prev?.status === 'wheel' && !pkg) Object.assign(e, { status: 'wheel', wheel: prev.wheel });
      if (e.status === 'installed') toInstall.add(pkg!);
      entries.set(key, e);
      fresh.push(e);
    }
    // what the names did not find: Debian's Contents index, which package ships the
    // import name's module or the distribution's metadata under dist-packages
    const unfound = fresh.filter((e) => e.status === 'no-package');
    if (unfound.length) {
      const shipped = await contentsLookup(rootfs, unfound, log);
      for (const e of unfound) {
        const pkg = shipped.get(normalizeDistName(e.distribution));
        if (!pkg) continue;
        Object.assign(e, { package: pkg, status: have.has(pkg) ? 'present' : 'installed' });
        if (e.status === 'installed') toInstall.add(pkg);
      }
    }
    log?.(`${toInstall.size} Debian packages to install: ${[...toInstall].join(' ') || '(none)'}`);
    const failed = await aptInstall(rootfs, [...toInstall], log);
    for (const e of fresh) {
      if (e.package && failed.has(e.package)) Object.assign(e, { status: 'failed', error: failed.get(e.package) });
    }
    const extraFailed = (opts.packages ?? []).filter((p) => failed.has(p));
    if (extraFailed.length)
      log?.(`--packages not installed: ${extraFailed.map((p) => `${p} (${failed.get(p)})`).join('; ')}`);
    if (opts.wheels)
      await installWheels(
        rootfs,
        opts.wheels,
        fresh.filter((e) => e.status === 'no-package' || e.status === 'failed'),
        log,
      );
    const now = installedPkgs();
    const manifest: EnvManifest = {
      version: 1,
      suite: opts.suite ?? old?.suite ?? 'trixie',
      updated: new Date().toISOString(),
      packages: [...new Set([...(old?.packages ?? []), ...(opts.packages ?? []).filter((p) => !failed.has(p))])].sort(),
      entries: [...entries.values()].sort((a, b) => a.distribution.localeCompare(b.distribution)),
    };
    writeManifest(rootfs, manifest);
    return {
      manifest,
      installed: [...toInstall].filter((p) => now.has(p) && !have.has(p)).sort(),
      missing: manifest.entries.filter((e) => e.status === 'no-package'),
      failed: manifest.entries.filter((e) => e.status === 'failed'),
      before,
      after: packageSetDigest(rootfs),
    };
  });
}

/** The wheels of `dir` for entries Debian cannot provide, with pip from Debian
 *  (python3-pip) and `--no-index` (nothing is downloaded; a wheel whose dependencies are
 *  not in the folder fails and keeps its entry's status). Debian marks its Python as
 *  externally managed (PEP 668), hence `--break-system-packages`; pip installs under
 *  /usr/local, apart from Debian's files. */
async function installWheels(
  rootfs: string,
  dir: string,
  entries: ManifestEntry[],
  log?: (l: string) => void,
): Promise<void> {
  const want = entries.map((e) => ({ e, files: wheelsFor(dir, e.distribution) })).filter((w) => w.files.length);
  if (!want.length) {
    log?.(`no wheel in ${dir} for ${entries.map((e) => e.distribution).join(', ') || 'anything missing'}`);
    return;
  }
  const pip = await aptInstall(rootfs, ['python3-pip'], log);
  if (pip.size) throw new NnragError(`cannot install python3-pip for --wheels: ${pip.get('python3-pip')}`);
  const stage = path.join(rootfs, 'tmp/nnrag-wheels');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  try {
    for (const f of readdirSync(dir)) if (f.endsWith('.whl')) copyFileSync(path.join(dir, f), path.join(stage, f));
    for (const { e, files } of want) {
      const r = await inRoot(
        rootfs,
        [
          'python3',
          '-m',
          'pip',
          'install',
          '--no-index',
          '--find-links',
          '/tmp/nnrag-wheels',
          '--break-system-packages',
          '--no-cache-dir',
          '--root-user-action=ignore',
          e.distribution,
        ],
        log,
      );
      if (r.code === 0) Object.assign(e, { status: 'wheel', wheel: files[files.length - 1], error: undefined });
      else Object.assign(e, { error: `pip --no-index: ${lastLines(r.out)}` });
    }
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
