// Resolution as of the repositories' revisions: a user of an old repository installs what
// PyPI had then, not a major release of years later whose API its code does not match
// (mmpretrain of 2024 against transformers 5). uv's `--exclude-newer DATE` (only files
// uploaded before DATE are candidates) and `--exclude-newer-package NAME=DATE|false` (the
// same for one distribution, or none) carry the dates; this file decides them:
//   - each requirement a repository declares or imports is dated by that repository's
//     revision (its checkout's commit date) plus a margin, the newest of the repositories
//     that name it (the newest one is known to work with what was out at its own date);
//   - everything else the group resolves (transitive requirements, the tools) by the newest
//     revision of the group plus the margin;
//   - torch as the user asked (`--torch`), the distributions versioned with it (torchvision,
//     torchaudio), torch's own requirements (its CUDA libraries and triton are pinned
//     exactly by the torch chosen) and `--packages` are never dated;
//   - a distribution that nothing of its date resolves or builds for this interpreter (a
//     release before CPython 3.11 had wheels, a requirement newer than the revision) falls
//     back to the newest release, per distribution, with the reason kept (`lifted`).
// Dates in the lock's header make them part of the lock's digest (the environment id).
import { runCmd } from './run.js';
import { normalizeDistName } from './names.js';
import { NnragError } from '../util/errors.js';

/** Days after a repository's revision whose releases still count as "then": its users
 *  installed it in the weeks after its last commit, and the bug-fix releases of those weeks
 *  (x.y.z+1) are what they got; a month keeps a new major release unlikely. */
export const AS_OF_MARGIN_DAYS = 30;

/** Distributions released in step with torch: the user's torch chooses their version. */
export const TORCH_FAMILY = ['torch', 'torchvision', 'torchaudio'];

/** What `env create` was asked: the repositories' revisions (default), one date for every
 *  repository (`--as-of DATE`), or the newest releases (`--no-as-of`). */
export type AsOfChoice = 'revisions' | { date: string } | false;

/** The state of one `env create`/`env sync`: the revision date of each repository, the
 *  choice, the undated distributions, and the distributions taken without a date (why). */
export interface AsOfContext {
  choice: AsOfChoice;
  /** repository → its revision's commit date (null: not in git; not dated) */
  dates: Map<string, Date | null>;
  /** PEP 503 names never dated (torch, its family and requirements, --packages) */
  exempt: Set<string>;
  /** PEP 503 name → why it is resolved without a date */
  lifted: Map<string, string>;
  now: Date;
}

/** The dates of one resolution. */
export interface AsOfPlan {
  /** `--exclude-newer` (ISO 8601, UTC), none when nothing is dated or the date is not past */
  global?: string;
  /** `--exclude-newer-package`: PEP 503 name → ISO date, or false (not dated) */
  packages: Map<string, string | false>;
}

/** `--as-of DATE`: a day (`2024-11-01`, the end of that day UTC) or an RFC 3339 time. */
export function parseAsOf(text: string): Date {
  const day = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const d = new Date(day ? `${text}T23:59:59Z` : text);
  if (!/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text) || Number.isNaN(d.getTime()))
    throw new NnragError(`--as-of: ${JSON.stringify(text)} is not a date (e.g. 2024-11-01 or 2024-11-01T12:00:00Z)`);
  return d;
}

/** The commit date of a checkout's revision (git's committer date), null outside git. */
export async function revisionDate(root: string): Promise<Date | null> {
  const r = await runCmd('git', ['-C', root, 'log', '-1', '--format=%cI', 'HEAD']);
  const d = r.code === 0 ? new Date(r.stdout.trim()) : null;
  return d && !Number.isNaN(d.getTime()) ? d : null;
}

const DAY = 86_400_000;

