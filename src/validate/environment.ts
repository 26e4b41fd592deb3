// The validation environment: which interpreter runs candidates, what it needs bound
// into the sandbox, and the exact command line that starts a harness worker, either
// inside bubblewrap (default) or, with --no-sandbox, directly under rlimits only.
//
// Sandbox layout (bwrap): new user/pid/net/ipc/uts/cgroup namespaces (no network),
// an empty root made read-only, with /usr, /lib* and a minimal /etc bound read-only,
// the interpreter's own prefixes and the requested repository roots bound read-only,
// fresh /proc, a read-only minimal /dev, size-limited tmpfs on /tmp and /dev/shm (the
// only writable places, emptied by the worker between candidates), no /home, /root or
// /work, a cleared environment, --die-with-parent, --new-session, and a seccomp filter
// that denies ptrace, process_vm_readv/writev and pidfd_getfd (no process in the
// sandbox can take another's memory or descriptors). A repository root is bound
// without its .git folder and without files git does not track.
// When nnrag runs as root the sandbox is started as uid/gid 65534 (nobody): the kernel
// does not apply RLIMIT_NPROC to the global root user, so a fork bomb would otherwise
// not be stopped by the process limit.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
  chownSync,
  writeFileSync,
  readdirSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultEnvDir, envPython, lockDigestOf } from '../environment/pypi.js';
import { which } from '../util/fs.js';
import type { RootfsCheck } from '../environment/rootfs.js';

export { which };
import type { Limits, PoolOptions } from './types.js';
import { packageSetDigest } from '../environment/debian.js';

export const NOBODY = 65534;

/** Path of the harness shipped in the package (src/validate/python/harness.py). */
export function harnessPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [
    path.resolve(here, '../../../src/validate/python/harness.py'), // dist/src/validate → repo
    path.resolve(here, 'python/harness.py'), // running from src/
  ];
  for (const c of candidates) if (existsSync(c)) return c;
  return candidates[0];
}

/** The harness package's module texts (name -> text, `__init__` for the package), by
 *  name: of the nnrag_harness/ folder in `dir` (the folder of harness.py, by default the
 *  one that runs). */
export function harnessModuleTexts(dir: string = path.dirname(harnessPath())): Map<string, string> {
  const pkg = path.join(dir, 'nnrag_harness');
  const texts = new Map<string, string>();
  for (const f of readdirSync(pkg)
    .filter((n) => n.endsWith('.py'))
    .sort())
    texts.set(f.slice(0, -3), readFileSync(path.join(pkg, f), 'utf8'));
  return texts;
}

/** The package modules each module of the harness package imports (`from . import x`,
 *  `from .x import …`, `from nnrag_harness[.x] import …`, `import nnrag_harness.x`): at
 *  its top level only (`indented` false: what runs when the module is executed), or
 *  anywhere (`indented` true: an import inside a function runs when the function is
 *  called, Language Reference §7.11). */
export function harnessImports(texts: Map<string, string>, indented = false): Map<string, Set<string>> {
  const lead = indented ? '^[ \\t]*' : '^';
  const re = new RegExp(
    `${lead}(?:from[ \\t]+(?:\\.|nnrag_harness\\.?)(\\w*)[ \\t]+import[ \\t]+(\\([^)]*\\)|[^\\n#]+)|import[ \\t]+nnrag_harness\\.(\\w+))`,
    'gm',
  );
  const deps = new Map<string, Set<string>>();
  for (const [name, text] of texts) {
    const d = new Set<string>();
    for (const m of text.matchAll(re)) {
      const named = m[1] || m[3];
      const mods = named
        ? [named]
        : m[2]
            .replace(/[()]/g, '')
            .split(',')
            .map((x) => x.trim().split(/\s+/)[0]);
      for (const dep of mods) if (dep !== name && texts.has(dep)) d.add(dep);
    }
    deps.set(name, d);
  }
  return deps;
}

/** The harness package's modules (name -> text, `__init__` for the package) in the order
 *  harness.py executes them: the package first, then each module after the package's
 *  modules it imports at its top level (harnessImports; an indented import runs later,
 *  when its function is called, and does not count), ties by name. A cycle among
 *  top-level imports is an error naming the modules. */
export function harnessLoadOrder(texts: Map<string, string>): string[] {
  const deps = harnessImports(texts);
  for (const [name, d] of deps) if (name !== '__init__') d.add('__init__');
  const order: string[] = [];
  const done = new Set<string>();
  while (done.size < texts.size) {
    const ready = [...texts.keys()].filter((n) => !done.has(n) && [...deps.get(n)!].every((d) => done.has(d))).sort();
    if (!ready.length) {
      const left = [...texts.keys()].filter((n) => !done.has(n));
      throw new Error(`the harness package's top-level imports form a cycle among: ${left.join(', ')}`);
    }
    order.push(ready[0]);
    done.add(ready[0]);
  }
  return order;
}

