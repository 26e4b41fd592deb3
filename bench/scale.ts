// The library at scale (docs/SCALE.md): a synthetic merged library of N blocks made from
// real emitted blocks (the extractions of a store, e.g. one `nnrag extract --all` or one
// `nnrag merge` of the corpus), each copy edited as repositories copy code: every class the
// module defines renamed (a structural duplicate of its source), and for some copies an
// integer literal changed, a statement or a comment added (near duplicates, near-misses).
// Measured, each on whole N:
//   dedup        the library's de-duplication (src/library/dedup.ts) over the N texts   (target ≤ 60 s)
//   dedup-store  the same on a store of the N blocks, their signatures stored at extraction
//   store+sync   the N records written as extractions, the FTS index and signatures built
//   search       searchBlocks p50/p95 over a query mix (names, words, filters)          (target p95 ≤ 50 ms)
//   catalog      the web catalog's pages over HTTP: search pages and block pages         (target p95 ≤ 100 ms)
// Wall and CPU time are both printed: this machine's 2 cores are shared, the load average
// is printed with each figure.
//
//   node --max-old-space-size=12000 dist/bench/scale.js --from STORE [--sizes 100000,1000000] [--threads T]
//        [--only dedup|search] [--clusters FILE] [--keep DIR]
//   node dist/bench/scale.js --library DIR      search and catalog only, on an existing library (read only)
//   node dist/bench/scale.js --from STORE --sizes N --dedup-store DIR [--signatures stored|computed] [--clusters FILE]
//        dedup as `nnrag dedup` runs it on a store DIR.<N> of the N copies (built first, with each module's
//        signature computed as extraction computes it), from the stored signatures or from the texts
// --clusters FILE writes each size's clusters to FILE.<N> (one line per cluster: kind and
// sorted members), to compare two dedup implementations on the same library.
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseBlockId } from '../src/discover/ids.js';
import { dedup, dedupSignatureRow, type DedupInput } from '../src/library/dedup.js';
import { runDedup } from '../src/library/library.js';
import { emptyRecord, type BlockStatus } from '../src/records/block.js';
import { extractionIds, listExtractions, putExtraction, textHash, type ExtractionWrite } from '../src/store/records.js';
import { IndexStore } from '../src/store/store.js';
import { facets, searchBlocks, syncSearchIndex, type SearchOptions } from '../src/search/fts.js';
import { similarBlocks, syncSignatures } from '../src/search/similar.js';
import { startServer } from '../src/serve/server.js';
import { rng } from './dedup.js';

interface Source {
  id: string;
  repo: string;
  text: string;
  classes: string[];
  status: string;
}

/** The real blocks: every stored extraction with a module text (at most `maxLines` lines:
 *  the 10⁶ copies must fit in memory for the in-process dedup). */
function loadSources(storeDir: string, maxLines: number): Source[] {
  const store = IndexStore.open(storeDir, { create: false });
  try {
    const out: Source[] = [];
    for (const e of listExtractions(store)) {
      if (!e.text || e.lines > maxLines) continue;
      const classes = [...new Set([...e.text.matchAll(/^class\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]))];
      if (!classes.length) continue;
      out.push({ id: e.id, repo: e.record.repository ?? 'unknown', text: e.text, classes, status: e.status });
    }
    return out;
  } finally {
    store.close();
  }
}

/** Copy i of the library: source i mod K, its classes renamed (`Name` → `Name_c<i>`), and
 *  with some probability one integer literal changed, one statement or a comment added.
 *  Deterministic in i. */
