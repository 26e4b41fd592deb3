// Helpers for storing validation results: the "validation" field of a block record,
// and the cache key that lets re-validation skip an unchanged module in the same
// environment (content hash + environment id).
import { createHash } from 'node:crypto';
import type { Stage, ValidationRecord } from '../records/validation.js';
import { DEFAULT_REQUIRED_STAGES, type ValidationRequest, type ValidationResult } from './types.js';

/** Longest error message a stored record keeps. */
export const MAX_STORED_ERROR = 1000;

/** A text of at most `n` characters (plus the elision mark), cut from the middle: its
 *  beginning (the exception's type, a traceback's outer frames) and its end (the
 *  message's end, the innermost frames and the exception line) are what tell why. */
export function capMiddle(s: string | null, n: number): string | null {
  if (s === null || s.length <= n) return s;
  const head = Math.floor(n / 3);
  return s.slice(0, head) + '…' + s.slice(s.length - (n - head));
}

/**
 * A result as it may be stored (validation cache, `library/failed/*.json`): no text a
 * candidate printed (`output`), a traceback reduced to its frame lines and the
 * exception line (no source lines: they quote files), both it and the error message
 * capped from the middle (MAX_STORED_ERROR characters for the message), so the
 * exception's type and message and the innermost frames stay. Whatever a candidate read
 * cannot travel further than the capped message of its own failure.
 */
export function forStorage(r: ValidationResult): ValidationResult {
  const out: ValidationResult = { ...r, error: capMiddle(r.error, MAX_STORED_ERROR) };
  delete out.output;
  if (r.traceback !== undefined) {
    const lines = r.traceback.split('\n');
    const frames = lines.filter((l) => /^\s*File "/.test(l) || /^Traceback /.test(l));
    const last = [...lines].reverse().find((l) => l.trim() && !/^\s/.test(l) && !/^Traceback /.test(l));
    const tail = last && !frames.includes(last) ? [capMiddle(last, MAX_STORED_ERROR)!] : [];
    out.traceback = capMiddle([...frames, ...tail].join('\n'), 4000 + MAX_STORED_ERROR) ?? undefined;
  }
  return out;
}

/** The `"validation"` object of a library record. */
export function toRecord(r: ValidationResult): ValidationRecord {
  const rec: ValidationRecord = {
    stages: r.stages,
    category: r.category,
    error: capMiddle(r.error, MAX_STORED_ERROR),
    args: r.args,
    input_shapes: r.input_shapes,
    output_shapes: r.output_shapes,
    params: r.params,
    envId: r.envId,
  };
  if (r.argumentsSource) rec.argumentsSource = r.argumentsSource;
  if (r.argumentsOrigin) rec.argumentsOrigin = r.argumentsOrigin;
  if (r.equivalence) {
    // the original's build time is the run's (the cost table reads it from the result),
    // not a fact of the block: a record keeps the same bytes from run to run (issue 28)
    const { originalMs: _ms, ...equivalence } = r.equivalence;
    rec.equivalence = equivalence;
  }
  if (r.namespace) rec.namespace = r.namespace;
  if (r.python) rec.python = r.python;
  if (r.usage) {
    rec.usage = r.usage;
    if (r.usageCheck) rec.usageCheck = r.usageCheck;
    if (r.usageDraws) rec.usageDraws = r.usageDraws;
  } else if (r.usageSkipped && r.stages.forward === 'pass') rec.usageSkipped = r.usageSkipped;
  if (r.environment) rec.environment = r.environment;
  return rec;
}

/**
 * Key of one validation: the same module text, class, call sites, original and required
 * stages in the same environment give the same key, so a stored result can be reused (an
 * arguments-only request has a key of its own: its result is not a whole validation).
 */
export function validationKey(req: ValidationRequest, envId: string): string {
  const h = createHash('sha256');
  h.update(
    JSON.stringify({
      source: req.source,
      className: req.className,
      callSites: req.callSites ?? [],
      dataSites: req.dataSites ?? [],
      witnesses: req.witnesses ?? [],
      original: req.original ?? null,
      namespace: req.namespace ?? null,
      // (only when given: the keys of requests without it stay as they were)
      ...(req.usagePackages?.length ? { usagePackages: req.usagePackages } : {}),
      required: req.requiredStages ?? DEFAULT_REQUIRED_STAGES,
      ...(req.argumentsOnly ? { argumentsOnly: true } : {}),
      envId,
    }),
  );
  return h.digest('hex');
}

/** Whether a result passes the given required stages (for re-promotion with other
 *  settings). A namespace stage that ran and failed (a name of the copy means something
 *  else) fails it too, required or not: that copy computes with the wrong object. */
export function passesStages(
  r: Pick<ValidationResult, 'stages'>,
  required: readonly Stage[] = DEFAULT_REQUIRED_STAGES,
): boolean {
  return required.every((s) => r.stages[s] === 'pass') && r.stages.namespace !== 'fail';
}