let harnessCache: { text: string; hash: string } | null = null;
/** The harness as one text: harness.py with its package (python/nnrag_harness/*.py)
 *  bundled in front as `_NNRAG_BUNDLE = {module: text}` (a JSON object is a Python dict
 *  literal), which harness.py installs as modules: the sandbox receives one file
 *  (--ro-bind-data), so the package folder need not be readable there. */
export function harnessSource(dir?: string): { text: string; hash: string } {
  if (dir === undefined && harnessCache) return harnessCache;
  const texts = harnessModuleTexts(dir);
  const bundle: Record<string, string> = {};
  for (const m of harnessLoadOrder(texts))
    bundle[m === '__init__' ? 'nnrag_harness' : `nnrag_harness.${m}`] = texts.get(m)!;
  const main = readFileSync(dir === undefined ? harnessPath() : path.join(dir, 'harness.py'), 'utf8');
  const text = `_NNRAG_BUNDLE = ${JSON.stringify(bundle)}\n` + main;
  const out = { text, hash: createHash('sha256').update(text).digest('hex').slice(0, 16) };
  if (dir === undefined) harnessCache = out;
  return out;
}

/** The harness module a witness-harvest step starts in (nnrag_harness/harvest_step.py,
 *  harvest_main; stages.child_main hands a harvest request to it). */
export const HARVEST_ENTRY = 'harvest_step';

/** What a harvest runs of the harness (issue 27): the entry module (HARVEST_ENTRY), the
 *  package's `__init__` (importing a submodule executes its package first, Language
 *  Reference §5.4.2) and every package module reached from the entry through imports,
 *  top-level or indented (harnessImports), with a digest of their texts. A stored
 *  harvest is keyed by this digest, not by the whole harness (witness/store.ts
 *  harvestKey): editing a module the harvest does not reach (a validation stage, an
 *  argument source) keeps every stored harvest; a new module the harvest imports joins
 *  the digest by itself. The process plumbing a step passes through (harness.py,
 *  worker, zygote, channel, stages.child_main's set-up) is shared with validation and
 *  left out: it starts a step, it does not decide what the step finds. */
export function harvestHarness(dir?: string): { modules: string[]; hash: string } {
  const known = dir === undefined ? harvestHarnessCache : null;
  if (known) return known;
  const texts = harnessModuleTexts(dir);
  if (!texts.has(HARVEST_ENTRY))
    throw new Error(`the harness package has no module ${HARVEST_ENTRY}.py (the entry of a harvest step)`);
  const deps = harnessImports(texts, true);
  const reached = new Set<string>(['__init__', HARVEST_ENTRY].filter((m) => texts.has(m)));
  const todo = [...reached];
  while (todo.length)
    for (const d of deps.get(todo.pop()!) ?? [])
      if (!reached.has(d)) {
        reached.add(d);
        todo.push(d);
      }
  const modules = [...reached].sort();
  const h = createHash('sha256');
  for (const m of modules) h.update(`${m}\0${texts.get(m)}\0`);
  const out = { modules, hash: h.digest('hex').slice(0, 16) };
  if (dir === undefined) harvestHarnessCache = out;
  return out;
}
let harvestHarnessCache: { modules: string[]; hash: string } | null = null;

export function defaultLimits(opts: PoolOptions = {}): Limits {
  return {
    memoryMb: opts.memoryMb ?? 2048,
    // the hard stop (RLIMIT_CPU) stays above the CPU time the harness gives a block
    cpuSeconds: opts.cpuSeconds ?? Math.max(30, Math.ceil((opts.timeoutMs ?? 20000) / 1000) + 10),
    timeoutMs: opts.timeoutMs ?? 20000,
    maxProcs: opts.maxProcs ?? 64,
    fileSizeMb: opts.fileSizeMb ?? 64,
    scratchMb: opts.scratchMb ?? 256,
  };
}

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function run(
  cmd: string,
  args: string[],
  opts: {
    timeoutMs?: number;
    input?: string;
    uid?: number;
    gid?: number;
    env?: NodeJS.ProcessEnv;
    stdio3?: string;
  } = {},
): Promise<ExecResult> {
  return new Promise((resolve) => {
    const stdio: ('pipe' | 'ignore')[] = ['pipe', 'pipe', 'pipe'];
    if (opts.stdio3 !== undefined) stdio.push('pipe');
    let child;
    try {
      child = spawn(cmd, args, { stdio, uid: opts.uid, gid: opts.gid, env: opts.env ?? process.env, cwd: '/' });
    } catch (e) {
      resolve({ code: null, stdout: '', stderr: String(e) });
      return;
    }
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120000);
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: stderr + String(e) });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (opts.stdio3 !== undefined) {
      const s = child.stdio[3] as NodeJS.WritableStream;
      s.on('error', () => {});
      s.end(opts.stdio3);
    }
    child.stdin!.on('error', () => {});
    child.stdin!.end(opts.input ?? '');
  });
}

