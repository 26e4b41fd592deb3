// The library stage: from the stored extraction records to the published library folder.
// For every stored block it writes, next to the block's module (`<out>/blocks/`,
// `<out>/failed/` or `<out>/extracted/`):
//   <id>.spec.json            the neutral spec (spec.ts / records/spec.ts), no source code
//   <id>.required_repos.json  repositories, revisions and file SWHIDs the block copies from
// and for the whole library `<out>/required_repos.json` and `<out>/requirements.txt` (PEP 508
// pins of the extern imports, versions read from the validation environment). Specs and
// de-duplication clusters are also stored in the IndexStore (schema v3), so everything the
// CLI prints with --json is in the store.
import { createHash } from 'node:crypto';
import { writeFileAtomic } from '../util/fs.js';
import type { Workspace } from '../workspace.js';
import { classSignature, classStatement } from '../resolve/classes.js';
import { libraryDir, libraryFile, placeBlockFile } from './layout.js';
import type { IndexStore, IndexedRepo } from '../store/store.js';
import { KV_KEYS, requirementsKey } from '../store/kv.js';
import { clusterOf, listClusters, putDedup, putSpecs, type MemberRows } from '../store/specs.js';
import { parseBlockId } from '../discover/ids.js';
import {
  dedup,
  encodeSignatures,
  SIGNATURE_VERSION,
  type DedupOptions,
  type DedupResult,
  type StoredSignatureSink,
} from './dedup.js';
import {
  eachDedupSignature,
  pruneDedupSignatures,
  putDedupSignatures,
  unsignedTexts,
  type DedupSignatureRow,
} from '../store/dedup-sigs.js';
import type { DedupCluster } from '../records/spec.js';
import {
  blockManifest,
  checkSwhids,
  detectLicense,
  libraryManifest,
  type LicenseInfo,
  type RequiredRepos,
} from './provenance.js';
import {
  cachedValidationTexts,
  dedupRows,
  extractionHashes,
  extractionText,
  listExtractions,
  type StoredExtraction,
} from '../store/records.js';
import { requirementLines, resolveRequirements, type Requirement } from '../environment/requirements.js';
import { buildSpec, initSpecParser, type ValidationFacts } from './spec.js';
import type { BlockSpec } from '../records/spec.js';

export { getSpec, listSpecs, putSpecs } from '../store/specs.js';

// ---------------------------------------------------------------- requirements

/**
 * PEP 508 requirements of top-level import names in the validation environment, probed
 * once per environment and cached in the store's kv table (`requirements:<env>`); only
 * names not cached yet are probed.
 */
export async function environmentRequirements(
  store: IndexStore,
  names: readonly string[],
  opts: { python?: string; envKey?: string } = {},
): Promise<Map<string, Requirement>> {
  const python = opts.python ?? process.env.NNRAG_PYTHON ?? '/usr/bin/python3';
  const key = requirementsKey(opts.envKey ?? `python:${python}`);
  const cached = JSON.parse(store.getKV(key) ?? '{}') as Record<string, Requirement>;
  const missing = [...new Set(names)].filter((n) => !(n in cached)).sort();
  if (missing.length) {
    for (const r of await resolveRequirements(missing, { python })) cached[r.importName] = r;
    store.setKV(key, JSON.stringify(cached));
  }
  return new Map(names.filter((n) => n in cached).map((n) => [n, cached[n]]));
}

// ---------------------------------------------------------------- stored validation results

/** What the full validation result adds to a record's `validation` object. */
export interface ValidationExtras {
  layers?: Record<string, number>;
  timings?: Record<string, number>;
  ms?: number;
}

/**
 * The full stored validation results (the pool's cache, keyed by module content and
 * environment) of the given records: the one per block whose environment and stage results
 * match the record's. Gives the per-stage timings, and the layer inventory for records
 * stored before the pipeline kept `layers` in them.
 */
