// Helpers for storing validation results: the "validation" field of a block record,
// and the cache key that lets re-validation skip an unchanged module in the same
// environment (content hash + environment id).
import { createHash } from 'node:crypto';
import { DEFAULT_REQUIRED_STAGES, type Stage, type ValidationRequest, type ValidationResult } from './types.js';

/** The `"validation"` object of a library record: the result without timings,
 *  traceback and output. */
export type ValidationRecord = Pick<
  ValidationResult,
  'stages' | 'category' | 'error' | 'args' | 'input_shapes' | 'output_shapes' | 'params' | 'envId' | 'equivalence' | 'namespace' | 'layers'
>;

/** The `"validation"` object of a library record. */
export function toRecord(r: ValidationResult): ValidationRecord {
  const rec: ValidationRecord = {
    stages: r.stages,
    category: r.category,
    error: r.error,
    args: r.args,
    input_shapes: r.input_shapes,
    output_shapes: r.output_shapes,
    params: r.params,
    envId: r.envId,
  };
  if (r.equivalence) rec.equivalence = r.equivalence;
  if (r.namespace) rec.namespace = r.namespace;
  return rec;
}

/**
 * Key of one validation: the same module text, class, call sites, original and required
 * stages in the same environment give the same key, so a stored result can be reused.
 */
export function validationKey(req: ValidationRequest, envId: string): string {
  const h = createHash('sha256');
  h.update(
    JSON.stringify({
      source: req.source,
      className: req.className,
      callSites: req.callSites ?? [],
      dataSites: req.dataSites ?? [],
      original: req.original ?? null,
      namespace: req.namespace ?? null,
      required: req.requiredStages ?? DEFAULT_REQUIRED_STAGES,
      envId,
    }),
  );
  return h.digest('hex');
}

/** Whether a result passes the given required stages (for re-promotion with other
 *  settings). A namespace stage that ran and failed (a name of the copy means something
 *  else) fails it too, required or not: that copy computes with the wrong object. */
export function passesStages(r: Pick<ValidationResult, 'stages'>, required: readonly Stage[] = DEFAULT_REQUIRED_STAGES): boolean {
  return required.every((s) => r.stages[s] === 'pass') && r.stages.namespace !== 'fail';
}
