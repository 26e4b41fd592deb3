// Training pairs for fine-tuning a language model (`nnrag export-pairs --out pairs.jsonl`):
// one JSON object per line with an `instruction` — a neutral description built only from
// the block's spec (category, summary, constructor and forward signatures, shapes, layer
// inventory) — and a `target`, the standalone module text, plus the license of every
// repository the module copies from and the provenance (SWHIDs) of its lines, so a data
// set can be filtered by license and every target traced to its sources.
import { writeFileSync } from 'node:fs';
import type { IndexStore } from '../store/store.js';
import { detectLicense } from './provenance.js';
import { listExtractions } from '../store/records.js';
import { formatSignature } from './spec.js';
import type { BlockSpec } from '../records/spec.js';
import { listSpecs } from './library.js';

export interface TrainingPair {
  id: string;
  instruction: string;
  target: string;
  category: string;
  status: string;
  /** SPDX id of the block's own repository */
  license: string;
  /** every repository the module copies from, with its license */
  repos: { name: string; url: string | null; revision: string | null; license: string }[];
  provenance: { repo: string; path: string; swhid: string; lines: [number, number][] }[];
}

const shape = (s: number[]) => `[${s.join(', ')}]`;

/** The instruction text of a block: what to write, from derived facts only. */
export function instructionOf(spec: BlockSpec): string {
  const parts: string[] = [];
  parts.push(`Write a self-contained PyTorch module (${spec.category}) named ${spec.class}.`);
  if (spec.summary) parts.push(`Purpose: ${spec.summary}`);
  parts.push(`Constructor: ${formatSignature(spec.class, spec.init)}.`);
  parts.push(`Forward: ${formatSignature('forward', spec.forward)}.`);
  if (spec.input_shapes?.length && spec.output_shapes?.length) {
    parts.push(
      `With the default arguments it maps inputs of shape ${spec.input_shapes.map(shape).join(', ')} ` +
        `to outputs of shape ${spec.output_shapes.map(shape).join(', ')}.`,
    );
  }
  const layers = Object.entries(spec.layers).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  if (layers.length) parts.push(`It contains ${layers.map(([t, n]) => (n > 1 ? `${n}× ${t}` : t)).join(', ')}.`);
  if (spec.params !== null) parts.push(`Parameters: ${spec.params}.`);
  const ext = spec.externs.filter((e) => e !== 'torch');
  parts.push(`Use only torch${ext.length ? ` and ${ext.join(', ')}` : ''} imports.`);
  return parts.join(' ');
}

export interface PairOptions {
  /** include blocks that failed validation or were not validated (default: validated only) */
  all?: boolean;
}

/** Training pairs of the stored library (run `buildLibrary` first: pairs come from specs). */
export function trainingPairs(store: IndexStore, opts: PairOptions = {}): TrainingPair[] {
  const specs = listSpecs(store).filter((s) => opts.all || s.status === 'validated');
  const texts = new Map(listExtractions(store).map((e) => [e.id, e]));
  const repos = new Map(store.listRepos().map((r) => [r.name, r]));
  const licenses = new Map<string, string>();
  const licenseOf = (name: string) => {
    let l = licenses.get(name);
    if (l === undefined)
      licenses.set(name, (l = repos.has(name) ? detectLicense(repos.get(name)!.root).spdx : 'unknown'));
    return l;
  };
  const out: TrainingPair[] = [];
  for (const spec of specs) {
    const ex = texts.get(spec.id);
    if (!ex?.text) continue;
    const prov = ex.record.provenance;
    const names = [...new Set([spec.origin.repo, ...prov.map((p) => p.repo)])];
    out.push({
      id: spec.id,
      instruction: instructionOf(spec),
      target: ex.text,
      category: spec.category,
      status: spec.status,
      license: licenseOf(spec.origin.repo),
      repos: names.map((n) => ({
        name: n,
        url: repos.get(n)?.url ?? null,
        revision: repos.get(n)?.revision ?? null,
        license: licenseOf(n),
      })),
      provenance: prov.map((p) => ({ repo: p.repo, path: p.path, swhid: p.swhid, lines: p.ranges })),
    });
  }
  return out;
}

/** Write pairs as JSON Lines; returns the number of lines. */
export function writePairs(file: string, pairs: readonly TrainingPair[]): number {
  writeFileSync(file, pairs.map((p) => JSON.stringify(p) + '\n').join(''));
  return pairs.length;
}