export function storedValidationResults(
  store: IndexStore,
  records: readonly StoredExtraction[],
): Map<string, ValidationExtras> {
  const want = new Map(records.flatMap((r) => (r.record.validation ? [[r.id, r.record.validation] as const] : [])));
  const out = new Map<string, ValidationExtras>();
  if (!want.size) return out;
  for (const row of cachedValidationTexts(store)) {
    const m = /"id":"([^"]+)"/.exec(row); // cheap pre-filter before parsing
    if (!m || !want.has(m[1]) || out.has(m[1])) continue;
    const res = JSON.parse(row) as { id: string; envId: string; stages: Record<string, string> } & ValidationExtras;
    const v = want.get(res.id)!;
    if (res.envId !== v.envId || JSON.stringify(res.stages) !== JSON.stringify(v.stages)) continue;
    out.set(res.id, { layers: res.layers, timings: res.timings, ms: res.ms });
  }
  return out;
}

// ---------------------------------------------------------------- building

export interface LibraryOptions {
  /** library folder (default `<store>/library`) */
  out?: string;
  /** interpreter of the validation environment (requirements); default NNRAG_PYTHON or /usr/bin/python3 */
  python?: string;
}

export interface LibraryResult {
  out: string;
  specs: number;
  byStatus: Record<string, number>;
  byCategory: Record<string, number>;
  /** requirements.txt lines */
  requirements: string[];
  /** library manifest (also `<out>/required_repos.json`) */
  manifest: RequiredRepos;
  /** manifest files whose bytes on disk differ from the recorded SWHID (changed since indexing) */
  changedFiles: { repo: string; path: string; expected: string; actual: string | null }[];
  warnings: string[];
  ms: number;
}

function validationOf(e: StoredExtraction, extras: Map<string, ValidationExtras>): ValidationFacts | null {
  const v = e.record.validation;
  if (!v) return null;
  const layers = v.layers ?? extras.get(e.id)?.layers;
  return layers ? { ...v, layers } : v;
}

