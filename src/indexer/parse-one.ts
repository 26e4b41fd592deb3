// Parse one file's bytes into the facts row the store keeps: used by the parse workers
// and by the on-demand loader (src/resolve/ondemand.ts), so a content parsed either way
// gives the same row under the same blob id.
import { bindSource } from '../parse/binder.js';
import type { ParseOutcome } from './pool.js';
import { decodePython, gitBlobId } from './source.js';

/** Facts of `buf` (read from `path`); the parser must be initialised in this thread. */
export function parseBuffer(path: string, buf: Buffer): ParseOutcome {
  const blob = gitBlobId(buf);
  const dec = decodePython(buf);
  const t = performance.now();
  try {
    const facts = bindSource(dec.text);
    const parseMs = performance.now() - t;
    const e0 = facts.errors[0];
    return {
      path,
      blob,
      json: JSON.stringify(facts),
      lines: facts.lines,
      errors: facts.errors.length,
      firstError: e0 ? `line ${e0.line}:${e0.column}: ${e0.message}` : null,
      parseMs,
      size: buf.length,
      encoding: dec.encoding,
      problem: dec.problem,
    };
  } catch (e) {
    const err = e as Error;
    return {
      path,
      blob,
      json: null,
      lines: 0,
      errors: 0,
      parseMs: performance.now() - t,
      size: buf.length,
      encoding: dec.encoding,
      problem: { kind: 'binder-error', message: `${err.name}: ${err.message}`.slice(0, 2000) },
    };
  }
}