/** Interpreter facts printed by `harness.py --probe`. */
export interface Probe {
  executable: string;
  realpath: string;
  version: string;
  prefix: string;
  base_prefix: string;
  exec_prefix: string;
  path: string[];
  torch_spec: string | null;
  /** installed distributions as `name==version` (PEP 503 names), sorted */
  distributions?: string[];
  /** top-level modules importable from sys.path (the resolver's `importable`) */
  modules?: string[];
  /** the standard library's top-level module names (sys.stdlib_module_names, 3.10+) */
  stdlib?: string[];
  /** sysconfig.get_paths()'s `stdlib`, `platstdlib`, `purelib` and `platlib` (places.ts) */
  paths?: Partial<Record<'stdlib' | 'platstdlib' | 'purelib' | 'platlib', string>>;
  torch?: string | null;
  torch_error?: string;
}

/** Run the probe on the host (not sandboxed: it runs no repository code). */
export async function probeHost(python: string, importTorch = false): Promise<Probe | null> {
  // the harness is read from standard input (`-`): as one `-c` argument it would pass
  // Linux's limit on a single argument (MAX_ARG_STRLEN, 128 KiB) as it grows
  const args = ['-I', '-', '--probe'];
  if (importTorch) args.push('--import-torch');
  const r = await run(python, args, { timeoutMs: 120000, input: harnessSource().text });
  if (r.code !== 0) return null;
  try {
    return JSON.parse(r.stdout.trim().split('\n').pop()!) as Probe;
  } catch {
    return null;
  }
}

export type PythonSource = 'explicit' | 'env' | 'search' | 'rootfs';

/** Interpreters tried, in order, when none is named: the PyPI environment scripts/setup.sh
 *  builds (src/environment/pypi.ts `defaultEnvDir`), then the Pythons on PATH; Debian's
 *  torch is in /usr/bin/python3. */
function searchCandidates(): string[] {
  const out: string[] = [];
  const dflt = envPython(defaultEnvDir());
  if (existsSync(dflt)) out.push(dflt);
  for (const c of ['python3', 'python', '/usr/bin/python3', '/usr/local/bin/python3']) {
    const p = which(c);
    if (p && !out.includes(p)) out.push(p);
  }
  return out;
}

/**
 * The interpreter to validate with: `explicit` (--python or config), else NNRAG_PYTHON,
 * else the first Python found whose `import torch` works.
 * With `fast`, torch is only located (importlib find_spec), not imported: the workers
 * import it anyway and report a failure.
 */
export async function locatePython(
  explicit?: string,
  fast = false,
): Promise<{ python: string; probe: Probe; source: PythonSource; torchError?: string } | null> {
  const named = explicit ?? process.env.NNRAG_PYTHON;
  const source: PythonSource = explicit ? 'explicit' : 'env';
  const list = named ? [which(named) ?? named] : searchCandidates();
  // probe every candidate at once (a pyenv shim alone can take half a second), then
  // take the first in order that qualifies
  const probes = await Promise.all(list.map((py) => probeHost(py, !fast)));
  for (let i = 0; i < list.length; i++) {
    const py = list[i];
    const probe = probes[i];
    if (!probe) continue;
    const hasTorch = fast ? !!probe.torch_spec : !!probe.torch;
    if (hasTorch || named) {
      if (!hasTorch && named) return { python: py, probe, source, torchError: probe.torch_error ?? 'torch not found' };
      return { python: py, probe, source: named ? source : 'search' };
    }
  }
  return null;
}

/** Public: the interpreter nnrag would use and its torch version, or null. */
export async function findPython(explicit?: string): Promise<{ python: string; torch: string } | null> {
  const r = await locatePython(explicit, false);
  if (!r?.probe.torch) return null;
  return { python: r.python, torch: r.probe.torch };
}

export interface BwrapInfo {
  path: string;
  version: string | null;
}

export async function findBwrap(): Promise<BwrapInfo | null> {
  const p = which('bwrap');
  if (!p) return null;
  const r = await run(p, ['--version'], { timeoutMs: 10000 });
  return { path: p, version: r.code === 0 ? r.stdout.trim().replace(/^bubblewrap\s*/, '') : null };
}

/** uid/gid the sandbox runs as: nobody when we are root, else ourselves. */
export function sandboxIds(): { uid?: number; gid?: number } {
  if (typeof process.getuid === 'function' && process.getuid() === 0) return { uid: NOBODY, gid: NOBODY };
  return {};
}

/**
 * Whether the sandbox user can read folder `p`: it exists and, when the sandbox runs as
 * nobody (we are root), every ancestor is searchable by others and `p` is readable by
 * others.
 */
