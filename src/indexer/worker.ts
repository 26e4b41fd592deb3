// Parse worker (worker_threads): initialises tree-sitter once, then turns batches of
// files into FileFacts. The worker reads each file itself, computes its git blob id
// and decodes it, so the main thread only moves paths and JSON strings.
// Results are sent as JSON text (the form the store keeps), which costs the main
// thread a string copy instead of a structured-clone of a large object graph.
// tiering.ts sets V8's tier-up budget before the binder loads: it must come first.
import './tiering.js';
import { readFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { getHeapStatistics } from 'node:v8';
import { initParser } from '../parse/parser.js';
import { parseBuffer } from './parse-one.js';
import type { WorkerRequest, WorkerResponse, ParseOutcome } from './pool.js';

const started = performance.now();
let initMs: number | undefined;
const ready = initParser().then(() => {
  initMs = performance.now() - started;
});

function parseOne(path: string, expectedBlob: string | null): ParseOutcome {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (e) {
    return {
      path,
      blob: expectedBlob ?? '',
      json: null,
      lines: 0,
      errors: 0,
      parseMs: 0,
      size: 0,
      encoding: null,
      problem: { kind: 'read-error', message: (e as Error).message },
      readFailed: true,
    };
  }
  return parseBuffer(path, buf);
}

parentPort!.on('message', (msg: WorkerRequest) => {
  void ready.then(
    () => {
      const t = performance.now();
      const results = msg.items.map((it) => parseOne(it.path, it.blob));
      const res: WorkerResponse = {
        id: msg.id,
        results,
        initMs,
        busyMs: performance.now() - t,
        heapMB: getHeapStatistics().total_heap_size / 1048576,
      };
      initMs = undefined;
      parentPort!.postMessage(res);
    },
    (e: Error) => {
      const res: WorkerResponse = { id: msg.id, results: [], fatal: `parser init failed: ${e.message}`, busyMs: 0 };
      parentPort!.postMessage(res);
    },
  );
});
