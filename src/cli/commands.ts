// CLI commands beyond indexing: extract, validate, doctor, env and the demo on the bundled
// example corpus. Argument parsing and output only; the work is in src/commands/.
import { ENVIRONMENT_STEP, nextStep } from '../library/advice.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { demo } from '../commands/demo.js';
import type { Selection } from '../commands/discover.js';
import {
  doctor,
  env,
  environmentNeeds,
  environmentNextStep,
  environmentProblems,
  pypiEnv,
  pypiNeeds,
} from '../commands/environment.js';
import { extract, validate } from '../commands/extract.js';
import type { EmissionProfile, PipelineOptions } from '../pipeline/pipeline.js';
import type { BlockRecord } from '../records/block.js';
import { reportText } from '../library/report.js';
import { UsageError } from '../util/errors.js';
import type { HarvestResult } from '../validate/witness/harvest.js';
import { parseAsOf } from '../environment/as-of.js';
import { STAGES, parseInputShapes, userWitness, type DoctorReport, type Stage } from '../validate/index.js';
import { repoOptions, configuredRepos, requestedNames, workersOpt, type Command, type Ctx } from './context.js';
import { openWorkspace, withWorkspaceAsync } from './workspace.js';
import { duration, progress } from './progress.js';
import { safeText, showId } from './terminal.js';
import { storeExists } from '../store/location.js';

const extractOptions = {
  block: { type: 'string', multiple: true },
  blocks: { type: 'string', multiple: true },
  'names-json': { type: 'string' },
  all: { type: 'boolean' },
  limit: { type: 'string' },
  'start-from': { type: 'string' },
  out: { type: 'string' },
  'no-validate': { type: 'boolean' },
  profile: { type: 'string' },
  intern: { type: 'string', multiple: true },
  extern: { type: 'string', multiple: true },
} as const;

/** Options of the validation environment and sandbox. */
const validateOptions = {
  python: { type: 'string' },
  env: { type: 'string' },
  rootfs: { type: 'string' },
  'no-sandbox': { type: 'boolean' },
  workers: { type: 'string' },
  'force-workers': { type: 'boolean' },
  timeout: { type: 'string' },
  memory: { type: 'string' },
  require: { type: 'string', multiple: true },
  'no-equivalence': { type: 'boolean' },
  force: { type: 'boolean' },
  args: { type: 'string' },
  'input-shape': { type: 'string', multiple: true },
} as const;

function pipelineOptions(ctx: Ctx): PipelineOptions {
  const num = (k: string) => {
    const v = ctx.values[k];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!(n > 0)) throw new UsageError(`--${k} takes a positive number`);
    return n;
  };
  const required = ctx.values.require as string[] | undefined;
  for (const r of required ?? [])
    if (!STAGES.includes(r as Stage))
      throw new UsageError(`--require: unknown stage ${r} (stages: ${STAGES.join(', ')})`);
  return {
    profile: profileOpt(ctx),
    out: ctx.values.out as string | undefined,
    intern: ctx.values.intern as string[] | undefined,
    extern: ctx.values.extern as string[] | undefined,
    validate: !ctx.values['no-validate'],
    required: required as Stage[] | undefined,
    equivalence: !ctx.values['no-equivalence'],
    force: !!ctx.values.force,
    pool: {
      python: (ctx.values.python as string | undefined) ?? (ctx.values.env ? undefined : process.env.NNRAG_PYTHON),
      env: ctx.values.env ? path.resolve(ctx.values.env as string) : undefined,
      rootfs: ctx.values.rootfs as string | undefined,
      sandbox: !ctx.values['no-sandbox'],
      workers: workersOpt(ctx),
      timeoutMs: num('timeout') !== undefined ? num('timeout')! * 1000 : undefined,
      memoryMb: num('memory'),
    },
    userInputs: userInputs(ctx),
    onWarning: (m) => process.stderr.write(`warning: ${safeText(m)}\n`),
    // a harvest runs before any block's line and may take minutes: say so, as lines (a
    // terminal, a pipe or a file alike), so that a redirected run is not silent
    ...(ctx.json
      ? {}
      : {
          onHarvestStart: (repo: string) =>
            process.stderr.write(
              `witnesses of ${safeText(repo)}: running its own model builds, tests and examples in the sandbox (once; stored for later runs)\n`,
            ),
          onHarvest: (repo: string, h: HarvestResult, cached: boolean) => {
            if (!cached) process.stderr.write(`${harvestLine(repo, h)}\n`);
          },
        }),
  };
}