function variant(
  sources: Source[],
  i: number,
): { id: string; repo: string; text: string; name: string; status: string } {
  const s = sources[i % sources.length];
  const r = rng(i * 2654435761);
  const suffix = `_c${i}`;
  const names = new RegExp(`\\b(${s.classes.map((c) => c.replace(/[^\w]/g, '')).join('|')})\\b`, 'g');
  let text = i < sources.length ? s.text : s.text.replace(names, (m) => m + suffix);
  const u = r();
  if (u < 0.25) {
    // one integer literal (a width, a kernel size) changed: a near-miss or near duplicate
    let seen = 0;
    const target = Math.floor(r() * 20);
    text = text.replace(/\b(\d{1,4})\b/g, (m) => (seen++ === target ? String(Number(m) * 2 + 1) : m));
  } else if (u < 0.45) {
    text = text.replace(/\n(\s+)return /, (m, ind: string) => `\n${ind}_ = None  # added in copy ${i}${m}`);
  } else if (u < 0.6) {
    text = `# vendored copy ${i}\n${text}`;
  }
  const name = s.classes[s.classes.length - 1] + (i < sources.length ? '' : suffix);
  return {
    id: `r${i % 997}/copy:${s.id.replace(/^.*:/, '')}${i < sources.length ? '' : suffix}`,
    repo: `r${i % 997}/copy`,
    text,
    name,
    status: s.status,
  };
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

const cpuMs = (c: NodeJS.CpuUsage) => Math.round((c.user + c.system) / 1000);
const load = () => Number(os.loadavg()[0].toFixed(1));

/** The clusters as comparable text: one line per cluster, kind and sorted members, lines
 *  sorted (two dedup implementations agree iff these texts are equal). */
function clusterText(clusters: { kind: string; members: string[] }[]): string {
  return clusters
    .map((c) => `${c.kind} ${[...c.members].sort().join(' ')}`)
    .sort()
    .join('\n');
}

async function benchDedup(sources: Source[], N: number, threads?: number, clustersOut?: string) {
  const t0 = performance.now();
  const blocks: DedupInput[] = [];
  let bytes = 0;
  for (let i = 0; i < N; i++) {
    const v = variant(sources, i);
    bytes += v.text.length;
    blocks.push({ id: v.id, repo: v.repo, text: v.text, parseable: true });
  }
  const genMs = Math.round(performance.now() - t0);
  const c0 = process.cpuUsage();
  const t1 = performance.now();
  const res = await dedup(blocks, { threads });
  const dedupMs = Math.round(performance.now() - t1);
  const dedupCpuMs = cpuMs(process.cpuUsage(c0));
  if (clustersOut) writeFileSync(`${clustersOut}.${N}`, clusterText(res.clusters));
  return {
    blocks: N,
    megabytes: Math.round(bytes / 1e6),
    generateMs: genMs,
    dedupMs,
    dedupCpuMs,
    phases: res.timings,
    phasesCpu: res.cpu,
    clusters: res.clusters.length,
    boundedBuckets: res.boundedBuckets,
    largestBoundedBucket: res.largestBoundedBucket,
    unique: res.uniqueCount,
    load: load(),
  };
}

/** Copy i as extraction stores it: the module text, a validated record whose provenance
 *  names the copy's repository, and (with `signature`) the module's de-duplication
 *  signature, as extraction computes it. */
function benchExtraction(
  v: ReturnType<typeof variant>,
  i: number,
  signature?: ExtractionWrite['signature'],
): ExtractionWrite {
  return {
    id: v.id,
    hash: textHash(v.text),
    ok: v.status === 'validated',
    status: (v.status === 'failed' ? 'failed' : 'validated') as BlockStatus,
    lines: v.text.split('\n').length,
    record: {
      ...emptyRecord(v.id, v.repo),
      // where the copy came from, as extraction records it: the search document takes
      // a block's repository from its provenance (without it, every document had an
      // empty repository and the repository-filtered queries below matched nothing)
      provenance: [
        {
          repo: v.repo,
          revision: null,
          url: null,
          path: `${parseBlockId(v.id).module.replace(/\./g, '/')}.py`,
          module: parseBlockId(v.id).module,
          swhid: '',
          ranges: [],
        },
      ],
      externs: ['torch'],
      validation: {
        stages: {
          parse: 'pass',
          compile: 'pass',
          import: 'pass',
          namespace: 'skip',
          instantiate: 'pass',
          forward: 'pass',
          equivalence: 'skip',
        },
        category: null,
        error: null,
        args: null,
        input_shapes: null,
        output_shapes: null,
        params: (i * 7919) % 5_000_000,
        envId: 'bench',
      },
    },
    text: v.text,
    ...(signature ? { signature } : {}),
  };
}

/**
 * Dedup as `nnrag dedup` runs it, on a store (`--dedup-store DIR`): the N copies written to
 * DIR.<N> as extraction writes them, each module's de-duplication signature computed when
 * it is written (one block at a time, as extraction does: the one-time cost per block is
 * printed), unless DIR.<N> holds the N blocks already; then library.ts runDedup on it, with
 * the stored signatures (`--signatures stored`, the default) or computing every block's
 * from its text as before they were stored (`--signatures computed`). Whole-run wall and
 * CPU time beside the phases'.
 */
async function benchDedupStore(
  sources: Source[],
  N: number,
  dirBase: string,
  signatures: 'stored' | 'computed',
  threads?: number,
  clustersOut?: string,
) {
  const dir = `${path.resolve(dirBase)}.${N}`;
  const store = IndexStore.open(dir);
  try {
    let build: Record<string, number> | undefined;
    if (extractionIds(store).length !== N) {
      store.bulkLoad(2048);
      const t = performance.now();
      const c0 = process.cpuUsage();
      let signUs = 0;
      let bytes = 0;
      const BATCH = 10_000;
      for (let i0 = 0; i0 < N; i0 += BATCH) {
        store.write(() => {
          for (let i = i0; i < Math.min(N, i0 + BATCH); i++) {
            const v = variant(sources, i);
            const s0 = process.cpuUsage();
            const sig = dedupSignatureRow(v.text);
            const d = process.cpuUsage(s0);
            signUs += d.user + d.system;
            bytes += sig.data.byteLength;
            putExtraction(store, benchExtraction(v, i, sig));
          }
        });
      }
      build = {
        wallMs: Math.round(performance.now() - t),
        cpuMs: cpuMs(process.cpuUsage(c0)),
        signatureCpuMs: Math.round(signUs / 1000),
        signatureCpuUsPerBlock: +(signUs / N).toFixed(1),
        signatureBytesPerBlock: Math.round(bytes / N),
        databaseMb: Math.round((Number(store.db.pragma('page_count', { simple: true })) * 4096) / 1e6),
        load: load(),
      };
      store.close();
    } else store.close();
    const ws = { store: IndexStore.open(dir) };
    try {
      const c0 = process.cpuUsage();
      const t = performance.now();
      const d = await runDedup(ws, { threads, storedSignatures: signatures === 'stored' });
      const dedupMs = Math.round(performance.now() - t);
      const dedupCpuMs = cpuMs(process.cpuUsage(c0));
      if (clustersOut) writeFileSync(`${clustersOut}.${N}`, clusterText(d.clusters));
      return {
        blocks: N,
        store: dir,
        build,
        signatures: d.signatures,
        dedupMs,
        dedupCpuMs,
        phases: d.timings,
        phasesCpu: d.cpu,
        clusters: d.clusters.length,
        unique: d.uniqueCount,
        rssMb: Math.round(process.memoryUsage().rss / 1e6),
        load: load(),
      };
    } finally {
      ws.store.close();
    }
  } finally {
    store.close();
  }
}

/** CPU ms of the page requests (server and client are this process: its CPU time covers
 *  the rendering; wall time on a loaded machine mostly measures the wait for a core). */
const pageCpu: number[] = [];

async function get(url: string): Promise<number> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await fetch(url);
  await r.text();
  if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
  pageCpu.push(cpuMs(process.cpuUsage(c0)));
  return performance.now() - t0;
}