export function sandboxCanRead(p: string): boolean {
  let real: string;
  try {
    real = realpathSync(p);
    if (!statSync(real).isDirectory()) return false;
  } catch {
    return false;
  }
  if (sandboxIds().uid === undefined) return true;
  let dir = real;
  try {
    if ((statSync(dir).mode & 0o005) !== 0o005) return false;
    while (dir !== path.dirname(dir)) {
      dir = path.dirname(dir);
      if ((statSync(dir).mode & 0o001) === 0) return false;
    }
  } catch {
    return false;
  }
  return true;
}

/** Folders hidden by the sandbox: a missing file there is classified sandbox-denied. */
export function maskedDirs(): string[] {
  const out = ['/root', '/home'];
  const h = os.homedir();
  if (h && h !== '/' && !out.includes(h)) out.push(h);
  return out;
}

const TOP_LEVEL = ['usr', 'bin', 'sbin', 'lib', 'lib64', 'lib32', 'libx32'];
/** The host's /etc entries the sandbox binds (an allow-list: what the interpreter, torch
 *  and the usual scientific packages read there), never configuration that may carry
 *  credentials (pip.conf, npmrc, gitconfig, wgetrc, apt's auth.conf.d, netrc-like files
 *  of services) or policy (shadow, sudoers, PAM, ssh): the dynamic loader's cache and
 *  configuration, alternatives (BLAS/LAPACK libraries are reached through them), the
 *  interpreter's own folders (python3, python3.X: Debian's sitecustomize), user and group
 *  names with nsswitch (getpwuid), time zone, locale aliases, mime types and libmagic's
 *  database, fonts and matplotlibrc (Debian's matplotlib), the socket module's tables
 *  (protocols, services, hosts, host.conf, gai.conf, networks; there is no network),
 *  ssl certificates, terminfo, the system's identification (os-release,
 *  debian_version, lsb-release, hostname) and mtab. Inside a bound folder the file
 *  permissions still hold: the sandbox user (uid 65534 when nnrag runs as root) cannot
 *  read a file that is not world-readable. */
const ETC_ALLOW = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  /^python3(\.\d+)?$/,
  'passwd',
  'group',
  'nsswitch.conf',
  'localtime',
  'timezone',
  'locale.alias',
  'locale.conf',
  'mime.types',
  'magic',
  'magic.mime',
  'fonts',
  'matplotlibrc',
  'protocols',
  'services',
  'hosts',
  'host.conf',
  'gai.conf',
  'networks',
  'resolv.conf',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'terminfo',
  'os-release',
  'debian_version',
  'lsb-release',
  'hostname',
  'mtab',
];

/** Names of ETC_ALLOW that `/etc` holds and that are world-readable (see ETC_ALLOW). */
export function etcEntries(etc = '/etc'): string[] {
  let names: string[];
  try {
    names = readdirSync(etc);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const f of names.sort()) {
    if (!ETC_ALLOW.some((a) => (typeof a === 'string' ? a === f : a.test(f)))) continue;
    let st;
    try {
      st = statSync(path.join(etc, f));
    } catch {
      continue; // a dangling link
    }
    const worldReadable = (st.mode & 0o004) !== 0 && (!st.isDirectory() || (st.mode & 0o001) !== 0);
    if (worldReadable && (st.isFile() || st.isDirectory())) out.push(f);
  }
  return out;
}

export interface LaunchSpec {
  command: string;
  args: string[];
  uid?: number;
  gid?: number;
  env: NodeJS.ProcessEnv;
  /** text to write on fd 3 (the harness, for --ro-bind-data) */
  stdio3?: string;
  /** no-sandbox: a scratch folder owned by us to remove at close */
  scratchDir?: string;
  /** the seccomp program to write on its descriptor (bwrap --seccomp) */
  seccomp?: Buffer;
  /** spawn's stdio: the protocol descriptors and the data ones */
  stdio: ('pipe' | 'ignore')[];
  detached: boolean;
}

/** The descriptors of the protocol inside the worker: requests in, results out. They
 *  are above 2 because bubblewrap's pid 1, which candidates can see, keeps 0-2 open
 *  and closes every other descriptor it inherited. */
export const PROTOCOL_FDS = [4, 5] as const;
/** The descriptor bwrap reads the seccomp program from. */
const SECCOMP_FD = 6;

/** The scratch budget (`scratchMb`) is shared by the two writable tmpfs: /dev/shm gets
 *  a quarter of it (at most 64 MB), /tmp the rest. */
export function shmBytes(limits: Limits): number {
  return Math.max(1, Math.min(Math.floor(limits.scratchMb / 4), 64)) * 1024 * 1024;
}

export function tmpBytes(limits: Limits): number {
  return Math.max(1024 * 1024, limits.scratchMb * 1024 * 1024 - shmBytes(limits));
}