/** The line a finished harvest prints. A harvest that listed no entry point because its
 *  modules failed to import says so, with the most common error (a checkout that shadows an
 *  installed package without its compiled files fails every import alike), instead of a
 *  bare "0 classes from 0 entry points". */
export function harvestLine(
  repo: string,
  h: Pick<HarvestResult, 'witnesses' | 'entries' | 'ms' | 'importFailures'>,
): string {
  const line = `witnesses of ${safeText(repo)}: ${Object.keys(h.witnesses).length} classes from ${h.entries.length} entry points in ${duration(h.ms / 1000)}`;
  const failed = Object.values(h.importFailures ?? {});
  if (h.entries.length || !failed.length) return line;
  const counts = new Map<string, number>();
  for (const e of failed) counts.set(e, (counts.get(e) ?? 0) + 1);
  const [top, n] = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
  return `${line}: ${failed.length} of its modules failed to import (${n} with ${safeText(top.slice(0, 200))})`;
}

/** `--args JSON|@FILE` and `--input-shape 1,3,224,224|@FILE`: the arguments and inputs the
 *  user gives, for named blocks (one construction does not fit a whole library). */
function userInputs(ctx: Ctx): PipelineOptions['userInputs'] {
  const args = ctx.values.args as string | undefined;
  const shapes = ctx.values['input-shape'] as string[] | undefined;
  if (args === undefined && !shapes?.length) return undefined;
  if (ctx.values.all || !requestedNames(ctx)?.length)
    throw new UsageError('--args and --input-shape are for the blocks you name (--block NAME), not for --all');
  if (ctx.values['no-validate'])
    throw new UsageError('--args and --input-shape are used by validation: leave out --no-validate');
  return userWitness(args, shapes?.length ? parseInputShapes(shapes) : undefined);
}

/** `--profile slim|faithful` (default slim: used where it validates as the faithful
 *  module does, else the faithful module is kept; docs/ARCHITECTURE.md "Slim emission"). */
export function profileOpt(ctx: Ctx): EmissionProfile | undefined {
  const p = ctx.values.profile as string | undefined;
  if (p === undefined) return undefined;
  if (p !== 'slim' && p !== 'faithful')
    throw new UsageError(`--profile takes slim or faithful, not ${JSON.stringify(p)}`);
  return p;
}

/** The blocks to work on: requested names (bare names resolved), else every block; then
 *  --start-from and --limit (commands/discover.ts `selectBlocks`). */
function selection(ctx: Ctx): Selection {
  let limit: number | undefined;
  if (ctx.values.limit !== undefined) {
    limit = Number(ctx.values.limit);
    if (!Number.isInteger(limit) || limit < 0) throw new UsageError('--limit takes a whole number');
  }
  return { names: requestedNames(ctx), startFrom: ctx.values['start-from'] as string | undefined, limit };
}

/** Per-block lines as each block finishes, on a terminal and into a pipe or file alike
 *  (a redirected run is not silent for minutes); the one-line bar on a terminal's stderr.
 *  Ctrl-C (SIGINT) while it runs says what was kept and exits 130 (128 + SIGINT): every
 *  finished block was stored as it finished (store writes are synchronous), so nothing
 *  finished is lost and the same command goes on where it stopped. */
function blockProgress(ctx: Ctx, label: string, phase: string) {
  const bar = progress(label);
  const live = !ctx.json;
  const tty = !!process.stderr.isTTY;
  const counts = { ok: 0, failed: 0, total: 0 };
  const onInterrupt = () => {
    bar.done();
    const done = counts.ok + counts.failed;
    process.stderr.write(
      `\nnrag ${label}: interrupted — ${done}${counts.total ? ` of ${counts.total}` : ''} blocks finished and kept in the store and library (${counts.ok} ${phase === 'validate' ? 'validated' : 'ok'}, ${counts.failed} failed); ` +
        `the blocks still running were not recorded. Run the same command again to go on: finished modules are not validated again.\n`,
    );
    process.exit(130);
  };
  process.once('SIGINT', onInterrupt);
  return {
    live,
    onProgress(done: number, total: number, r: BlockRecord) {
      counts.total = total;
      if (r.ok) counts.ok++;
      else counts.failed++;
      if (live) process.stdout.write(`${tty && process.stdout.isTTY ? '\r\x1b[K' : ''}${safeText(blockLine(r))}\n`);
      bar.update(phase, done, total, counts);
    },
    done: () => {
      process.removeListener('SIGINT', onInterrupt);
      bar.done();
    },
  };
}