/** A date as uv reads it: RFC 3339 in UTC, to the second. */
function iso(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The dates of a resolution of `reqs` (each naming the repositories that need it; `nnrag`
 *  for the tools and --packages). */
export function asOfPlan(
  reqs: { spec: string; name: string | null; neededBy: string[]; checkout?: boolean }[],
  ctx: AsOfContext,
): AsOfPlan {
  const plan: AsOfPlan = { packages: new Map() };
  if (ctx.choice === false) return plan;
  const fixed = typeof ctx.choice === 'object' ? parseAsOf(ctx.choice.date) : null;
  // the date a set of repositories gives: the newest revision plus the margin (an undated
  // repository, a checkout outside git, dates nothing it needs)
  const dateOf = (repos: string[]): Date | null => {
    if (fixed) return fixed;
    let newest: Date | null = null;
    for (const r of repos) {
      if (r === 'nnrag') continue;
      const d = ctx.dates.get(r);
      if (d === null || d === undefined) return null;
      if (!newest || d > newest) newest = d;
    }
    return newest ? new Date(newest.getTime() + AS_OF_MARGIN_DAYS * DAY) : null;
  };
  const past = (d: Date | null) => (d && d < ctx.now ? d : null);
  const groupRepos = [...new Set(reqs.flatMap((r) => r.neededBy))].filter((r) => r !== 'nnrag');
  const global = past(groupRepos.length ? dateOf(groupRepos) : fixed);
  if (global) plan.global = iso(global);
  const byName = new Map<string, string[]>();
  for (const r of reqs) {
    if (!r.name) continue;
    const key = normalizeDistName(r.name);
    // a checkout stands in as a local wheel of its own version: never dated
    if (r.checkout) {
      ctx.exempt.add(key);
      continue;
    }
    const by = byName.get(key) ?? [];
    by.push(...r.neededBy);
    byName.set(key, by);
  }
  for (const [key, by] of byName) {
    // one date given for every repository: the global one dates them all
    if (fixed || ctx.exempt.has(key) || ctx.lifted.has(key)) continue;
    const own = by.filter((x) => x !== 'nnrag');
    if (!own.length) continue;
    const d = past(dateOf(own));
    if (d) plan.packages.set(key, iso(d));
    else if (global) plan.packages.set(key, false);
  }
  if (global) for (const key of ctx.exempt) plan.packages.set(key, false);
  if (global || plan.packages.size) for (const key of ctx.lifted.keys()) plan.packages.set(key, false);
  return plan;
}

/** uv's arguments for a plan. */
export function asOfArgs(plan: AsOfPlan): string[] {
  const out: string[] = [];
  if (plan.global) out.push('--exclude-newer', plan.global);
  for (const [k, v] of [...plan.packages].sort(([a], [b]) => a.localeCompare(b)))
    out.push('--exclude-newer-package', `${k}=${v === false ? 'false' : v}`);
  return out;
}

/** The lock's header lines for a plan (comments: `uv pip sync` skips them; the digest of the
 *  lock covers them), naming the distributions of `present` when given. */
export function asOfHeader(plan: AsOfPlan, ctx: AsOfContext, present?: Set<string>): string {
  if (ctx.choice === false) return '# nnrag as-of: none (newest releases)\n';
  if (!plan.global && !plan.packages.size) return '';
  // only the distributions of this lock (`present`): a fallback learnt in another group
  // does not change it
  const here = [...plan.packages].filter(([k]) => !present || present.has(k));
  const dated = here
    .filter(([, v]) => v !== false)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`);
  const undated = here
    .filter(([, v]) => v === false)
    .map(([k]) => k)
    .sort();
  return [
    `# nnrag as-of: ${typeof ctx.choice === 'object' ? `${ctx.choice.date} (given)` : `revisions + ${AS_OF_MARGIN_DAYS} days`}; others before ${plan.global ?? 'any date'}`,
    ...(dated.length ? [`# dated: ${dated.join(' ')}`] : []),
    ...(undated.length ? [`# not dated: ${undated.join(' ')}`] : []),
    '',
  ].join('\n');
}

/** The distributions a resolver's error says it filtered by date (uv's hint: "`ultralytics`
 *  was filtered by `exclude-newer-package` to only include packages uploaded before …"), or
 *  failed to build (a release from before the interpreter had wheels: "Failed to build
 *  `h5py==3.7.0`"), PEP 503 names. */
export function datedFailures(stderr: string): { filtered: string[]; unbuilt: string[] } {
  const filtered = [...stderr.matchAll(/`([A-Za-z0-9][A-Za-z0-9._-]*)` was filtered by `exclude-newer/g)].map((m) =>
    normalizeDistName(m[1]),
  );
  const unbuilt = [
    ...stderr.matchAll(/Failed to (?:download and )?build `([A-Za-z0-9][A-Za-z0-9._-]*)(?:==|@)[^`]*`/g),
  ].map((m) => normalizeDistName(m[1]));
  return { filtered: [...new Set(filtered)], unbuilt: [...new Set(unbuilt)] };
}

/** The distributions of a PEP 751 lock (`uv pip compile --format pylock.toml`, resolved for
 *  this interpreter and platform: its wheels are those that install here) that have a
 *  source distribution and no wheel: installing them builds from source. */
export function sourceOnlyPins(pylock: string): { name: string; version: string }[] {
  const out: { name: string; version: string }[] = [];
  for (const block of pylock.split(/^\[\[packages\]\]\s*$/m).slice(1)) {
    const name = /^name\s*=\s*"([^"]+)"/m.exec(block)?.[1];
    const version = /^version\s*=\s*"([^"]+)"/m.exec(block)?.[1];
    if (!name || !version) continue;
    if (/^sdist\s*=/m.test(block) && !/^wheels\s*=/m.test(block)) out.push({ name: normalizeDistName(name), version });
  }
  return out;
}