/**
 * A classic BPF seccomp program (struct sock_filter[], for bwrap --seccomp) that fails
 * ptrace, process_vm_readv, process_vm_writev and pidfd_getfd with EPERM, and every
 * system call of a foreign ABI (i386 / x32 on x86-64), so no process of the sandbox can
 * read or write another one's memory or take its descriptors. It also fails System V
 * IPC (shmget/shmat/shmctl/shmdt, msg*, sem*) with EPERM: a segment is memory no rlimit
 * counts and outlives the process that made it (svipc(7)); and memfd_create /
 * memfd_secret with ENOSYS, as a kernel without them would (libraries fall back to
 * /dev/shm, a size-limited tmpfs of the sandbox): a memfd's pages are counted by
 * neither RLIMIT_AS (unmapped) nor a tmpfs size. null on an architecture whose numbers
 * we do not list (the worker stays non-dumpable there, which denies the first part to
 * processes without capabilities).
 */
export function seccompProgram(arch: string = process.arch): Buffer | null {
  // <linux/audit.h> AUDIT_ARCH_*, and the syscall tables of each architecture
  // (arch/x86/entry/syscalls/syscall_64.tbl; include/uapi/asm-generic/unistd.h)
  const table: Record<string, { audit: number; nrs: number[]; ipc: number[]; memfd: number[]; x32?: boolean }> = {
    x64: {
      audit: 0xc000003e,
      nrs: [101, 310, 311, 438],
      // shmget shmat shmctl semget semop semctl shmdt msgget msgsnd msgrcv msgctl semtimedop
      ipc: [29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220],
      memfd: [319, 447],
      x32: true,
    },
    arm64: {
      audit: 0xc00000b7,
      nrs: [117, 270, 271, 438],
      // msgget msgctl msgrcv msgsnd semget semctl semtimedop semop shmget shmctl shmat shmdt
      ipc: [186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197],
      memfd: [279, 447],
    },
  };
  const t = table[arch];
  if (!t) return null;
  const LD_ABS_W = 0x20,
    JEQ = 0x15,
    JGE = 0x35,
    RET = 0x06;
  const ALLOW = 0x7fff0000,
    ERRNO_EPERM = 0x00050000 | 1,
    ERRNO_ENOSYS = 0x00050000 | 38;
  type Ins = [number, number, number, number];
  const prog: Ins[] = [];
  // the two deny instructions are the last ones (ENOSYS, then EPERM); jumps are relative
  // to the next instruction
  const tests: Array<[number, number, 'eperm' | 'enosys']> = [];
  if (t.x32) tests.push([JGE, 0x40000000, 'eperm']);
  for (const nr of [...t.nrs, ...t.ipc]) tests.push([JEQ, nr, 'eperm']);
  for (const nr of t.memfd) tests.push([JEQ, nr, 'enosys']);
  const n = 4 + tests.length + 3; // ld arch, jeq arch, ret deny, ld nr, tests, allow, enosys, eperm
  prog.push([LD_ABS_W, 0, 0, 4]); // seccomp_data.arch
  prog.push([JEQ, 1, 0, t.audit]);
  prog.push([RET, 0, 0, ERRNO_EPERM]);
  prog.push([LD_ABS_W, 0, 0, 0]); // seccomp_data.nr
  for (const [op, k, to] of tests) prog.push([op, (to === 'eperm' ? n - 1 : n - 2) - (prog.length + 1), 0, k]);
  prog.push([RET, 0, 0, ALLOW]);
  prog.push([RET, 0, 0, ERRNO_ENOSYS]);
  prog.push([RET, 0, 0, ERRNO_EPERM]);
  const buf = Buffer.alloc(prog.length * 8);
  prog.forEach(([code, jt, jf, k], i) => {
    buf.writeUInt16LE(code, i * 8);
    buf.writeUInt8(jt, i * 8 + 2);
    buf.writeUInt8(jf, i * 8 + 3);
    buf.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return buf;
}

/** Minimal environment inside the sandbox (or for the unsandboxed interpreter). */
function cleanEnv(home: string): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONHASHSEED: '0',
    OMP_NUM_THREADS: '1',
    MKL_NUM_THREADS: '1',
    OPENBLAS_NUM_THREADS: '1',
    TMPDIR: home,
    // the sandbox has no network, and Hugging Face's hub client retries a failed request
    // with exponential backoff (huggingface_hub.utils.http_backoff), so a constructor that
    // fetches a configuration (`AutoConfig.from_pretrained`) slept for minutes before
    // failing; the libraries' documented offline switches make it fail at once, or use
    // what a cache holds (huggingface_hub's and transformers' environment variables)
    HF_HUB_OFFLINE: '1',
    TRANSFORMERS_OFFLINE: '1',
    HF_DATASETS_OFFLINE: '1',
  };
}

