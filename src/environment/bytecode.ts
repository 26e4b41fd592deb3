// Bytecode of a virtual environment, shared with the environments beside it. The sandbox
// binds an environment read-only, so every module it imports must have its bytecode
// compiled at install, or each import compiles the source again (torch: about 6,500
// files, half a minute of CPU per environment). uv installs a wheel from its cache by
// hardlink: two environments of the same interpreter that install the same wheel hold the
// very same source files (one inode). A cached bytecode file (PEP 3147:
// `__pycache__/<name>.<cache tag>.pyc`) records in its header (PEP 552) the source's
// modification time and size, or a hash of its bytes; a source file that is the same inode
// has the same time, size and bytes, so the other environment's bytecode is valid here
// too. It is hardlinked instead of compiled (`shareBytecode`), and only what remains is
// compiled (`compileBytecode`: `python -m compileall`, which skips a file whose bytecode
// is valid). Python replaces a bytecode file by writing a new one and renaming it over the
// old (importlib's `_write_atomic`), so a later compile in either environment never
// changes the other's.
import {
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  type BigIntStats,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCmd } from './run.js';

/** What sharing and compiling did in one environment. */
export interface BytecodeReport {
  /** Python source files under site-packages */
  sources: number;
  /** whose bytecode was already valid */
  valid: number;
  /** whose bytecode was hardlinked from another environment */
  linked: number;
  /** left to compile (compileall compiled them; a file that does not compile, such as a
   *  vendored Python 2 module, stays without bytecode, as pip and uv leave it) */
  compiled: number;
  /** the environments bytecode was shared from */
  donors: string[];
  seconds: number;
}

/** The interpreter's bytecode identity: PEP 3147's cache tag (`cpython-311`) and the
 *  magic number that opens every bytecode file it writes and accepts. */
export interface BytecodeTag {
  tag: string;
  magic: Buffer;
}

/** The cache tag and magic number of an interpreter (asked once). */
export async function bytecodeTag(python: string): Promise<BytecodeTag | null> {
  const r = await runCmd(python, [
    '-c',
    'import sys, importlib.util; print(sys.implementation.cache_tag); print(importlib.util.MAGIC_NUMBER.hex())',
  ]);
  const [tag, magic] = r.stdout.trim().split('\n');
  if (r.code !== 0 || !tag || tag === 'None' || !magic) return null;
  return { tag, magic: Buffer.from(magic, 'hex') };
}

/** The site-packages folders of a virtual environment (`lib/pythonX.Y/site-packages`;
 *  `lib64` is uv's symlink to `lib`). */
export function sitePackagesOf(env: string): string[] {
  const lib = path.join(env, 'lib');
  let names: string[];
  try {
    names = readdirSync(lib);
  } catch {
    return [];
  }
  return names
    .filter((n) => /^(python|pypy)\d/.test(n))
    .map((n) => path.join(lib, n, 'site-packages'))
    .filter((d) => existsSync(d));
}

/** What makes two virtual environments run the same interpreter: pyvenv.cfg's `home`
 *  (the base interpreter's folder) and its version (`version_info` as uv writes it,
 *  `version` as the venv module does). */
export function venvInterpreter(env: string): string | null {
  let text: string;
  try {
    text = readFileSync(path.join(env, 'pyvenv.cfg'), 'utf8');
  } catch {
    return null;
  }
  const kv = new Map<string, string>();
  for (const line of text.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) kv.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  const home = kv.get('home');
  const version = kv.get('version_info') ?? kv.get('version');
  return home && version ? `${kv.get('implementation') ?? 'CPython'} ${version} ${home}` : null;
}

/** The virtual environments of the same interpreter found beside `target`: the folders
 *  next to it (and each one's own groups under `repos/`), the shared environment when
 *  `target` is a group under `DIR/repos/`, and those under `roots` (nnrag's own folder of
 *  environments). */
export function donorEnvironments(target: string, roots: string[] = []): string[] {
  const me = venvInterpreter(target);
  if (!me) return [];
  const self = realOrSelf(target);
  const parents = [path.dirname(target), ...roots];
  if (path.basename(path.dirname(target)) === 'repos') parents.push(path.dirname(path.dirname(path.dirname(target))));
  const seen = new Set<string>([self]);
  const out: string[] = [];
  const consider = (dir: string) => {
    const real = realOrSelf(dir);
    if (seen.has(real)) return;
    seen.add(real);
    if (venvInterpreter(dir) === me) out.push(dir);
  };
  for (const p of parents) {
    for (const n of safeList(p)) {
      const dir = path.join(p, n);
      consider(dir);
      for (const g of safeList(path.join(dir, 'repos'))) consider(path.join(dir, 'repos', g));
    }
  }
  return out;
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** Every Python source file under a folder, relative to it (bytecode folders and
 *  symbolic links are not followed). */
function pythonSources(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    let ents;
    try {
      ents = readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of ents) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (e.name !== '__pycache__') walk(r);
      } else if (e.isFile() && e.name.endsWith('.py')) out.push(r);
    }
  };
  walk('');
  return out;
}

/** PEP 3147: the bytecode of `dir/name.py` is `dir/__pycache__/name.<tag>.pyc`. */
function pycOf(source: string, tag: string): string {
  return path.join(path.dirname(source), '__pycache__', `${path.basename(source, '.py')}.${tag}.pyc`);
}

function statBig(p: string): BigIntStats | null {
  try {
    return statSync(p, { bigint: true });
  } catch {
    return null;
  }
}