async function benchSearch(sources: Source[], N: number, keep?: string) {
  // --keep DIR: the library is built in DIR.<N> and kept; a later run on the same DIR
  // reuses it when it already holds the N blocks (only the search structures are synced)
  const dir = keep ? `${path.resolve(keep)}.${N}` : mkdtempSync(path.join(os.tmpdir(), 'nnrag-bench-scale-'));
  try {
    const store = IndexStore.open(dir);
    // a bulk load: no fsync per commit, a page cache of 2 GB; the records in one
    // transaction, the FTS index and the signatures' band keys built once after the load
    store.bulkLoad(2048);
    let t = performance.now();
    let c0 = process.cpuUsage();
    const BATCH = N;
    const names: string[] = [];
    const built = !!keep && extractionIds(store).length === N;
    if (built) for (let i = 0; i < N; i += 1000) names.push(variant(sources, i).name);
    for (let i0 = 0; i0 < (built ? 0 : N); i0 += BATCH) {
      store.write(() => {
        for (let i = i0; i < Math.min(N, i0 + BATCH); i++) {
          const v = variant(sources, i);
          if (i % 1000 === 0) names.push(v.name);
          putExtraction(store, benchExtraction(v, i));
        }
      });
    }
    const storeMs = Math.round(performance.now() - t);
    const storeCpuMs = cpuMs(process.cpuUsage(c0));
    t = performance.now();
    c0 = process.cpuUsage();
    const sync = syncSearchIndex(store);
    const syncMs = Math.round(performance.now() - t);
    const syncCpuMs = cpuMs(process.cpuUsage(c0));
    t = performance.now();
    c0 = process.cpuUsage();
    const sigs = syncSignatures(store);
    const sigMs = Math.round(performance.now() - t);
    const sigCpuMs = cpuMs(process.cpuUsage(c0));
    const buildLoad = load();
    // the block pages' "similar" panel comes from the band index: compared with the scan of
    // every signature on the pages the catalog bench asks for (at sizes where a scan is
    // affordable)
    const pageIds = Array.from({ length: 30 }, (_, k) => variant(sources, Math.floor((k * N) / 30)).id);
    let similarSame: string | undefined;
    if (N <= 200_000) {
      const same = pageIds.filter(
        (id) =>
          JSON.stringify(similarBlocks(store, id, 8)) === JSON.stringify(similarBlocks(store, id, 8, { scan: true })),
      ).length;
      similarSame = `${same}/${pageIds.length}`;
    }

    const r = rng(7);
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
    const queries: [string, SearchOptions][] = [];
    for (let k = 0; k < 40; k++) queries.push([pick(WORDS), {}]);
    for (let k = 0; k < 30; k++) queries.push([pick(names), {}]);
    for (let k = 0; k < 20; k++) queries.push([pick(WORDS), { validated: true, minParams: 1000, maxParams: 2e6 }]);
    for (let k = 0; k < 10; k++) queries.push([pick(WORDS), { repo: `r${k}/copy` }]);
    // the block id before a position in browse order: deep pages are asked for by it
    // (keyset paging, as the catalog's next links do)
    const idBefore = (o: number) => searchBlocks(store, '', { offset: o - 1, limit: 1 }).hits[0]?.id ?? '';
    const deep = [20, 1000, Math.floor(N / 2)].map((o) => ({ o, after: idBefore(o) }));
    queries.push(['zzznothing', {}], ['', {}], ['', { after: deep[2].after }]);
    // warm-up; the repository-filtered queries must find something (they measure a
    // filtered search, not an empty result)
    let repoFiltered = 0;
    for (const [q, f] of queries) {
      const r = searchBlocks(store, q, f);
      if (f.repo && r.total > 0) repoFiltered++;
    }
    const { times, cpus } = timeQueries(store, queries);
    const worst = queries
      .map(([q, f]) => {
        const t0 = performance.now();
        searchBlocks(store, q, f);
        return { q, f, ms: Math.round(performance.now() - t0) };
      })
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 3);
    const searchLoad = load();
    store.close();
    if (!repoFiltered) throw new Error('no repository-filtered query found a block: the documents carry no repository');

    // the catalog: the server on this store (its start brings the search structures up to date: done above)
    t = performance.now();
    const srv = await startServer({ storeDir: dir, port: 0, refreshMs: 60_000 });
    const startMs = Math.round(performance.now() - t);
    const pages: number[] = [];
    const blockPages: number[] = [];
    try {
      const ids = pageIds;
      const at = (p: string) => new URL(p, srv.url).href;
      await get(at('/?q=attention'));
      for (const [q] of queries.slice(0, 60)) pages.push(await get(at(`/?q=${encodeURIComponent(q)}`)));
      pages.push(await get(at('/?offset=0')));
      for (const { o, after } of deep) pages.push(await get(at(`/?offset=${o}&after=${encodeURIComponent(after)}`)));
      for (const id of ids) blockPages.push(await get(at(`/block/${encodeURIComponent(id)}`)));
    } finally {
      await srv.close();
    }
    return {
      blocks: N,
      storeMs,
      storeCpuMs,
      syncMs,
      syncCpuMs,
      documents: sync.added,
      signaturesMs: sigMs,
      signaturesCpuMs: sigCpuMs,
      signatures: sigs,
      buildLoad,
      similarSameAsScan: similarSame,
      databaseMb: Math.round((Number(IndexStore.open(dir).db.pragma('page_count', { simple: true })) * 4096) / 1e6),
      search: {
        queries: times.length,
        p50: +pct(times, 50).toFixed(2),
        p95: +pct(times, 95).toFixed(2),
        max: +Math.max(...times).toFixed(2),
        cpuP95: pct(cpus, 95),
        load: searchLoad,
        repoFilteredNonEmpty: `${repoFiltered} of ${queries.filter(([, f]) => f.repo).length}`,
        worst,
      },
      catalog: {
        startMs,
        pageCpuP95: pct(pageCpu.splice(0), 95),
        searchPages: {
          n: pages.length,
          p50: +pct(pages, 50).toFixed(1),
          p95: +pct(pages, 95).toFixed(1),
          max: +Math.max(...pages).toFixed(1),
        },
        blockPages: {
          n: blockPages.length,
          p50: +pct(blockPages, 50).toFixed(1),
          p95: +pct(blockPages, 95).toFixed(1),
          max: +Math.max(...blockPages).toFixed(1),
        },
        load: load(),
      },
    };
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

/** Each query run twice in turn (a page of 20 hits): the wall and CPU milliseconds (not
 *  rounded) of every run, in order. */
function timeQueries(store: IndexStore, queries: [string, SearchOptions][]): { times: number[]; cpus: number[] } {
  const times: number[] = [];
  const cpus: number[] = [];
  for (let rep = 0; rep < 2; rep++) {
    for (const [q, f] of queries) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      searchBlocks(store, q, { ...f, limit: 20 });
      times.push(performance.now() - t0);
      const u = process.cpuUsage(c0);
      cpus.push((u.user + u.system) / 1000);
    }
  }
  return { times, cpus };
}