function isUnder(p: string, dirs: Iterable<string>): boolean {
  for (const d of dirs) if (p === d || p.startsWith(d.endsWith('/') ? d : d + '/')) return true;
  return false;
}

export interface SandboxConfig {
  python: string;
  probe: Probe | null;
  rootfs: string | null;
  roots: string[];
  limits: Limits;
}

/** bwrap arguments that build the filesystem view (without the command). */
export function bwrapArgs(cfg: SandboxConfig): string[] {
  const a: string[] = ['--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL'];
  const base = cfg.rootfs ? realpathSync(cfg.rootfs) : '';
  const bound: string[] = [];
  for (const top of TOP_LEVEL) {
    const src = `${base}/${top}`;
    let st;
    try {
      st = lstatSync(src);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) a.push('--symlink', readlinkSync(src), `/${top}`);
    else if (st.isDirectory()) {
      a.push('--ro-bind', src, `/${top}`);
      bound.push(`/${top}`);
    }
  }
  if (cfg.rootfs) {
    // our own root filesystem holds no secrets: its /etc and /opt are bound whole
    a.push('--ro-bind', `${base}/etc`, '/etc');
    a.push('--ro-bind-try', `${base}/opt`, '/opt');
    bound.push('/etc', '/opt');
  }
  // /proc, /dev and the scratch tmpfs come before the interpreter's folders and the
  // repository roots: a later mount hides what an earlier one put below it, and a
  // virtual environment or checkout may well live under /tmp
  // /dev read-only (bwrap's /dev is a tmpfs of host-RAM size), /dev/shm a small tmpfs
  a.push('--proc', '/proc', '--dev', '/dev', '--remount-ro', '/dev');
  a.push('--size', String(shmBytes(cfg.limits)), '--tmpfs', '/dev/shm');
  a.push('--size', String(tmpBytes(cfg.limits)), '--tmpfs', '/tmp');
  if (!cfg.rootfs) {
    for (const f of etcEntries()) a.push('--ro-bind-try', `/etc/${f}`, `/etc/${f}`);
    // the interpreter's own prefixes and import folders when they live outside /usr
    const p = cfg.probe;
    const dirs = new Set<string>();
    if (p) {
      for (const d of [
        p.prefix,
        p.base_prefix,
        p.exec_prefix,
        path.dirname(p.realpath),
        path.dirname(p.executable),
        ...p.path,
      ]) {
        if (d && path.isAbsolute(d)) dirs.add(d);
      }
    }
    const home = os.homedir();
    for (const d of [...dirs].sort((x, y) => x.length - y.length)) {
      if (d === '/' || d === home || d === '/home' || d === '/root' || d === '/tmp') continue;
      if (isUnder(d, bound)) continue;
      if (!existsSync(d)) continue;
      let real: string;
      try {
        real = realpathSync(d);
      } catch {
        continue;
      }
      a.push('--ro-bind', real, d);
      bound.push(d);
    }
  }
  // repository roots come after the scratch tmpfs, so a checkout under /tmp is mounted
  // on top of it instead of being hidden by it; their .git and untracked files are
  // covered (an empty read-only folder, /dev/null for a file)
  for (const r of cfg.roots) {
    if (!path.isAbsolute(r) || isUnder(r, bound) || !existsSync(r)) continue;
    a.push('--ro-bind', realpathSync(r), r);
    for (const hide of hiddenEntries(r)) {
      if (hide.dir) a.push('--size', '4096', '--tmpfs', hide.path, '--remount-ro', hide.path);
      else a.push('--ro-bind', '/dev/null', hide.path);
    }
    bound.push(r);
  }
  a.push('--ro-bind-data', '3', '/nnrag/harness.py');
  a.push('--remount-ro', '/');
  a.push('--chdir', '/tmp');
  a.push('--clearenv');
  for (const [k, v] of Object.entries(cleanEnv('/tmp'))) a.push('--setenv', k, v);
  return a;
}

const hiddenCache = new Map<string, { at: number; list: { path: string; dir: boolean }[] }>();

/**
 * What of a repository root the sandbox must not show: every `.git` (folder or file)
 * and, in a git work tree, every file git does not track (`git ls-files --others`:
 * untracked and ignored, such as `.env`, credentials, build output) except Python
 * files, which the index reads as sources; outside git, every hidden entry (a name
 * starting with '.') up to 6 levels down. Cached for a few seconds (workers restart
 * often with the same roots).
 */
