// The library tables (migration 3): block specs (the neutral `BlockSpec` JSON with its
// filter columns) and de-duplication clusters with their members. The library stage
// (src/library/library.ts) computes both; search, the report and the catalog read them.
import type { BlockSpec, DedupCluster } from '../records/spec.js';
import { KV_KEYS } from './kv.js';
import type { IndexStore } from './store.js';

export function putSpecs(store: IndexStore, specs: readonly BlockSpec[]): void {
  const ins = store.stmt(
    'INSERT OR REPLACE INTO specs(id, repo, status, category, json, updated) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const now = new Date().toISOString();
  store.write(() => {
    for (const s of specs) ins.run(s.id, s.origin.repo, s.status, s.category, JSON.stringify(s), now);
  });
}

export function getSpec(store: IndexStore, id: string): BlockSpec | null {
  const j = store.stmt('SELECT json FROM specs WHERE id = ?').pluck().get(id) as string | undefined;
  return j ? (JSON.parse(j) as BlockSpec) : null;
}

export function listSpecs(
  store: IndexStore,
  filter: { status?: string; repo?: string; category?: string } = {},
): BlockSpec[] {
  const rows = store.stmt('SELECT json FROM specs ORDER BY id').pluck().all() as string[];
  return rows
    .map((j) => JSON.parse(j) as BlockSpec)
    .filter(
      (s) =>
        (!filter.status || s.status === filter.status) &&
        (!filter.repo || s.origin.repo === filter.repo) &&
        (!filter.category || s.category === filter.category),
    );
}

/** The stored spec JSON by id, for change detection without parsing. */
export function specTexts(store: IndexStore): Map<string, string> {
  return new Map(store.stmt('SELECT id, json FROM specs').raw().all() as [string, string][]);
}

// ---------------------------------------------------------------- de-duplication

interface ClusterRow {
  kind: string;
  representative: string;
  members: string;
  scores: string;
}

function clusterFromRow(r: ClusterRow): DedupCluster {
  return {
    kind: r.kind as DedupCluster['kind'],
    representative: r.representative,
    members: JSON.parse(r.members) as string[],
    scores: JSON.parse(r.scores) as DedupCluster['scores'],
  };
}

const MEMBER_ROWS = 256;

/** The member rows of stored clusters, in the order they are inserted: block `ids[k]` in
 *  cluster `cluster[k]` (1-based, the cluster's place in the list + 1). */
export interface MemberRows {
  ids: readonly string[];
  cluster: Int32Array | readonly number[];
}

/** The member rows of `clusters` in block id order (the table's key), a block in two
 *  clusters once per cluster, the later last (its row replaces the earlier one). */
function memberRowsOf(clusters: readonly DedupCluster[]): MemberRows {
  const members: [string, number][] = [];
  clusters.forEach((c, i) => {
    for (const m of c.members) members.push([m, i + 1]);
  });
  members.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  return { ids: members.map((m) => m[0]), cluster: members.map((m) => m[1]) };
}

/** Replace the stored clusters and their summary (kv `dedup:last`) in one transaction.
 *  `rows`, when the caller has them (runDedup: the blocks in id order with their clusters,
 *  each block in at most one), are the member rows of `clusters` in id order; without
 *  them they are listed from the clusters and sorted by id (at 10^6 members the sort of
 *  the id strings cost ~3 s of CPU). */
export function putDedup(
  store: IndexStore,
  clusters: readonly DedupCluster[],
  summary: object,
  rows: MemberRows = memberRowsOf(clusters),
): void {
  const insC = store.stmt(
    'INSERT INTO dedup_clusters(cluster, kind, representative, members, scores) VALUES (?, ?, ?, ?, ?)',
  );
  const insM = store.stmt('INSERT OR REPLACE INTO dedup_members(block, cluster) VALUES (?, ?)');
  // and MEMBER_ROWS rows a statement (a VALUES list, rows in the same order: a later row
  // replaces an earlier one of the same block as the statements one by one did): at 10^6
  // members, statements one row at a time cost 2.0 s of CPU, 256 rows a statement 1.2 s
  const insMany = store.stmt(
    `INSERT OR REPLACE INTO dedup_members(block, cluster) VALUES ${Array(MEMBER_ROWS).fill('(?, ?)').join(', ')}`,
  );
  // the members inserted in block order (the table's key): in cluster order they went to
  // random places of the index, 8.9 s of CPU for the 10^6 members of a 10^6-block library
  // (the same rows either way; a block in two clusters keeps the later one, as before)
  const { ids, cluster } = rows;
  store.write(() => {
    store.stmt('DELETE FROM dedup_clusters').run();
    store.stmt('DELETE FROM dedup_members').run();
    clusters.forEach((c, i) => {
      insC.run(i + 1, c.kind, c.representative, JSON.stringify(c.members), JSON.stringify(c.scores ?? []));
    });
    const args: (string | number)[] = new Array(2 * MEMBER_ROWS);
    let i = 0;
    for (; i + MEMBER_ROWS <= ids.length; i += MEMBER_ROWS) {
      for (let k = 0; k < MEMBER_ROWS; k++) {
        args[2 * k] = ids[i + k];
        args[2 * k + 1] = cluster[i + k];
      }
      insMany.run(args);
    }
    for (; i < ids.length; i++) insM.run(ids[i], cluster[i]);
    store.stmt('INSERT OR REPLACE INTO kv(key, value) VALUES (?, ?)').run(KV_KEYS.dedupLast, JSON.stringify(summary));
  });
}

/** The stored clusters, in the order they were stored. */
export function listClusters(store: IndexStore): DedupCluster[] {
  return (
    store
      .stmt('SELECT kind, representative, members, scores FROM dedup_clusters ORDER BY cluster')
      .all() as ClusterRow[]
  ).map(clusterFromRow);
}

/** The cluster a block belongs to, if any. */
export function clusterOf(store: IndexStore, id: string): DedupCluster | null {
  const r = store
    .stmt(
      'SELECT c.kind, c.representative, c.members, c.scores FROM dedup_members m JOIN dedup_clusters c ON c.cluster = m.cluster WHERE m.block = ?',
    )
    .get(id) as ClusterRow | undefined;
  return r ? clusterFromRow(r) : null;
}