/** the bench's query words (names of common block kinds) */
const WORDS = [
  'attention',
  'window attention',
  'conv',
  'mlp',
  'patch embed',
  'norm',
  'transformer block',
  'residual',
  'decoder',
  'pool',
  'gpt',
  'yolo',
  'detr',
  'swin',
  'bottleneck',
];

/**
 * Search and the catalog on a library that exists already (`--library DIR`: a kept bench
 * library, a merged store), read only: the query set of the bench (the 15 words unfiltered,
 * with the bench's filters, with a category filter each of the rarest and the commonest
 * category, with a repository filter when the documents name repositories, and 15 class
 * names spread over the library), each timed twice after a warm-up pass; then the catalog
 * over HTTP: its start, the first pass of search pages, the search pages twice and a browse
 * page, block pages (30 spread over the library) twice. CPU per query and per page is this
 * process's (server and client), beside wall time.
 */
async function benchLibrary(dir: string) {
  // the search's queries on one store handle, then the catalog's own start on another: the
  // catalog is measured without the query phase's structures or the 10^6 ids on the heap
  const { blocks, names, pageIds, setup, search } = benchLibrarySearch(dir);
  return { library: dir, blocks, setup, search, catalog: await benchCatalog(dir, names, pageIds) };
}

/** The 15 class names and 30 block ids spread over the library (by id order). */
function spreadIds(store: IndexStore): { blocks: number; names: string[]; pageIds: string[] } {
  const ids = extractionIds(store);
  const spread = (k: number, of: number) => ids[Math.floor(((k + 0.5) * ids.length) / of)];
  // (copied out of the ids' strings, so that the ids can go)
  const copy = (x: string) => Buffer.from(x).toString();
  return {
    blocks: ids.length,
    names: Array.from({ length: 15 }, (_, k) => copy(spread(k, 15).replace(/^.*[.:]/, ''))),
    pageIds: Array.from({ length: 30 }, (_, k) => copy(spread(k, 30))),
  };
}