/** Whether a bytecode file is valid for a source with these stats (PEP 552): the
 *  interpreter's magic number; then either a timestamp header (flags 0) holding the
 *  source's modification time in whole seconds and its size, each modulo 2**32, or a
 *  hash-based one (flag bit 0), valid for this source when `sameBytes` (the same inode as
 *  the source it was compiled from). */
function validPyc(pyc: string, src: BigIntStats, magic: Buffer, sameBytes: boolean): boolean {
  let fd: number;
  try {
    fd = openSync(pyc, 'r');
  } catch {
    return false;
  }
  const head = Buffer.alloc(16);
  try {
    if (readSync(fd, head, 0, 16, 0) < 16) return false;
  } finally {
    closeSync(fd);
  }
  if (!head.subarray(0, 4).equals(magic)) return false;
  const flags = head.readUInt32LE(4);
  if (flags & 1) return sameBytes;
  const mtime = Number((src.mtimeNs / 1_000_000_000n) & 0xffffffffn);
  const size = Number(src.size & 0xffffffffn);
  return head.readUInt32LE(8) === mtime && head.readUInt32LE(12) === size;
}

/** Hardlink into `env` the bytecode of every source file that is the same inode as the
 *  same file of a donor environment, where the donor's bytecode is valid for it and
 *  `env` has none that is. */
export function shareBytecode(
  env: string,
  donors: string[],
  tag: BytecodeTag,
): Omit<BytecodeReport, 'compiled' | 'seconds'> & { missing: string[] } {
  const rep = { sources: 0, valid: 0, linked: 0, missing: [] as string[], donors: [] as string[] };
  const used = new Set<string>();
  // each __pycache__ folder of env listed once (null: none yet), not one open per file
  const listed = new Map<string, Set<string> | null>();
  const pycacheOf = (dir: string) => {
    let names = listed.get(dir);
    if (names === undefined) {
      try {
        names = new Set(readdirSync(dir));
      } catch {
        names = null;
      }
      listed.set(dir, names);
    }
    return names;
  };
  for (const site of sitePackagesOf(env)) {
    const rel = path.relative(env, site);
    const donorSites = donors.map((d) => ({ env: d, site: path.join(d, rel) })).filter((d) => existsSync(d.site));
    let last = 0;
    for (const f of pythonSources(site)) {
      rep.sources++;
      const src = path.join(site, f);
      const st = statBig(src);
      if (!st) continue;
      const mine = pycOf(src, tag.tag);
      const cache = path.dirname(mine);
      const present = pycacheOf(cache)?.has(path.basename(mine)) ?? false;
      if (present && validPyc(mine, st, tag.magic, false)) {
        rep.valid++;
        continue;
      }
      let done = false;
      // the donor that served the last file first: one wheel's files share one donor
      for (let k = 0; k < donorSites.length && !done; k++) {
        const i = (last + k) % donorSites.length;
        const other = path.join(donorSites[i].site, f);
        const ost = statBig(other);
        if (!ost || ost.ino !== st.ino || ost.dev !== st.dev) continue;
        const theirs = pycOf(other, tag.tag);
        if (!validPyc(theirs, st, tag.magic, true)) continue;
        try {
          if (pycacheOf(cache) === null) {
            mkdirSync(cache, { recursive: true });
            listed.set(cache, new Set());
          }
          if (present) {
            // a stale one is replaced by a rename, never changed in place
            const tmp = `${mine}.nnrag-${process.pid}`;
            rmSync(tmp, { force: true });
            linkSync(theirs, tmp);
            renameSync(tmp, mine);
          } else linkSync(theirs, mine);
        } catch {
          continue; // another file system, or not writable: compiled instead
        }
        done = true;
        last = i;
        used.add(donorSites[i].env);
      }
      if (done) rep.linked++;
      else rep.missing.push(src);
    }
  }
  rep.donors = [...used].sort();
  return rep;
}

/** Files per compileall process at least: below this, one process compiles them all. */
const PER_PROCESS = 100;

/** Share what bytecode other environments of the same interpreter already have, then
 *  compile the rest with `python -m compileall` (timestamp-based bytecode, the default),
 *  one process per core. */
export async function compileBytecode(
  env: string,
  opts: { donors?: string[]; python?: string } = {},
): Promise<BytecodeReport> {
  const t0 = Date.now();
  const python = opts.python ?? path.join(env, 'bin', 'python');
  const tag = await bytecodeTag(python);
  const shared = tag
    ? shareBytecode(env, opts.donors ?? [], tag)
    : { sources: 0, valid: 0, linked: 0, missing: [] as string[], donors: [] };
  if (!tag) {
    for (const site of sitePackagesOf(env)) await runCmd(python, ['-m', 'compileall', '-q', '-j', '0', site]);
  } else if (shared.missing.length) {
    // the files left, split over one compileall per core, each given its list (`-i`)
    const n = Math.max(1, Math.min(os.cpus().length, Math.ceil(shared.missing.length / PER_PROCESS)));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nnrag-compile-'));
    try {
      await Promise.all(
        Array.from({ length: n }, (_, i) => {
          const list = path.join(dir, `${i}.txt`);
          writeFileSync(list, shared.missing.filter((_, k) => k % n === i).join('\n') + '\n');
          return runCmd(python, ['-m', 'compileall', '-q', '-i', list]);
        }),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return {
    sources: shared.sources,
    valid: shared.valid,
    linked: shared.linked,
    compiled: shared.missing.length,
    donors: shared.donors,
    seconds: (Date.now() - t0) / 1000,
  };
}
