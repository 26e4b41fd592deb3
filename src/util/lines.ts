// Line lookups by offset: the start offset of every line of a text, and the line an
// offset falls on (binary search), shared by the syntax walk (row/column points) and the
// corpus (1-based lines of statements and references).

/** Offsets at which each line of `text` starts (`\n` ends a line). */
export function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** 0-based line of `offset` given the line starts. */
export function lineIndex(starts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
