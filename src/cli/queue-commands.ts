// `nnrag queue`, `nnrag queue status`, `nnrag worker` and `nnrag merge`: repositories as
// jobs on a BullMQ queue in Redis, each built into a shard store by a worker, the shards
// merged into one library (docs/SCALE.md). Argument parsing and output only; the work is
// in src/commands/queue.ts and src/commands/shard.ts.
// BullMQ and ioredis take about half of the CLI's start-up: src/commands/queue.ts is
// imported when a queue command runs, not when any command starts
const queueApi = () => import('../commands/queue.js');
import { merge } from '../commands/shard.js';
import { loadRepoConfig } from '../config/repos.js';
import { UsageError } from '../util/errors.js';
import { profileOpt } from './commands.js';
import { repoOptions, configuredRepos, workersOpt, type Command, type Ctx } from './context.js';

function redisOpt(ctx: Ctx): string {
  const r = (ctx.values.redis as string | undefined) ?? process.env.NNRAG_REDIS;
  if (!r) throw new UsageError('give --redis redis://HOST:PORT (or $NNRAG_REDIS)');
  return r;
}

function whole(ctx: Ctx, k: string, min = 1): number | undefined {
  const v = ctx.values[k];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${k} takes a whole number ≥ ${min} (got ${String(v)})`);
  return n;
}

export const commands: Record<string, Command> = {
  queue: {
    summary:
      'put one job per repository on the queue (Redis); `queue status`: waiting, active, completed, failed and each failure',
    usage:
      'nnrag queue (--config FILE [--repo NAME …] | --repo PATH_OR_URL …) --redis URL [--queue NAME] [--attempts N] [--backoff S] [--no-validate] [--profile slim|faithful] [--no-equivalence] | nnrag queue status --redis URL [--queue NAME]',
    options: {
      ...repoOptions,
      redis: { type: 'string' },
      queue: { type: 'string' },
      attempts: { type: 'string' },
      backoff: { type: 'string' },
      'no-validate': { type: 'boolean' },
      profile: { type: 'string' },
      'no-equivalence': { type: 'boolean' },
    },
    async run(ctx) {
      const redis = redisOpt(ctx);
      const queue = ctx.values.queue as string | undefined;
      const [sub] = ctx.positionals;
      if (sub === 'status') {
        const s = await (await queueApi()).queueStatus({ redis, queue });
        const c = s.counts;
        const lines = [
          `queue ${s.queue}: ${c.waiting} waiting, ${c.active} active, ${c.delayed} delayed (retry backoff), ${c.completed} completed, ${c.failed} failed`,
          ...s.active.map((a) => `  active ${a.repo} (attempt ${a.attempts + 1}) ${JSON.stringify(a.progress)}`),
          ...s.failed.map((f) => `  failed ${f.repo} after ${f.attempts} attempts: ${f.error}`),
        ];
        ctx.out(lines.join('\n'), s);
        return c.failed ? 1 : 0;
      }
      if (sub !== undefined)
        throw new UsageError(`nnrag queue: unknown subcommand ${JSON.stringify(sub)} (status, or none to enqueue)`);
      if (!ctx.values.repo && !ctx.values.config) throw new UsageError('give --config FILE and/or --repo … to queue');
      const repos = configuredRepos(ctx);
      // the universe of every job: the whole config when there is one (as one `extract
      // --all --config` indexes it), else the repositories given
      const universe = ctx.values.config ? loadRepoConfig(ctx.values.config as string) : repos;
      const backoff = whole(ctx, 'backoff', 0);
      const r = await (await queueApi()).enqueue({
        redis,
        queue,
        repos,
        universe,
        attempts: whole(ctx, 'attempts'),
        backoffMs: backoff === undefined ? undefined : backoff * 1000,
        pipeline: {
          validate: !ctx.values['no-validate'],
          profile: profileOpt(ctx),
          equivalence: !ctx.values['no-equivalence'],
        },
      });
      const lines = [
        `queued ${r.added.length} repositories on ${r.queue}`,
        ...r.existing.map((e) => `  ${e.repo}: already on the queue (${e.state})`),
      ];
      ctx.out(lines.join('\n'), r);
      return 0;
    },
  },

  worker: {
    summary:
      "take repositories from the queue and build each one's shard store (index its universe, discover, extract, validate)",
    usage:
      'nnrag worker --redis URL --shards DIR [--queue NAME] [--concurrency N] [--cache DIR] [--lock-duration S] [--stalled-interval S] [--exit-when-drained] [--python PY] [--rootfs DIR] [--no-sandbox] [--workers N]',
    options: {
      redis: { type: 'string' },
      queue: { type: 'string' },
      shards: { type: 'string' },
      cache: { type: 'string' },
      concurrency: { type: 'string' },
      'lock-duration': { type: 'string' },
      'stalled-interval': { type: 'string' },
      'exit-when-drained': { type: 'boolean' },
      python: { type: 'string' },
      rootfs: { type: 'string' },
      'no-sandbox': { type: 'boolean' },
      workers: { type: 'string' },
      'force-workers': { type: 'boolean' },
    },
    async run(ctx) {
      const redis = redisOpt(ctx);
      const shards = ctx.values.shards as string | undefined;
      if (!shards) throw new UsageError('give --shards DIR (where the shard stores go)');
      const secs = (k: string) => {
        const n = whole(ctx, k);
        return n === undefined ? undefined : n * 1000;
      };
      // one line per event on stderr (JSON with --json, on stdout): which repository, which attempt
      const r = await (await queueApi()).runWorker({
        redis,
        queue: ctx.values.queue as string | undefined,
        shardsDir: shards,
        cacheDir: ctx.values.cache as string | undefined,
        concurrency: whole(ctx, 'concurrency'),
        lockDurationMs: secs('lock-duration'),
        stalledIntervalMs: secs('stalled-interval'),
        exitWhenDrained: !!ctx.values['exit-when-drained'],
        pool: {
          python: (ctx.values.python as string | undefined) ?? process.env.NNRAG_PYTHON,
          rootfs: ctx.values.rootfs as string | undefined,
          sandbox: !ctx.values['no-sandbox'],
          workers: workersOpt(ctx),
        },
        onEvent: (e) => {
          if (ctx.json) process.stdout.write(JSON.stringify({ pid: process.pid, ...e }) + '\n');
          else
            process.stderr.write(
              `worker ${process.pid}: ${e.event}${e.repo ? ` ${e.repo}` : ''}${e.attempt ? ` (attempt ${e.attempt})` : ''}${e.detail && e.event !== 'completed' ? `: ${typeof e.detail === 'string' ? e.detail : JSON.stringify(e.detail)}` : ''}\n`,
            );
        },
      });
      if (!ctx.json)
        process.stdout.write(`worker ${process.pid} stopped: ${r.completed} completed, ${r.failed} failed attempts\n`);
      return 0;
    },
  },

  merge: {
    summary: 'union finished shard stores into one store and library (idempotent, in any order)',
    usage: 'nnrag merge SHARD … --into STORE [--out DIR]',
    options: { into: { type: 'string' }, out: { type: 'string' } },
    run(ctx) {
      const into = (ctx.values.into as string | undefined) ?? (ctx.values.store as string | undefined);
      if (!into) throw new UsageError('give --into STORE');
      const r = merge(into, ctx.positionals, { out: ctx.values.out as string | undefined });
      const lines = [
        ...r.shards.map(
          (s) =>
            `  ${s.repo}: ${s.rows.blocks} blocks, ${s.rows.extractions} records, ${s.rows.files} files, ${s.rows.facts} new contents`,
        ),
        `merged ${r.shards.length} shards into ${r.into} (${r.repos.length} repositories merged so far); next: nnrag library / dedup / search --store ${r.into}`,
      ];
      ctx.out(lines.join('\n'), r);
      return 0;
    },
  },
};