/** Build specs, manifests and requirements for every stored extraction. */
export async function buildLibrary(ws: Workspace, opts: LibraryOptions = {}): Promise<LibraryResult> {
  const t0 = performance.now();
  const out = libraryDir(ws.storeDir, opts.out);
  const warnings: string[] = [];
  await initSpecParser();
  const store = ws.store;
  const extractions = listExtractions(store).filter((e) => e.text);
  const blocks = new Map(store.listBlocks().map((b) => [b.id, b]));
  const repos = new Map<string, IndexedRepo>(store.listRepos().map((r) => [r.name, r]));
  const licenses = new Map<string, LicenseInfo>([...repos.values()].map((r) => [r.name, detectLicense(r.root)]));
  const corpus = ws.corpus();
  const resolver = ws.resolver();

  // requirements of every extern top-level name, from the validation environment
  const externNames = [...new Set(extractions.flatMap((e) => e.record.externs.map((x) => x.split('.')[0])))].filter(
    Boolean,
  );
  const envId = extractions.map((e) => e.record.validation?.envId).find((x) => !!x);
  let reqs = new Map<string, Requirement>();
  try {
    reqs = await environmentRequirements(store, externNames, {
      python: opts.python,
      envKey: envId ? `env:${envId}` : undefined,
    });
  } catch (e) {
    warnings.push(`requirements not resolved: ${(e as Error).message}`);
  }
  const reqMap = new Map<string, string | null>([...reqs].map(([k, r]) => [k, r.pep508]));
  // layer inventories of records stored before the pipeline kept them
  const older = extractions.filter((e) => e.record.validation && !e.record.validation.layers);
  const extras = older.length ? storedValidationResults(store, older) : new Map<string, ValidationExtras>();

  const specs: BlockSpec[] = [];
  for (const e of extractions) {
    const { module: modName, className, repo: idRepo } = parseBlockId(e.id);
    const own = blocks.get(e.id)?.repo ?? idRepo;
    const mod = own
      ? corpus.ownModule(own, modName)
      : corpus.modulesNamed(modName).find((m) => m.facts.classes.some((c) => c.name === className));
    const cls = classStatement(mod, className);
    // the signature extraction recorded; records made before it carry none: read it now
    const signature = e.record.signature ?? (mod && cls ? classSignature(resolver, mod, cls) : null);
    const row = blocks.get(e.id);
    const provenance = e.record.provenance;
    const repoName = row?.repo ?? mod?.repo ?? provenance[0]?.repo ?? 'unknown';
    const repo = repos.get(repoName);
    const spec = buildSpec({
      id: e.id,
      status: e.status,
      lines: e.lines,
      text: e.text,
      signature,
      origin: {
        repo: repoName,
        module: modName,
        path: row?.path ?? mod?.path ?? provenance.find((p) => p.module === modName)?.path ?? '',
        line: row?.line ?? cls?.line ?? 0,
        revision: repo?.revision ?? null,
        url: repo?.url ?? null,
      },
      interned: e.record.interned,
      externs: e.record.externs,
      provenance,
      validation: validationOf(e, extras),
      requirements: reqMap,
    });
    if (!signature) warnings.push(`${e.id}: class no longer in the index; spec without signature and docstring`);
    specs.push(spec);

    // files next to the module; copies in the other status folders go (library/layout.ts)
    placeBlockFile(out, e.status, e.id, '.spec.json', JSON.stringify(spec, null, 2) + '\n');
    placeBlockFile(
      out,
      e.status,
      e.id,
      '.required_repos.json',
      JSON.stringify(blockManifest(e.id, provenance, repos, licenses), null, 2) + '\n',
    );
  }
  putSpecs(store, specs);

  const manifest = libraryManifest(
    extractions.map((e) => ({ id: e.id, provenance: e.record.provenance })),
    repos,
    licenses,
  );
  writeFileAtomic(libraryFile(out, 'required_repos.json'), JSON.stringify(manifest, null, 2) + '\n');
  const changedFiles = checkSwhids(manifest, repos);
  for (const c of changedFiles)
    warnings.push(`${c.repo}:${c.path} changed since indexing (${c.expected} → ${c.actual ?? 'missing'})`);

  // requirements.txt: the externs of the promoted blocks (of every block when none is validated)
  const validated = specs.filter((s) => s.status === 'validated');
  const forReqs = validated.length ? validated : specs;
  const used = new Set(forReqs.flatMap((s) => s.externs));
  const requirements = requirementLines([...reqs.values()].filter((r) => used.has(r.importName)));
  writeFileAtomic(
    libraryFile(out, 'requirements.txt'),
    `# PEP 508 requirements of the extern imports of the ${validated.length ? 'validated ' : ''}library blocks,\n` +
      `# versions as installed in the validation environment\n` +
      requirements.map((l) => l + '\n').join(''),
  );

  const count = (xs: string[]) =>
    xs.reduce<Record<string, number>>((a, x) => {
      a[x] = (a[x] ?? 0) + 1;
      return a;
    }, {});
  const result: LibraryResult = {
    out,
    specs: specs.length,
    byStatus: count(specs.map((s) => s.status)),
    byCategory: count(specs.map((s) => s.category)),
    requirements,
    manifest,
    changedFiles,
    warnings,
    ms: Math.round(performance.now() - t0),
  };
  store.setKV(KV_KEYS.libraryLast, JSON.stringify({ ...result, manifest: undefined, at: new Date().toISOString() }));
  return result;
}

// ---------------------------------------------------------------- de-duplication

export interface StoredDedup {
  /** digest of the (id, module hash) pairs the clusters were computed from */
  inputs: string;
  at: string;
  uniqueCount: number;
  total: number;
  perRepo: DedupResult['perRepo'];
  excluded: DedupResult['excluded'];
  timings: DedupResult['timings'];
  /** CPU milliseconds per phase (all threads of the process) */
  cpu?: Record<string, number>;
  /** blocks whose signature was stored, and those computed by this run */
  signatures?: DedupResult['signatures'];
  /** stored signature rows this run dropped (no stored block's module content any more) */
  prunedSignatures?: number;
  /** counts of clusters by kind */
  kinds: Record<string, number>;
  clusters: DedupCluster[];
}

