// What `env create`/`env sync` decides that a second environment on the same machine would
// decide again, kept under nnrag's home: the distributions that fell back to the newest
// release (as-of.ts), which repositories share a group, the version bounds learnt at
// import (import-probe.ts), and what the import probe found for a lock. Each entry's key is
// a digest of every input nnrag gives the resolver or the probe (the requirements and who
// needs them, the repositories' revisions and dates, the interpreter, uv's version and
// configuration, the index, torch and its pinned requirements, the options): a different
// input has a different key, so it can never reuse another's answer. What is reused is the
// outcome of the resolutions that failed, or the rounds that found a fallback, of installing
// an environment only to learn a bound, and uv's answer for a lock while the index offers the
// same files of the distributions that answer did not date (index-state.ts).
// An entry is a small JSON file written atomically (a temporary file renamed over it), so
// that two processes writing one key leave one whole entry.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCmd } from './run.js';

/** Entries of another layout are never read. */
export const DECISIONS_VERSION = 1;

/** sha256 of a JSON value (hex). */
export function digestOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/** A folder of decisions (null: none kept, none reused). */
export class DecisionCache {
  constructor(readonly dir: string | null) {}

  get enabled(): boolean {
    return this.dir !== null;
  }

  /** The key of `material` for one kind of decision. */
  key(kind: string, material: unknown): string {
    return `${kind}-${digestOf([DECISIONS_VERSION, kind, material]).slice(0, 32)}`;
  }

  get<T>(key: string | null): T | undefined {
    if (!this.dir || !key) return undefined;
    try {
      return (JSON.parse(readFileSync(path.join(this.dir, `${key}.json`), 'utf8')) as { value: T }).value;
    } catch {
      return undefined;
    }
  }

  put(key: string | null, value: unknown): void {
    if (!this.dir || !key) return;
    try {
      mkdirSync(this.dir, { recursive: true });
      const file = path.join(this.dir, `${key}.json`);
      const tmp = `${file}.tmp-${process.pid}`;
      writeFileSync(tmp, JSON.stringify({ written: new Date().toISOString(), value }) + '\n');
      renameSync(tmp, file);
    } catch {
      /* a cache that cannot be written is only slower */
    }
  }
}

/** Everything outside nnrag's own arguments that can change uv's answer: uv's version, the
 *  interpreter (its version and platform), uv's environment variables (the index, extra
 *  indexes, find-links, constraints; not where its cache is) and configuration files, and
 *  the folder of local wheels (`--wheels`, its file names and sizes). */
export async function resolverIdentity(
  uv: string,
  python: string,
  opts: { offline?: boolean; wheels?: string },
): Promise<unknown> {
  const v = await runCmd(uv, ['--version']);
  const py = await runCmd(python, [
    '-c',
    'import sys, platform; print(sys.version); print(platform.machine()); print(sys.implementation.cache_tag)',
  ]);
  const env = Object.entries(process.env)
    .filter(([k]) => k.startsWith('UV_') && !['UV_CACHE_DIR', 'UV_NO_PROGRESS'].includes(k))
    .sort(([a], [b]) => a.localeCompare(b));
  // uv's user and system configuration (uv.toml), whose settings apply to `uv pip`
  const config = [
    path.join(process.env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config'), 'uv', 'uv.toml'),
    '/etc/uv/uv.toml',
  ].map((f) => (existsSync(f) ? readFileSync(f, 'utf8') : null));
  let wheels: [string, number][] | null = null;
  if (opts.wheels)
    try {
      wheels = readdirSync(opts.wheels)
        .sort()
        .map((f) => [f, statSync(path.join(opts.wheels!, f)).size]);
    } catch {
      wheels = [];
    }
  return {
    uv: v.stdout.trim(),
    python: [python, py.stdout.trim()],
    env,
    config,
    offline: !!opts.offline,
    wheels: opts.wheels ? [path.resolve(opts.wheels), wheels] : null,
  };
}

/** The content of a checkout as a key: its git revision, a digest of its changes to
 *  tracked files (`git diff HEAD`, the bytes), and its untracked files that git does not
 *  ignore (names, sizes, modification times). Null outside git: nothing keyed by it is
 *  reused. */
export async function checkoutContentKey(root: string): Promise<string | null> {
  const git = (args: string[]) => runCmd('git', ['-C', root, ...args]);
  const head = await git(['rev-parse', 'HEAD']);
  if (head.code !== 0) return null;
  const diff = await git(['diff', 'HEAD', '--binary', '--', '.']);
  const untracked = await git(['ls-files', '--others', '--exclude-standard', '-z', '--', '.']);
  if (diff.code !== 0 || untracked.code !== 0) return null;
  const files = untracked.stdout
    .split('\0')
    .filter(Boolean)
    .sort()
    .map((f) => {
      try {
        const s = statSync(path.join(root, f));
        return [f, s.size, s.mtimeMs];
      } catch {
        return [f];
      }
    });
  const changes = diff.stdout || files.length ? `+${digestOf([diff.stdout, files]).slice(0, 16)}` : '';
  return head.stdout.trim() + changes;
}