export function hiddenEntries(root: string): { path: string; dir: boolean }[] {
  const hit = hiddenCache.get(root);
  if (hit && Date.now() - hit.at < 10000) return hit.list;
  const out: { path: string; dir: boolean }[] = [];
  const hidden = new Set<string>();
  const add = (p: string) => {
    try {
      const st = lstatSync(p);
      if (st.isSymbolicLink()) return; // a link is not followed by the bind itself; its target is what matters
      out.push({ path: p, dir: st.isDirectory() });
      hidden.add(p);
    } catch {
      /* gone */
    }
  };
  /** Folders below `dir` down to `maxDepth`: an entry `hide` names is hidden, a folder
   *  not hidden yet is entered. */
  const walk = (dir: string, depth: number, maxDepth: number, hide: (name: string) => boolean): void => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const n of names) {
      const p = path.join(dir, n);
      if (hide(n)) add(p);
      else if (depth < maxDepth && !hidden.has(p)) {
        try {
          if (lstatSync(p).isDirectory()) walk(p, depth + 1, maxDepth, hide);
        } catch {
          /* gone */
        }
      }
    }
  };
  let git: string | null = null;
  try {
    git = execFileSync('git', ['-C', root, 'ls-files', '-z', '--others', '--directory'], {
      encoding: 'buffer',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 << 20,
      timeout: 30000,
    }).toString('utf8');
  } catch {
    git = null;
  }
  if (git !== null) {
    // untracked Python files are indexed sources (the indexer reads every .py file) and
    // stay visible; every other untracked file is hidden, a folder without any .py file
    // below it as a whole
    const MAX_WALK = 5000;
    const hideUntracked = (abs: string) => {
      let st;
      try {
        st = lstatSync(abs);
      } catch {
        return;
      }
      if (!st.isDirectory()) {
        if (!abs.endsWith('.py')) add(abs);
        return;
      }
      // does this folder hold a .py file (within MAX_WALK entries)?
      let seen = 0;
      const hasPy = (dir: string): boolean => {
        let names: string[];
        try {
          names = readdirSync(dir);
        } catch {
          return false;
        }
        for (const n of names) {
          if (++seen > MAX_WALK) return false;
          const p = path.join(dir, n);
          if (n.endsWith('.py')) return true;
          try {
            if (lstatSync(p).isDirectory() && hasPy(p)) return true;
          } catch {
            /* gone */
          }
        }
        return false;
      };
      if (!hasPy(abs)) return add(abs);
      let names: string[] = [];
      try {
        names = readdirSync(abs);
      } catch {
        /* unreadable: the sandbox user cannot read it either */
      }
      for (const n of names) hideUntracked(path.join(abs, n));
    };
    for (const rel of git.split('\0')) if (rel) hideUntracked(path.join(root, rel.replace(/\/$/, '')));
    walk(root, 0, 8, (n) => n === '.git');
    // the work tree's own .git lies above a package root: it is not under the bound root
  } else walk(root, 0, 6, (n) => n.startsWith('.'));
  hiddenCache.set(root, { at: Date.now(), list: out });
  return out;
}

export interface WorkerConfig {
  /** the protocol descriptors: requests in, results out */
  fds: number[];
  scratch: string;
  /** the worker is alone in its own pid namespace (bwrap): it may kill(-1) strays */
  pidns: boolean;
  masked: string[];
  timeout_ms: number;
  limits: { memory_mb: number; cpu_seconds: number; max_procs: number; file_size_mb: number };
}

function workerConfig(scratch: string, limits: Limits, pidns: boolean): WorkerConfig {
  return {
    fds: [...PROTOCOL_FDS],
    scratch,
    pidns,
    masked: maskedDirs(),
    timeout_ms: limits.timeoutMs,
    limits: {
      memory_mb: limits.memoryMb,
      cpu_seconds: limits.cpuSeconds,
      max_procs: limits.maxProcs,
      file_size_mb: limits.fileSizeMb,
    },
  };
}

/** The command that starts one harness worker. */
export function workerLaunch(cfg: SandboxConfig & { sandbox: boolean; bwrap: string | null }): LaunchSpec {
  const ids = sandboxIds();
  const { text } = harnessSource();
  if (cfg.sandbox) {
    if (!cfg.bwrap) throw new Error('bwrap not available');
    const wc = workerConfig('/tmp', cfg.limits, true);
    const seccomp = seccompProgram();
    const stdio: ('pipe' | 'ignore')[] = ['ignore', 'ignore', 'pipe', 'pipe', 'pipe', 'pipe'];
    if (seccomp) stdio.push('pipe');
    return {
      command: cfg.bwrap,
      args: [
        ...(seccomp ? ['--seccomp', String(SECCOMP_FD)] : []),
        ...bwrapArgs(cfg),
        cfg.python,
        '-I',
        '-B',
        '/nnrag/harness.py',
        '--worker',
        JSON.stringify(wc),
      ],
      ...ids,
      env: {},
      stdio3: text,
      seccomp: seccomp ?? undefined,
      stdio,
      detached: false,
    };
  }
  // --no-sandbox: a private scratch folder, the harness copied into it, rlimits only
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'nnrag-validate-'));
  const hp = path.join(scratch, 'harness.py');
  writeFileSync(hp, text);
  if (ids.uid !== undefined) {
    chownSync(scratch, ids.uid, ids.gid!);
    chownSync(hp, ids.uid, ids.gid!);
  }
  const wc = workerConfig(scratch, cfg.limits, false);
  return {
    command: cfg.python,
    args: ['-I', '-B', hp, '--worker', JSON.stringify(wc)],
    ...ids,
    env: cleanEnv(scratch),
    scratchDir: scratch,
    stdio: ['ignore', 'ignore', 'pipe', 'ignore', 'pipe', 'pipe'],
    detached: true,
  };
}

