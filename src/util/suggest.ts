// "Did you mean …": the known names closest to a mistyped one, by edit distance
// (Levenshtein, case-insensitive), for the errors of unknown block names.

/** Levenshtein distance (insert, delete, substitute: 1 each), two rows. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** Up to `n` candidates within a third of the name's length (at least 2 edits), nearest
 *  first; a candidate that contains the name or is contained in it counts as near. */
export function suggest(name: string, candidates: Iterable<string>, n = 3): string[] {
  const q = name.toLowerCase();
  const limit = Math.max(2, Math.floor(q.length / 3));
  const scored: [string, number][] = [];
  for (const c of new Set(candidates)) {
    const l = c.toLowerCase();
    const d = l === q ? 0 : l.includes(q) || q.includes(l) ? 1 : editDistance(q, l);
    if (d <= limit) scored.push([c, d]);
  }
  return scored
    .sort((a, b) => a[1] - b[1] || a[0].length - b[0].length || a[0].localeCompare(b[0]))
    .slice(0, n)
    .map(([c]) => c);
}
