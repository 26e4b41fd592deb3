// The thread one queue job runs in (commands/queue.ts): builds the shard of the job's
// repository (commands/shard.ts buildShard) off the worker's main thread, so the main
// thread's event loop stays free to renew the job's lock in Redis while the pipeline's
// synchronous stretches (discovery, closures, emission) run: a lock that is not renewed
// within lockDuration makes the job "stalled" and another worker would take it while this
// one still works on it. Messages to the parent: progress, then the result or the error.
import { parentPort, workerData } from 'node:worker_threads';
import type { ConfiguredRepo } from '../config/repos.js';
import { ready } from './index-repos.js';
import { buildShard, type ShardOptions } from './shard.js';

export interface ShardThreadInput {
  shardsDir: string;
  repo: string;
  universe: ConfiguredRepo[];
  options: Omit<ShardOptions, 'onPhase' | 'onHarvest' | 'onWarning'>;
}

export type ShardThreadMessage =
  | { kind: 'progress'; phase: string; done?: number; total?: number }
  | { kind: 'warning'; message: string }
  | {
      kind: 'result';
      result: {
        dir: string;
        repo: string;
        blocks: number;
        ok: number;
        timings: Record<string, number>;
        peakRss?: number;
      };
    }
  | { kind: 'error'; message: string; stack?: string };

async function run(): Promise<void> {
  const input = workerData as ShardThreadInput;
  const post = (m: ShardThreadMessage) => parentPort!.postMessage(m);
  try {
    await ready();
    const r = await buildShard(input.shardsDir, input.repo, input.universe, {
      ...input.options,
      onPhase: (phase, done, total) => post({ kind: 'progress', phase, done, total }),
      onWarning: (message) => post({ kind: 'warning', message }),
    });
    post({
      kind: 'result',
      result: {
        dir: r.dir,
        repo: r.repo,
        blocks: r.blocks,
        ok: r.records.filter((x) => x.ok).length,
        timings: r.timings,
        peakRss: r.peakRss,
      },
    });
  } catch (e) {
    post({
      kind: 'error',
      message: e instanceof Error ? e.message : String(e),
      stack: e instanceof Error ? e.stack : undefined,
    });
  }
}

if (parentPort) void run();