function benchLibrarySearch(dir: string) {
  const store = IndexStore.open(dir, { create: false });
  const t0 = performance.now();
  const c00 = process.cpuUsage();
  const { blocks, names, pageIds } = spreadIds(store);
  const fc = facets(store);
  // (a library whose documents name no repository lists '' as its one repository)
  const repos = fc.repos.filter((r) => r);
  const byCount = fc.categories
    .map((c) => ({ c, n: searchBlocks(store, '', { category: c, limit: 1 }).total }))
    .sort((a, b) => a.n - b.n || (a.c < b.c ? -1 : 1));
  const rare = byCount[0]?.c;
  const common = byCount[byCount.length - 1]?.c;
  const queries: [string, SearchOptions][] = [];
  for (const w of WORDS) queries.push([w, {}]);
  for (const w of WORDS) queries.push([w, { validated: true, minParams: 1000, maxParams: 2e6 }]);
  for (let k = 0; k < 5 && rare; k++) queries.push([WORDS[k * 3], { category: rare }]);
  for (let k = 0; k < 5 && common; k++) queries.push([WORDS[k * 3], { category: common }]);
  for (let k = 0; k < 5 && repos.length; k++) queries.push([WORDS[k * 3], { repo: repos[k % repos.length] }]);
  for (const nm of names) queries.push([nm, {}]);
  const setup = { wallMs: Math.round(performance.now() - t0), cpuMs: cpuMs(process.cpuUsage(c00)) };
  const t = performance.now();
  const c0 = process.cpuUsage();
  for (const [q, f] of queries) searchBlocks(store, q, { ...f, limit: 20 });
  const warm = { wallMs: Math.round(performance.now() - t), cpuMs: cpuMs(process.cpuUsage(c0)), load: load() };
  const { times, cpus } = timeQueries(store, queries);
  const worst = new Map<string, number>();
  cpus.forEach((c, i) => {
    const [q, f] = queries[i % queries.length];
    const k = `${q} ${JSON.stringify(f)}`;
    worst.set(k, Math.max(worst.get(k) ?? 0, c));
  });
  const search = {
    queries: times.length,
    categories: { rare, common },
    repoFiltered: repos.length ? 5 : 0,
    warm,
    p50: +pct(times, 50).toFixed(1),
    p95: +pct(times, 95).toFixed(1),
    cpuP50: +pct(cpus, 50).toFixed(1),
    cpuP95: +pct(cpus, 95).toFixed(1),
    worstCpu: [...worst]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([k, v]) => `${k}: ${v.toFixed(0)} ms`),
    load: load(),
  };
  store.close();
  return { blocks, names, pageIds, setup, search };
}