/** Run `harness.py --probe` inside the sandbox (used for --rootfs, and by doctor). */
export async function probeInSandbox(
  cfg: SandboxConfig & { bwrap: string },
  importTorch: boolean,
): Promise<{ probe: Probe | null; error?: string }> {
  const args = [...bwrapArgs(cfg), cfg.python, '-I', '-B', '/nnrag/harness.py', '--probe'];
  if (importTorch) args.push('--import-torch');
  const r = await run(cfg.bwrap, args, { ...sandboxIds(), env: {}, stdio3: harnessSource().text, timeoutMs: 120000 });
  if (r.code !== 0) return { probe: null, error: (r.stderr || r.stdout).trim().slice(-2000) || `exit ${r.code}` };
  try {
    return { probe: JSON.parse(r.stdout.trim().split('\n').pop()!) as Probe };
  } catch {
    return { probe: null, error: 'unreadable probe output: ' + r.stdout.slice(0, 500) };
  }
}

/** Identity of a validation environment: same id ⇒ a stored result is still valid. It
 *  covers the interpreter as invoked (a virtual environment's `bin/python` resolves to the
 *  system interpreter, so the executable and prefix count, not the real path), its
 *  version, torch, every installed distribution with its version, the sandbox, the root
 *  filesystem and the harness: installing, removing or upgrading a package re-validates.
 *  With `scope` 'harvest', the identity a witness harvest is stored under: the same but
 *  for the harness, of which only the modules a harvest step runs count (harvestHarness),
 *  so an edit of a validation stage re-validates without harvesting again. */
export function environmentId(
  parts: {
    python: string;
    pythonVersion: string;
    torch: string;
    sandbox: boolean;
    rootfs: string | null;
    probe?: Probe | null;
  },
  scope: 'validation' | 'harvest' = 'validation',
  /** the folder of a harness (harness.py and nnrag_harness/) to compute the id for, by
   *  default the one that runs (tests) */
  dir?: string,
): string {
  const { probe, ...rest } = parts;
  // the harvest's field has another name: a harvest id never equals a validation id
  const harness =
    scope === 'harvest' ? { harvestHarness: harvestHarness(dir).hash } : { harness: harnessSource(dir).hash };
  const h = createHash('sha256');
  // a PyPI environment nnrag made is identified by its lock (and what is installed), not
  // by where it lies: the same lock on another machine validates the same
  const lock = !rest.rootfs && probe?.prefix ? lockDigestOf(probe.prefix) : null;
  if (lock) {
    h.update(
      JSON.stringify({
        lock,
        pythonVersion: rest.pythonVersion,
        torch: rest.torch,
        sandbox: rest.sandbox,
        distributions: probe?.distributions ?? null,
        ...harness,
      }),
    );
    return h.digest('hex').slice(0, 16);
  }
  h.update(
    JSON.stringify({
      ...rest,
      executable: probe?.executable ?? null,
      prefix: probe?.prefix ?? null,
      distributions: probe?.distributions ?? null,
      ...harness,
      // a root filesystem's Debian package set (environment/debian.ts): a package without
      // Python metadata (python3-opencv has no dist-info) changes the id too; only
      // present with --rootfs, so the host's ids stay as they were
      ...(rest.rootfs ? { debian: packageSetDigest(rest.rootfs) } : {}),
    }),
  );
  return h.digest('hex').slice(0, 16);
}

export function execFileText(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => execFile(cmd, args, (err, out) => (err ? reject(err) : resolve(out))));
}

/** The check of a finished root filesystem (environment/rootfs.ts `check`): its Python
 *  run in the sandbox, with torch imported; null without bubblewrap. */
export async function checkRootfs(rootfs: string): Promise<RootfsCheck | null> {
  const bw = await findBwrap();
  if (!bw) return null;
  const cfg = { python: '/usr/bin/python3', probe: null, rootfs, roots: [], limits: defaultLimits(), bwrap: bw.path };
  const { probe, error } = await probeInSandbox(cfg, true);
  return {
    python: probe?.version ?? null,
    torch: probe?.torch ?? null,
    error: error ?? probe?.torch_error ?? undefined,
  };
}