function inputsDigest(es: readonly { id: string; hash: string }[]): string {
  const h = createHash('sha256');
  // the store lists blocks by id already (ORDER BY id): sorted again only when they are not
  // in this order (at 10^6 blocks the sort cost seconds); hashed in chunks of lines, the
  // digest of the same bytes as one update per line
  let sorted = true;
  for (let i = 1; i < es.length && sorted; i++) sorted = es[i - 1].id < es[i].id;
  const list = sorted ? es : [...es].sort((a, b) => (a.id < b.id ? -1 : 1));
  let chunk = '';
  for (const e of list) {
    chunk += `${e.id}\0${e.hash}\n`;
    if (chunk.length > 1 << 16) {
      h.update(chunk);
      chunk = '';
    }
  }
  h.update(chunk);
  return h.digest('hex').slice(0, 16);
}

/** Compute and store the de-duplication signature of every stored module content that has
 *  none of this version (a store extracted by an older nnrag, a merged shard without them).
 *  Returns how many were computed. */
export function storeMissingSignatures(store: IndexStore): number {
  let n = 0;
  for (;;) {
    const batch = unsignedTexts(store, SIGNATURE_VERSION, 500);
    if (!batch.length) return n;
    const sigs = encodeSignatures(batch.map(([, text]) => text));
    putDedupSignatures(
      store,
      batch.map(([hash], j) => ({ hash, version: SIGNATURE_VERSION, error: sigs[j].error, data: sigs[j].data })),
    );
    n += batch.length;
  }
}

export interface RunDedupOptions extends DedupOptions {
  /** false: ignore the stored signatures, compute every block's from its module text and
   *  store none (what dedup did before signatures were stored; to compare the two) */
  storedSignatures?: boolean;
}

/** De-duplicate every stored extraction's module text and store the clusters. The blocks'
 *  signatures come from the store (computed when they were extracted or merged); a block
 *  whose module content has no signature of this version gets one computed from its text,
 *  stored for the next run. Module texts are read only for those, and for the syntax check
 *  of clustered blocks that validation did not parse. */
export async function runDedup(ws: Pick<Workspace, 'store'>, opts: RunDedupOptions = {}): Promise<StoredDedup> {
  const store = ws.store;
  const { storedSignatures, ...dedupOpts } = opts;
  const useStored = storedSignatures !== false;
  let t0 = performance.now();
  let c0 = process.cpuUsage();
  const cpuSince = (c: NodeJS.CpuUsage) => {
    const d = process.cpuUsage(c);
    return Math.round((d.user + d.system) / 1000);
  };
  const es = dedupRows(store);
  const rowsMs = Math.round(performance.now() - t0);
  const rowsCpu = cpuSince(c0);
  // block positions by module content hash (identical modules share one signature)
  const byHash = new Map<string, number | number[]>();
  es.forEach((e, i) => {
    const at = byHash.get(e.hash);
    if (at === undefined) byHash.set(e.hash, i);
    else if (typeof at === 'number') byHash.set(e.hash, [at, i]);
    else at.push(i);
  });
  let unusedRows: string[] = [];
  const pending: DedupSignatureRow[] = [];
  const flush = () => putDedupSignatures(store, pending.splice(0));
  const res = await dedup(
    es.map((e) => ({
      id: e.id,
      repo: e.repo ?? 'unknown',
      // validation stage 1 already parsed the module: pass what it found
      parseable: e.parse === 'pass' ? true : e.parse === 'fail' ? false : undefined,
    })),
    {
      repoPriority: store
        .listRepos()
        .sort((a, b) => a.priority - b.priority)
        .map((r) => r.name),
      ...dedupOpts,
      loadText: (id) => extractionText(store, id),
      ...(useStored
        ? {
            stored: (sink: StoredSignatureSink) => {
              unusedRows = eachDedupSignature(store, SIGNATURE_VERSION, byHash, (_hash, error, data, at) => {
                if (typeof at === 'number') sink(at, error, data);
                else for (const i of at!) sink(i, error, data);
              }).unused;
            },
            computed: (i: number, error: string | null, data: Uint8Array) => {
              pending.push({ hash: es[i].hash, version: SIGNATURE_VERSION, error, data });
              if (pending.length >= 2000) flush();
            },
          }
        : {}),
    },
  );
  flush();
  // rows no block uses (its module changed or went, a merge replaced a repository's
  // blocks, another signature version) are dropped: dedup is what reads them, and it saw
  // them all; those it saw, by hash (a pass over every row costs seconds at 10^6)
  t0 = performance.now();
  c0 = process.cpuUsage();
  const pruned = pruneDedupSignatures(store, SIGNATURE_VERSION, unusedRows);
  const kinds: Record<string, number> = {};
  for (const c of res.clusters) kinds[c.kind] = (kinds[c.kind] ?? 0) + 1;
  const stored: StoredDedup = {
    inputs: inputsDigest(es),
    at: new Date().toISOString(),
    uniqueCount: res.uniqueCount,
    total: res.total,
    perRepo: res.perRepo,
    excluded: res.excluded,
    timings: res.timings,
    signatures: res.signatures,
    prunedSignatures: pruned,
    kinds,
    clusters: res.clusters,
  };
  // the member rows in block order, which is id order as the store lists the blocks
  // (dedupRows: ORDER BY id; checked here with the `<` putDedup sorts by)
  let idOrder = true;
  for (let i = 1; i < es.length && idOrder; i++) idOrder = es[i - 1].id < es[i].id;
  let rows: MemberRows | undefined;
  if (idOrder) {
    const ids: string[] = [];
    const cluster: number[] = [];
    for (let i = 0; i < es.length; i++)
      if (res.memberOf[i] >= 0) {
        ids.push(es[i].id);
        cluster.push(res.memberOf[i] + 1);
      }
    rows = { ids, cluster };
  }
  putDedup(store, res.clusters, { ...stored, clusters: undefined }, rows);
  // the block list read from the store, and the clusters written to it (with the unused
  // signatures dropped)
  stored.timings = { rows: rowsMs, ...res.timings, store: Math.round(performance.now() - t0) };
  stored.cpu = { rows: rowsCpu, ...res.cpu, store: cpuSince(c0) };
  return stored;
}

