// The zygote tests' set-up: a fixture repository (its packages at its top) indexed in a
// temporary store, and one validation request per block with its original module for the
// namespace and equivalence stages; and the verdict those tests expect of each.
import assert from 'node:assert/strict';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import type { ValidationRequest, ValidationResult } from '../../src/validate/index.js';
import { tempDir } from '../helpers.js';

/** Requests for `targets` (qualified class names) of the repository at `dir`. */
export async function originalRequests(
  dir: string,
  name: string,
  targets: string[],
): Promise<Map<string, ValidationRequest>> {
  const reqs = new Map<string, ValidationRequest>();
  const ws = api.Workspace.open(path.join(tempDir(`nnrag-${name}-`), 'store'));
  try {
    await api.index(ws, {
      repos: [{ name, url: null, path: dir, priority: 1, paths: [], description: null, packageRoots: [''] }],
      workers: 1,
    });
    for (const target of targets) {
      const { text, namespace, record } = api.extractText(ws, target);
      assert.ok(text && namespace, record.error);
      const dot = target.lastIndexOf('.');
      reqs.set(target, {
        id: target,
        source: text,
        className: target.slice(dot + 1),
        original: { module: target.slice(0, dot), className: target.slice(dot + 1), sysPath: [dir] },
        namespace,
        requiredStages: ['import', 'instantiate', 'forward', 'equivalence'],
      });
    }
  } finally {
    ws.close();
  }
  return reqs;
}

/** The block passed, its names are the original's, and it computes the original's outputs. */
export function passesWithOriginal(r: ValidationResult): void {
  assert.equal(r.ok, true, `${r.id}: ${r.stage} ${r.error}`);
  assert.equal(r.stages.namespace, 'pass', `${r.id}: ${JSON.stringify(r.namespace)}`);
  assert.equal(r.stages.equivalence, 'pass', `${r.id}: ${JSON.stringify(r.equivalence)}`);
}
