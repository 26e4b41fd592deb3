// Whether a resolution made earlier would come out the same now (decisions.ts, pypi.ts
// compile): the resolver's answer depends on its input, which the decision's key digests,
// and on what the package index offers. A dated distribution (`--exclude-newer`, a date in
// the past) is offered the files uploaded before its date, the same files at any later
// time; an undated one (torch, its family and requirements, a fallback to the newest
// release, everything when the group's date is not past yet) is offered whatever the index
// has now. So an earlier answer is reused only when the index's files of every undated
// distribution of the lock are those it had then, read from the index's pages (PEP 691, the
// simple repository API as JSON) with their upload times (PEP 700):
//
// - the state of a resolution is the list of those distributions' files (names, and
//   whether yanked: PEP 592) uploaded before a time `STATE_MARGIN_MS` (20 minutes) before
//   the resolution started; the margin covers uv's cache of the index's pages, which it may use
//   without asking the index while the index's `Cache-Control` allows (PyPI: 10 minutes),
//   so the resolver saw at least every file of before that time;
// - the state is the same later when no file of them was uploaded after that time and the
//   list is the same (a new release, a new wheel of an old release, a yanked release or a
//   deleted file all change it).
//
// Only the one index uv uses is read (UV_DEFAULT_INDEX, UV_INDEX_URL, else PyPI); with
// other indexes configured (UV_INDEX, UV_EXTRA_INDEX_URL, UV_FIND_LINKS, uv.toml), a page
// without upload times, or an index that cannot be read, there is no state, and the
// resolver runs.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { normalizeDistName } from './names.js';

/** How long before a resolution's start the files it is known to have seen were uploaded:
 *  20 minutes, twice PyPI's 10-minute freshness of its simple pages (a longer margin only
 *  makes more resolutions run again: a state is not kept while a file of its
 *  distributions is younger than the margin). */
export const STATE_MARGIN_MS = 1_200_000;

/** Pages read at once. */
const CONCURRENCY = 16;

/** The one index uv resolves from, or null when uv's configuration names others (their
 *  order and strategy are uv's). */
export function uvIndexUrl(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.UV_INDEX || env.UV_EXTRA_INDEX_URL || env.UV_FIND_LINKS || env.UV_NO_INDEX) return null;
  const configs = [
    path.join(env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config'), 'uv', 'uv.toml'),
    '/etc/uv/uv.toml',
  ];
  for (const f of configs)
    if (existsSync(f) && /\b(index|extra-index-url|find-links|index-url|no-index)\b/.test(readFileSync(f, 'utf8')))
      return null;
  return (env.UV_DEFAULT_INDEX ?? env.UV_INDEX_URL ?? 'https://pypi.org/simple').replace(/\/+$/, '');
}

interface IndexFile {
  filename: string;
  /** ms since the epoch; null when the index does not say (PEP 700) */
  uploaded: number | null;
  yanked: boolean;
}

/** How long a page read is taken as the index's: PyPI's own freshness of its pages. */
const PAGE_FRESH_MS = 600_000;

/** One distribution's files on an index, read once per process while fresh (null: not
 *  readable). */
const pages = new Map<string, { at: number; files: Promise<IndexFile[] | null> }>();
function pageOf(index: string, name: string): Promise<IndexFile[] | null> {
  const url = `${index}/${normalizeDistName(name)}/`;
  const had = pages.get(url);
  if (had && Date.now() - had.at < PAGE_FRESH_MS) return had.files;
  const files = (async (): Promise<IndexFile[] | null> => {
    try {
      const res = await fetch(url, { headers: { Accept: 'application/vnd.pypi.simple.v1+json' } });
      if (!res.ok) return null;
      const meta = (await res.json()) as {
        files?: { filename: string; 'upload-time'?: string; yanked?: boolean | string }[];
      };
      if (!Array.isArray(meta.files)) return null;
      return meta.files.map((f) => {
        const t = f['upload-time'] ? Date.parse(f['upload-time']) : Number.NaN;
        return { filename: f.filename, uploaded: Number.isNaN(t) ? null : t, yanked: !!f.yanked };
      });
    } catch {
      return null;
    }
  })();
  pages.set(url, { at: Date.now(), files });
  return files;
}

/** Forget the pages read (a test that changes its index between two environments). */
export function forgetIndexPages(): void {
  pages.clear();
}

/**
 * The state of `names` on uv's index as of `before` (ms since the epoch): a digest of their
 * files uploaded before it, or null when it cannot be told (see the header), or when a file
 * was uploaded after it (the index has changed since).
 */
export async function indexState(names: readonly string[], before: number): Promise<string | null> {
  const index = uvIndexUrl();
  if (!index) return null;
  const wanted = [...new Set(names.map(normalizeDistName))].sort();
  const lists: (IndexFile[] | null)[] = new Array(wanted.length).fill(null);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, wanted.length) }, async () => {
      while (next < wanted.length) {
        const i = next++;
        lists[i] = await pageOf(index, wanted[i]);
      }
    }),
  );
  const h = createHash('sha256').update(`${index}\n`);
  for (let i = 0; i < wanted.length; i++) {
    const files = lists[i];
    if (!files || files.some((f) => f.uploaded === null || f.uploaded > before)) return null;
    h.update(`${wanted[i]}\n`);
    for (const f of [...files].sort((a, b) => a.filename.localeCompare(b.filename)))
      h.update(`${f.filename} ${f.yanked ? 1 : 0}\n`);
  }
  return h.digest('hex');
}
