// Run the git CLI safely: execFile (never a shell), a scrubbed environment, protocols
// that can run commands disabled, and no interactive prompts; and git's content address
// of a file (the blob id), which the index keys facts by and SWHIDs are made of.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { NnragError } from '../util/errors.js';

/** Options placed before every git subcommand. `protocol.ext`/`protocol.fd` can run
 *  commands or talk to file descriptors; never allow them. The fsmonitor of a local
 *  repository we read could name a program to run; turn it off. */
const SAFE_CONFIG = [
  '-c',
  'protocol.ext.allow=never',
  '-c',
  'protocol.fd.allow=never',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'advice.detachedHead=false',
];

/** Environment for git: inherited, minus variables that would redirect git to another
 *  repository, plus no prompts (GIT_TERMINAL_PROMPT=0) and a protocol allow-list. */
export function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of [
    'GIT_DIR',
    'GIT_WORK_TREE',
    'GIT_INDEX_FILE',
    'GIT_OBJECT_DIRECTORY',
    'GIT_ALTERNATE_OBJECT_DIRECTORIES',
    'GIT_COMMON_DIR',
    'GIT_NAMESPACE',
    'GIT_PREFIX',
    'GIT_CONFIG_PARAMETERS',
    'GIT_CONFIG_COUNT',
    'GIT_EXTERNAL_DIFF',
    'GIT_PAGER',
    'GIT_EDITOR',
  ]) {
    delete env[k];
  }
  env.GIT_TERMINAL_PROMPT = '0';
  env.GIT_ALLOW_PROTOCOL = 'file:git:http:https:ssh';
  env.GCM_INTERACTIVE = 'never';
  env.LC_ALL = 'C';
  return env;
}

export interface GitResult {
  stdout: string;
  stderr: string;
}

/** Run `git <safe config> <args>` in `cwd`. Rejects with an NnragError carrying git's
 *  stderr. `input` is written to stdin. */
export function git(
  args: string[],
  opts: { cwd?: string; timeoutMs?: number; input?: string } = {},
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [...SAFE_CONFIG, ...args],
      {
        cwd: opts.cwd,
        env: gitEnv(),
        timeout: opts.timeoutMs ?? 10 * 60_000,
        maxBuffer: 64 * 1024 * 1024,
        encoding: 'utf8',
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        if (err) {
          const e = err as NodeJS.ErrnoException & { killed?: boolean };
          const why =
            e.code === 'ENOENT'
              ? 'git is not installed or not on PATH'
              : e.killed
                ? 'timed out'
                : stderr.trim() || e.message;
          reject(new NnragError(`git ${args[0]} failed: ${why}`, 'git'));
        } else {
          resolve({ stdout, stderr });
        }
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/** `git` run synchronously (the resolver's on-demand reads, src/resolve/ondemand.ts):
 *  same safety as `git()`. Returns stdout as bytes, or null when git fails. */
export function gitSync(args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Buffer | null {
  try {
    return execFileSync('git', [...SAFE_CONFIG, ...args], {
      cwd: opts.cwd,
      env: gitEnv(),
      timeout: opts.timeoutMs ?? 2 * 60_000,
      maxBuffer: 64 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
      windowsHide: true,
    });
  } catch {
    return null;
  }
}

/** The git blob id (sha1 hex) of some bytes, as `git hash-object` computes it. */
export function gitBlobId(bytes: Buffer | Uint8Array | string): string {
  const buf = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  const h = createHash('sha1');
  h.update(`blob ${buf.length}\0`);
  h.update(buf);
  return h.digest('hex');
}
