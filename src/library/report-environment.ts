// The report's split between what the validation environment lacks and what fails in the
// block itself: a `missing-extern` failure whose module Debian packages but the
// environment has not installed (`lacks`), or that no Debian package provides
// (`no-package`), is the environment's; everything else (another version's API included,
// which is a fact about the block's expectations) is the block's. And why equivalence
// did not run after a forward pass, counted by reason.
import type { MissingRequirement } from '../records/validation.js';
import type { StoredExtraction } from '../store/records.js';

export interface EnvironmentLack {
  module: string;
  distribution: string;
  debian: string;
  /** Debian's candidate version when Debian has the package */
  candidate: string | null;
  verdict: 'lacks' | 'no-package' | 'unknown';
  blocks: number;
}

interface V {
  stages?: Record<string, string>;
  category?: string | null;
  missing?: MissingRequirement;
  equivalence?: { status?: string; reason?: string };
}

/** Is this failed record's failure the environment's (a requirement it lacks)? */
export function environmentLack(v: V | undefined): MissingRequirement | null {
  if (v?.category !== 'missing-extern' || !v.missing) return null;
  return v.missing.verdict === 'version' ? null : v.missing;
}

/** Requirements the environment lacks, with the number of blocks each one failed. */
export function environmentLacks(records: readonly StoredExtraction[]): EnvironmentLack[] {
  const out = new Map<string, EnvironmentLack>();
  for (const r of records) {
    if (r.status !== 'failed') continue;
    const m = environmentLack(r.record.validation as V | undefined);
    if (!m) continue;
    const e = out.get(m.module) ?? {
      module: m.module,
      distribution: m.distribution,
      debian: m.debian,
      candidate: m.candidate,
      verdict: m.verdict as EnvironmentLack['verdict'],
      blocks: 0,
    };
    e.blocks++;
    out.set(m.module, e);
  }
  return [...out.values()].sort((a, b) => b.blocks - a.blocks || a.module.localeCompare(b.module));
}

/** A skip reason without its particulars, so that equal causes count together:
 *  `original does not import: ModuleNotFoundError: No module named 'cv2'` →
 *  `original does not import: missing cv2`; numbers → N. */
export function skipReason(reason: string | undefined): string {
  if (!reason) return 'no reason given';
  const missing = /No module named '([\w]+)/.exec(reason);
  const head = reason.split(':')[0].trim();
  if (missing) return `${head}: missing ${missing[1]}`;
  const err = /:\s*(\w+(?:Error|Exception))\b/.exec(reason);
  return (err ? `${head}: ${err[1]}` : head).replace(/\d+(\.\d+)?/g, 'N').slice(0, 90);
}

/** Why equivalence did not run for blocks that passed forward, counted by reason. */
export function equivalenceSkips(records: readonly StoredExtraction[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) {
    const v = r.record.validation as V | undefined;
    if (v?.stages?.forward !== 'pass') continue;
    const s = v.stages.equivalence;
    if (s === 'pass' || s === 'fail') continue;
    const k = skipReason(v.equivalence?.reason);
    out[k] = (out[k] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
}
