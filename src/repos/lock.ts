// A cross-process lock for one cached repository: an atomic `mkdir` of a lock folder
// holding `owner.json` ({pid, host, token, since}). Another process that finds the
// folder waits (polling with backoff, up to a timeout). A lock is stale when its owner
// is a dead process on this host, when it has no owner file for a while (the owner died
// between mkdir and writing it), or when it is older than `maxAgeMs` (guards against
// pid reuse). A stale lock is broken by renaming it aside first (atomic), then checking
// that the renamed folder is really the one judged stale.
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { NnragError } from '../util/errors.js';

export interface LockOptions {
  /** Give up waiting after this long (default 15 minutes). */
  timeoutMs?: number;
  /** A lock without owner file older than this is stale (default 30 s). */
  ownerlessStaleMs?: number;
  /** Any lock older than this is stale (default 2 hours). */
  maxAgeMs?: number;
}

interface Owner {
  pid: number;
  host: string;
  token: string;
  since: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readOwner(dir: string): Promise<Owner | null> {
  try {
    const o = JSON.parse(await readFile(path.join(dir, 'owner.json'), 'utf8')) as Owner;
    return typeof o.pid === 'number' && typeof o.token === 'string' ? o : null;
  } catch {
    return null;
  }
}

/** Why the lock at `dir` is stale, or null if it looks held. */
async function staleReason(dir: string, o: LockOptions): Promise<{ why: string; token: string | null } | null> {
  const owner = await readOwner(dir);
  if (!owner) {
    try {
      const st = await stat(dir);
      if (Date.now() - st.mtimeMs > (o.ownerlessStaleMs ?? 30_000)) return { why: 'no owner', token: null };
    } catch {
      return null; // vanished: just retry
    }
    return null;
  }
  if (Date.now() - owner.since > (o.maxAgeMs ?? 2 * 3600_000)) return { why: 'too old', token: owner.token };
  if (owner.host === hostname() && !pidAlive(owner.pid))
    return { why: `owner pid ${owner.pid} is dead`, token: owner.token };
  return null;
}

/** Acquire the lock folder `dir`; resolves to a release function. */
export async function acquireLock(dir: string, o: LockOptions = {}): Promise<() => Promise<void>> {
  const start = Date.now();
  const timeout = o.timeoutMs ?? 15 * 60_000;
  const token = randomBytes(8).toString('hex');
  let delay = 10;
  await mkdir(path.dirname(dir), { recursive: true });
  for (;;) {
    try {
      await mkdir(dir);
      const owner: Owner = { pid: process.pid, host: hostname(), token, since: Date.now() };
      const tmp = path.join(dir, `owner.${token}.tmp`);
      await writeFile(tmp, JSON.stringify(owner));
      await rename(tmp, path.join(dir, 'owner.json'));
      return async () => {
        const cur = await readOwner(dir);
        if (cur && cur.token === token) await rm(dir, { recursive: true, force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const stale = await staleReason(dir, o);
    if (stale) {
      const aside = `${dir}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        await rename(dir, aside);
        const moved = await readOwner(aside);
        if ((moved?.token ?? null) !== stale.token) {
          // We moved a lock someone took after our check: put it back if we still can.
          await rename(aside, dir).catch(() => undefined);
        } else {
          await rm(aside, { recursive: true, force: true });
        }
      } catch {
        /* someone else broke or released it first */
      }
      continue;
    }
    if (Date.now() - start > timeout) {
      const owner = await readOwner(dir);
      throw new NnragError(
        `timed out after ${Math.round(timeout / 1000)} s waiting for lock ${dir}` +
          (owner ? ` (held by pid ${owner.pid} on ${owner.host})` : ''),
        'lock',
      );
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 200);
  }
}