async function benchCatalog(dir: string, names: string[], pageIds: string[]) {
  const t = performance.now();
  const c0 = process.cpuUsage();
  const srv = await startServer({ storeDir: dir, port: 0, refreshMs: 3_600_000 });
  const start = { wallMs: Math.round(performance.now() - t), cpuMs: cpuMs(process.cpuUsage(c0)), load: load() };
  const at = (p: string) => new URL(p, srv.url).href;
  const timed = async (urls: string[]) => {
    const wall: number[] = [];
    const c = pageCpu.length;
    for (const u of urls) wall.push(await get(at(u)));
    const cpu = pageCpu.splice(c);
    return {
      n: wall.length,
      p50: +pct(wall, 50).toFixed(1),
      p95: +pct(wall, 95).toFixed(1),
      cpuP50: pct(cpu, 50),
      cpuP95: pct(cpu, 95),
    };
  };
  try {
    // the client's own first request (fetch's set-up) on a page that is not measured
    await (await fetch(at('/no-such-page'))).text();
    const searchUrls = [...WORDS, ...names].map((q) => `/?q=${encodeURIComponent(q)}`);
    const blockUrls = pageIds.map((id) => `/block/${encodeURIComponent(id)}`);
    const firstSearch = await timed(searchUrls);
    const searchPages = await timed([...searchUrls, ...searchUrls, '/?offset=0']);
    const firstBlocks = await timed(blockUrls);
    const blockPages = await timed(blockUrls);
    return { start, firstSearch, searchPages, firstBlocks, blockPages, load: load() };
  } finally {
    await srv.close();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (k: string) => {
    const i = args.indexOf(k);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const library = opt('--library');
  if (library) {
    console.log(
      JSON.stringify({ env: { node: process.version, cpus: os.availableParallelism?.() ?? os.cpus().length } }),
    );
    console.log(JSON.stringify({ library: await benchLibrary(path.resolve(library)) }));
    return;
  }
  const from = opt('--from');
  if (!from)
    throw new Error('give --from STORE: a store with extracted blocks (the real blocks the library is made of)');
  const sizes = (opt('--sizes') ?? '100000,1000000').split(',').map(Number);
  const threads = opt('--threads') ? Number(opt('--threads')) : undefined;
  const only = opt('--only');
  const clustersOut = opt('--clusters');
  const keep = opt('--keep');
  const maxLines = Number(opt('--max-lines') ?? 400);
  const sources = loadSources(from, maxLines);
  if (!sources.length) throw new Error(`${from}: no extracted blocks`);
  const env = {
    node: process.version,
    cpus: os.availableParallelism?.() ?? os.cpus().length,
    memGb: Math.round(os.totalmem() / 1e9),
    sources: sources.length,
    maxLines,
    from: path.resolve(from),
  };
  console.log(JSON.stringify({ env }));
  const dedupStore = opt('--dedup-store');
  const signatures = opt('--signatures') ?? 'stored';
  if (signatures !== 'stored' && signatures !== 'computed') throw new Error('--signatures stored|computed');
  for (const N of sizes) {
    if (dedupStore) {
      console.log(
        JSON.stringify({
          dedupStore: await benchDedupStore(sources, N, dedupStore, signatures, threads, clustersOut),
        }),
      );
      continue;
    }
    if (only !== 'search') console.log(JSON.stringify({ dedup: await benchDedup(sources, N, threads, clustersOut) }));
    if (only !== 'dedup') console.log(JSON.stringify({ search: await benchSearch(sources, N, keep) }));
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