function blockLine(r: BlockRecord): string {
  const errs = r.diagnostics.filter((d) => d.severity === 'error');
  const v = r.validation;
  let status = r.error ? `ERROR ${r.error}` : r.ok ? 'ok' : `${errs.length} unresolved`;
  const more: string[] = [];
  if (v) {
    const stages = Object.entries(v.stages)
      .map(([k, s]) => `${k}:${s}`)
      .join(' ');
    status = r.ok ? stages : `${v.category ?? 'failed'}: ${(v.error ?? '').split('\n')[0].slice(0, 120)} [${stages}]`;
    if (!r.ok) {
      // what the validator tried (the catalog's page shows the same), and what to do
      const tried = [
        v.args
          ? `args ${JSON.stringify(v.args)}${v.argumentsSource ? ` (${v.argumentsSource})` : ''}`
          : 'no arguments built',
        v.input_shapes ? `input shapes ${JSON.stringify(v.input_shapes)}` : null,
      ].filter(Boolean);
      more.push(`    tried: ${tried.join(', ')}`);
      const step = nextStep(v, r.id);
      if (step) more.push(`    next: ${step.replace(/`/g, '')}`);
    }
  }
  // validated in several environments: how many it passed in, and where this run failed
  const envs = Object.values(r.validations ?? {});
  if (envs.length > 1) {
    const failedIn = envs.filter((e) => !e.ok);
    status += `  [passed in ${envs.length - failedIn.length} of ${envs.length} environments${failedIn.length ? `; failed in ${failedIn.map((e) => `${e.label}: ${e.category ?? 'failed'}`).join('; ')}` : ''}]`;
  }
  const em = r.emission;
  const prof =
    em?.profile === 'slim' && em.faithfulLines && em.faithfulLines !== r.lines
      ? ` (slim; faithful ${em.faithfulLines})`
      : em?.fallbackReason
        ? ' (faithful: slim did not validate)'
        : '';
  return [
    `${r.ok ? '✓' : '✗'} ${showId(r.id)}  ${r.lines} lines${prof}  ${r.ms.toFixed(1)} ms  ${status}${r.file ? `  → ${r.file}` : ''}`,
    ...more,
  ].join('\n');
}

/** The result lines of extract / validate (only the totals when each block's line was
 *  already shown as it finished). */
function summarize(records: BlockRecord[], linesShown = false): string {
  const ok = records.filter((r) => r.ok).length;
  const validated = records.some((r) => r.validation);
  const lines = linesShown ? [] : records.map(blockLine);
  lines.push(
    validated
      ? `${ok}/${records.length} validated and promoted`
      : `${ok}/${records.length} extracted without unresolved names`,
  );
  return lines.join('\n');
}

/** doctor --rootfs: the root filesystem's package set and what `env create/sync --store`
 *  asked for (installed, from wheels, or with no Debian package, by name). */
function rootfsLines(rep: DoctorReport): string[] {
  const out = [`packages ${rep.debianPackages?.length ?? 0} Debian packages in ${rep.rootfs} (part of the env id)`];
  const m = rep.environment;
  if (!m)
    return [
      ...out,
      'packages no nnrag manifest: made without --store (`nnrag env sync DIR --store S` adds what a store needs)',
    ];
  const by = (st: string) => m.entries.filter((e) => e.status === st);
  const deb = [...by('present'), ...by('installed')];
  out.push(
    `packages for the store (${m.updated}): ${deb.length} from Debian (${deb.map((e) => e.package).join(' ')})` +
      (by('wheel').length
        ? `, ${by('wheel').length} from wheels (${by('wheel')
            .map((e) => e.distribution)
            .join(' ')})`
        : ''),
  );
  for (const e of [...by('no-package'), ...by('failed')])
    out.push(
      `  lacks ${e.distribution}: ${e.status === 'failed' ? `${e.package} failed to install` : 'no Debian package'} — ${[...new Set(e.neededBy.map((n) => n.repo))].join(', ')}`,
    );
  if (m.packages.length) out.push(`packages added with --packages: ${m.packages.join(' ')}`);
  return out;
}

export const commands: Record<string, Command> = {
  extract: {
    summary: 'regenerate blocks as standalone modules (validated unless --no-validate)',
    usage:
      'nnrag extract (--block ID|NAME | --blocks A B … | --names-json FILE | --all) [--repo PATH_OR_URL … | --config FILE] [--limit N] [--start-from NAME] [--out DIR] [--no-validate] [--profile slim|faithful] [--force] [--intern P] [--extern P]',
    options: { ...extractOptions, ...validateOptions, ...repoOptions },
    async run(ctx) {
      // with --repo/--config the store is made as `index` would make it (one step:
      // unchanged files are not parsed again)
      const repos = ctx.values.repo || ctx.values.config ? configuredRepos(ctx) : undefined;
      return withWorkspaceAsync(
        ctx,
        async (ws) => {
          const sel = selection(ctx);
          if (!sel.names?.length && !ctx.values.all)
            throw new UsageError('name blocks with --block, --blocks, --names-json, or use --all');
          const opts = pipelineOptions(ctx);
          const indexBar = progress('index');
          const bar = blockProgress(ctx, 'extract', opts.validate ? 'validate' : 'emit');
          const records = await extract(ws, {
            ...opts,
            ...sel,
            repos,
            onIndexProgress: (p) => indexBar.update(p.phase, p.done, p.total),
            onIndexed: (rep) => {
              indexBar.done();
              if (!ctx.json)
                process.stderr.write(
                  `indexed ${rep.files} files in ${rep.repos.length} repositories (${rep.parsed} parsed)\n`,
                );
            },
            onProgress: bar.onProgress,
          });
          bar.done();
          const next =
            opts.validate === false || opts.pool?.python || opts.pool?.rootfs ? null : environmentNextStep(ws, records);
          ctx.out([summarize(records, bar.live), ...(next ? [`next: ${next}`] : [])].join('\n'), records);
          return records.every((r) => r.ok) ? 0 : 1;
        },
        !!repos,
      );
    },
  },

  validate: {
    summary: 'extract and validate blocks in the sandbox (import, instantiate, forward, equivalence)',
    usage:
      'nnrag validate [ID|NAME …] [--all] [--force] [--env DIR | --python PY | --rootfs DIR] [--no-sandbox] [--workers N [--force-workers]] [--timeout S] [--require STAGE …]',
    options: { ...extractOptions, ...validateOptions },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        const sel = selection(ctx);
        const bar = blockProgress(ctx, 'validate', 'validate');
        const records = await validate(ws, { ...pipelineOptions(ctx), ...sel, onProgress: bar.onProgress });
        bar.done();
        ctx.out(summarize(records, bar.live), records);
        return records.every((r) => r.ok) ? 0 : 1;
      });
    },
  },

  doctor: {
    summary: 'report the validation environment: interpreter, torch, sandbox, limits',
    usage: 'nnrag doctor [--env DIR | --python PY | --rootfs DIR] [--no-sandbox] [--store S]',
    options: {
      python: { type: 'string' },
      env: { type: 'string' },
      rootfs: { type: 'string' },
      'no-sandbox': { type: 'boolean' },
    },
    async run(ctx) {
      const opts = {
        python: (ctx.values.python as string | undefined) ?? (ctx.values.env ? undefined : process.env.NNRAG_PYTHON),
        env: ctx.values.env ? path.resolve(ctx.values.env as string) : undefined,
        rootfs: ctx.values.rootfs as string | undefined,
        sandbox: !ctx.values['no-sandbox'],
      };
      const onWarning = (m: string) => process.stderr.write(`warning: ${safeText(m)}\n`);
      // with a store: what its repositories need that this environment lacks
      const ws = storeExists(ctx.store) ? openWorkspace(ctx) : undefined;
      let rep: Awaited<ReturnType<typeof doctor>>;
      try {
        rep = await doctor(opts, ws, onWarning);
      } finally {
        ws?.close();
      }
      const gaps = rep.missing ?? null;
      const lines = [
        `python   ${rep.python ?? 'not found'} ${rep.pythonVersion ?? ''} (${rep.pythonSource ?? '-'})`,
        `torch    ${rep.torch ?? `not importable${rep.torchError ? `: ${rep.torchError}` : ''}`}`,
        `sandbox  ${rep.sandbox.bwrap ?? 'bwrap not found'} ${rep.sandbox.version ?? ''} ${rep.sandbox.working ? 'working' : `NOT working${rep.sandbox.error ? `: ${rep.sandbox.error}` : ''}`}`,
        `limits   ${Object.entries(rep.limits)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`,
        `env id   ${rep.envId ?? '-'} (${rep.distributions?.length ?? 0} installed distributions)`,
        ...rep.problems.map((p) => `problem: ${p}`),
      ];
      if (rep.rootfs) lines.push(...rootfsLines(rep));
      if (gaps) {
        const can = gaps.filter((g) => g.candidate);
        lines.push(
          gaps.length
            ? `the store's repositories need ${gaps.length} distributions this environment lacks:`
            : "the store's repositories need nothing this environment lacks",
        );
        for (const g of gaps) {
          const by = g.neededBy
            .map((n) => (n.why === 'import' ? `${n.blocks} blocks of ${n.repo}` : `declared by ${n.repo}`))
            .join(', ');
          if (g.version)
            lines.push(
              `  ${g.distribution.padEnd(20)} ${g.version.installed} installed, ${g.version.required} declared (${g.version.file}:${g.version.line})  — ${by}`,
            );
          else
            lines.push(
              `  ${g.distribution.padEnd(20)} ${g.candidate ? `${g.debian} ${g.candidate}` : `no Debian package (${g.debian})`}  — ${by}`,
            );
        }
        if (can.length) lines.push(`to add what Debian has: apt-get install ${can.map((g) => g.debian).join(' ')}`);
        const versions = gaps.filter((g) => g.version);
        const noDeb = gaps.filter((g) => !g.version && !g.candidate);
        if (versions.length)
          lines.push(
            `for ${versions.map((g) => g.version!.required).join(', ')}: an environment with it, ${ENVIRONMENT_STEP}`,
          );
        if (noDeb.length)
          lines.push(
            `for what Debian does not package (${noDeb.map((g) => g.distribution).join(', ')}): ${ENVIRONMENT_STEP}`,
          );
      }
      for (const sh of rep.shadowed ?? [])
        lines.push(
          `warning: the checkout of ${sh.repo} (${sh.package}/) is imported ahead of the installed ${sh.installed}, whose compiled files it lacks (${sh.missing.slice(0, 4).join(', ')}${sh.missing.length > 4 ? `, … ${sh.missing.length} in all` : ''}): its imports fail in validation and harvests. Build them in the checkout (\`python setup.py build_ext --inplace\` or \`pip install -e .\` there) or index a checkout that has them`,
        );
      ctx.out(lines.join('\n'), rep);
      return rep.problems.length ? 1 : 0;
    },
  },

  env: {
    summary:
      "env create DIR: a PyPI virtual environment (uv) with torch 2.x and what the store's repositories need, locked, with their compiled operators built for the CPU (--debian: a Debian trixie root filesystem instead); env sync DIR: bring it up to date",
    usage:
      'nnrag env create DIR [--store S] [--torch 2.x] [--python BASE] [--system-torch] [--offline] [--wheels W] [--packages P …] [--no-native] [--as-of DATE | --no-as-of] [--no-reuse] | nnrag env sync DIR [--store S] [same options] | nnrag env create DIR --debian [--store S] [--packages P,Q …] [--wheels W]',
    options: {
      packages: { type: 'string', multiple: true },
      wheels: { type: 'string' },
      python: { type: 'string' },
      debian: { type: 'boolean' },
      torch: { type: 'string' },
      'system-torch': { type: 'boolean' },
      offline: { type: 'boolean' },
      'no-native': { type: 'boolean' },
      'as-of': { type: 'string' },
      'no-as-of': { type: 'boolean' },
      'no-reuse': { type: 'boolean' },
    },
    async run(ctx) {
      const [sub, dir] = ctx.positionals;
      if ((sub !== 'create' && sub !== 'sync') || !dir) throw new UsageError(`usage: ${commands.env.usage}`);
      const packages = ((ctx.values.packages as string[] | undefined) ?? [])
        .flatMap((p) => p.split(','))
        .map((p) => p.trim())
        .filter(Boolean);
      const wheels = ctx.values.wheels ? path.resolve(ctx.values.wheels as string) : undefined;
      if (wheels && !existsSync(wheels)) throw new UsageError(`--wheels: ${wheels} does not exist`);
      const target = path.resolve(dir);
      // --store is a common option with a default: only an explicit one (or NNRAG_STORE) asks for the store's requirements
      const withStore = ctx.values.store !== undefined || process.env.NNRAG_STORE !== undefined;
      const onLog = ctx.json ? undefined : (l: string) => process.stderr.write(`${safeText(l)}\n`);
      const warn = (m: string) => process.stderr.write(`warning: ${safeText(m)}\n`);
      const python = ctx.values.python as string | undefined;
      if (!ctx.values.debian) {
        for (const p of packages)
          if (!/^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*([<>=!~].*)?$/.test(p))
            throw new UsageError(`--packages: ${JSON.stringify(p)} is not a PEP 508 requirement`);
        if (
          sub === 'sync' &&
          !existsSync(path.join(target, 'nnrag-env.json')) &&
          !existsSync(path.join(target, 'pyvenv.cfg'))
        )
          throw new UsageError(`env sync: ${target} is not an environment nnrag made (use env create)`);
        const asOfText = ctx.values['as-of'] as string | undefined;
        if (asOfText !== undefined && ctx.values['no-as-of'])
          throw new UsageError('--as-of and --no-as-of: give one of them');
        if (asOfText !== undefined)
          try {
            parseAsOf(asOfText);
          } catch (e) {
            throw new UsageError((e as Error).message);
          }
        const asOf = ctx.values['no-as-of'] ? false : asOfText !== undefined ? { date: asOfText } : undefined;
        // the store is read before minutes of downloads: a wrong --store fails at once
        const ws = withStore ? openWorkspace(ctx) : undefined;
        const needs = ws ? await pypiNeeds(ws, { python, onWarning: warn }) : null;
        const t0 = Date.now();
        const m = await pypiEnv(
          target,
          needs,
          {
            python,
            torch: ctx.values.torch as string | undefined,
            systemTorch: ctx.values['system-torch'] ? true : undefined,
            offline: !!ctx.values.offline,
            wheels,
            packages,
            native: !ctx.values['no-native'],
            asOf,
            ...(ctx.values['no-reuse'] ? { decisions: false as const } : {}),
            onLog,
          },
          ws,
        ).finally(() => ws?.close());
        const secs = (Date.now() - t0) / 1000;
        const human: string[] = [
          `${sub === 'create' ? 'environment ready' : 'environment synced'} in ${target} (${secs.toFixed(0)} s); use --env ${target}`,
        ];
        for (const g of m.groups) {
          const torch = g.pins.find((p) => p.startsWith('torch=='));
          human.push(
            `${g.name === 'shared' ? 'shared' : `own environment of ${g.name}`}: ${g.dir}, ${g.repos.length} repositories, ${g.pins.length} locked distributions${torch ? ` (${torch})` : m.systemTorch ? " (the base interpreter's torch)" : ''}${g.conflict ? `; does not resolve with the others: ${g.conflict.split('\n').slice(-1)[0]}` : ''}`,
          );
          if (g.asOf)
            human.push(
              `  resolved as of ${g.asOf.global ?? 'no date for all'}; ${Object.keys(g.asOf.dated).length} distributions dated by the repositories that name them${g.asOf.lifted.length ? `; without a date: ${g.asOf.lifted.map((l) => l.distribution).join(', ')}` : ''}`,
            );
          for (const x of g.indexed)
            human.push(
              `  ${x.distribution} installed from the indexed ${x.repo}${x.error ? `: FAILED ${x.error.split('\n').slice(-1)[0]}` : ''}`,
            );
          for (const b of g.native)
            human.push(
              `  compiled operators of ${b.repo} (${b.source ? `${b.source} from the index` : b.dir}): ${b.error ? `not built${b.needsCuda ? ' (they need CUDA, which this machine does not have)' : ''}: ${b.error.split('\n')[0]}` : b.cached ? 'installed from the wheel cache' : `built in ${b.seconds?.toFixed(0)} s`}`,
            );
        }
        for (const u of m.unresolved)
          human.push(
            `not installed (no requirement names it; a guess is never installed): import ${u.module} by ${u.neededBy.join(', ')}; if it is PyPI's ${u.candidates.join(' or ')}, add it with --packages ${u.candidates[0]}`,
          );
        const problems = environmentProblems(m);
        ctx.out(human.join('\n'), { env: target, seconds: secs, ...m, ...problems });
        for (const w of problems.warnings) warn(w);
        return problems.failures.length ? 1 : 0;
      }
      for (const p of packages)
        if (!/^[a-z0-9][a-z0-9+.-]+$/.test(p))
          throw new UsageError(`--packages: ${JSON.stringify(p)} is not a Debian package name`);
      if (sub === 'sync' && !withStore && !packages.length && !wheels)
        throw new UsageError('env sync --debian needs --store S (or --packages / --wheels)');
      // the store is read before minutes of debootstrap: a wrong --store fails at once
      const needs = withStore
        ? await withWorkspaceAsync(ctx, (ws) =>
            environmentNeeds(ws, { python: python ?? process.env.NNRAG_PYTHON, onWarning: warn }),
          )
        : null;
      const res = await env(sub, target, { needs, packages, wheels, onLog });
      if (!res.manifest) {
        ctx.out(`root filesystem ready in ${target}; use --rootfs ${target}`, { rootfs: target });
        return 0;
      }
      const r = { ...res, manifest: res.manifest, installed: res.installed ?? [] };
      const missing = r.manifest.entries.filter((e) => e.status === 'no-package' || e.status === 'failed');
      const human = [
        `${sub === 'create' ? 'root filesystem ready' : 'root filesystem synced'} in ${target}; use --rootfs ${target}`,
        `${r.manifest.entries.length} distributions needed: ${r.manifest.entries.filter((e) => e.status === 'present' || e.status === 'installed').length} from Debian, ${r.manifest.entries.filter((e) => e.status === 'wheel').length} from wheels, ${missing.length} not installed`,
        `installed now: ${r.installed.join(' ') || '(nothing new)'}`,
        ...missing.map(
          (e) =>
            `  ${e.status === 'failed' ? `${e.package} failed to install` : `no Debian package`}: ${e.distribution} (tried ${[e.debian, ...e.modules.map((m) => `python3-${m.toLowerCase()}`)].filter((x, i, a) => a.indexOf(x) === i).join(', ')}) — ${e.neededBy.map((n) => (n.why === 'import' ? `${n.blocks ?? 0} blocks of ${n.repo}` : `declared by ${n.repo}`)).join(', ')}${e.error ? `: ${e.error}` : ''}`,
        ),
        ...(missing.length
          ? [
              `what Debian does not package: a PyPI environment has it (nnrag env create DIR --store S, without --debian), or give its wheels with --wheels`,
            ]
          : []),
        r.before === r.after
          ? 'package set unchanged (environment id unchanged)'
          : 'package set changed: the environment id changed, stored validations will be redone',
      ];
      ctx.out(human.join('\n'), r);
      return 0;
    },
  },

  demo: {
    summary:
      'run the whole pipeline on the bundled example corpus (examples/): index, discover, extract, validate, library, report',
    usage: 'nnrag demo [--out DIR] [--no-validate] [validation options]',
    options: { out: { type: 'string' }, 'no-validate': { type: 'boolean' }, ...validateOptions },
    async run(ctx) {
      return withWorkspaceAsync(
        ctx,
        async (ws) => {
          const bar = progress('demo');
          const { examples, ...r } = await demo(ws, {
            ...pipelineOptions(ctx),
            out: ctx.values.out as string | undefined,
            onProgress: (d, t) => bar.update('validate', d, t),
          });
          bar.done();
          const { records } = r;
          const human = [
            `indexed ${r.index.files} files of ${examples}`,
            `discovered ${r.blocks.length} blocks`,
            summarize(records),
            '',
            reportText(r.report),
          ].join('\n');
          ctx.out(human, r);
          // blocks that fail validation are results (kept in failed/ with their category),
          // not a failure of the demo; an emission error is
          return records.every((r) => r.file) ? 0 : 1;
        },
        true,
      );
    },
  },
};