/** The stored de-duplication result (null when `nnrag dedup` never ran); `fresh` tells whether
 *  the stored extractions are still those it was computed from. */
export function getDedup(store: IndexStore): (StoredDedup & { fresh: boolean }) | null {
  const s = store.getKV(KV_KEYS.dedupLast);
  if (!s) return null;
  const summary = JSON.parse(s) as Omit<StoredDedup, 'clusters'>;
  const clusters = listClusters(store);
  const fresh = inputsDigest(extractionHashes(store)) === summary.inputs;
  return { ...summary, clusters, fresh };
}

export { clusterOf };

// ---------------------------------------------------------------- diversity top-up

export interface TopUp {
  category: string;
  /** unique blocks of the category (singletons and cluster representatives) */
  unique: number;
  /** cluster members added back so the category has at least `min` blocks */
  added: string[];
}

/**
 * Optional diversity top-up of the de-duplicated library: a category with fewer than `min`
 * unique blocks gets back members of its duplicate clusters, the least similar to their
 * representative first (lowest near-duplicate Jaccard, then id), until it has `min` blocks
 * or runs out of members. Only blocks with specs of the given status count.
 */
export function diversityTopUp(
  specs: readonly BlockSpec[],
  clusters: readonly DedupCluster[],
  min: number,
  status = 'validated',
): TopUp[] {
  const byId = new Map(specs.filter((s) => !status || s.status === status).map((s) => [s.id, s]));
  const nonRep = new Map<string, number>(); // member → near score with its representative
  for (const c of clusters) {
    for (const sc of c.scores ?? c.members.map((id) => ({ id, near: 1 })))
      if (sc.id !== c.representative) nonRep.set(sc.id, sc.near);
  }
  const unique = new Map<string, number>();
  const spare = new Map<string, [string, number][]>();
  for (const s of byId.values()) {
    if (nonRep.has(s.id)) {
      let l = spare.get(s.category);
      if (!l) spare.set(s.category, (l = []));
      l.push([s.id, nonRep.get(s.id)!]);
    } else unique.set(s.category, (unique.get(s.category) ?? 0) + 1);
  }
  const cats = [...new Set([...unique.keys(), ...spare.keys()])].sort();
  return cats.map((category) => {
    const have = unique.get(category) ?? 0;
    const pool = (spare.get(category) ?? []).sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
    return { category, unique: have, added: pool.slice(0, Math.max(0, min - have)).map(([id]) => id) };
  });
}
