// A one-line progress display on stderr, shown only when stderr is a terminal: count,
// passed/failed so far, rate and time left.
export interface Progress {
  /** `counts` (passed / failed so far) are shown when given */
  update(phase: string, done: number, total: number, counts?: { ok: number; failed: number }): void;
  done(): void;
}

/** `83 s` / `4 min` / `1.2 h` */
export function duration(sec: number): string {
  if (!Number.isFinite(sec) || sec < 0) return '?';
  if (sec < 90) return `${Math.round(sec)} s`;
  if (sec < 5400) return `${Math.round(sec / 60)} min`;
  return `${(sec / 3600).toFixed(1)} h`;
}

/** The progress line: bar, count, passed/failed so far, rate and time left (from the
 *  average rate since the phase started). */
export function progressLine(
  label: string,
  phase: string,
  done: number,
  total: number,
  elapsedSec: number,
  counts?: { ok: number; failed: number },
): string {
  const width = 24;
  const frac = total > 0 ? Math.min(1, done / total) : 0;
  const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '.');
  const parts = [`${label} ${phase.padEnd(8)} [${bar}] ${done}/${total}`];
  if (counts) parts.push(`✓ ${counts.ok} ✗ ${counts.failed}`);
  if (done > 0 && elapsedSec > 0.5) {
    const rate = done / elapsedSec;
    parts.push(rate >= 1 ? `${rate.toFixed(1)}/s` : `${(1 / rate).toFixed(1)} s each`);
    if (done < total) parts.push(`ETA ${duration((total - done) / rate)}`);
  }
  return parts.join('  ');
}

export function progress(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  let last = 0;
  let shown = false;
  let phaseName = '';
  let start = Date.now();
  return {
    update(phase, done, total, counts) {
      const now = Date.now();
      if (phase !== phaseName) {
        phaseName = phase;
        start = now;
      }
      if (now - last < 80 && done < total) return;
      last = now;
      stream.write(`\r${progressLine(label, phase, done, total, (now - start) / 1000, counts)}\x1b[K`);
      shown = true;
    },
    done() {
      if (shown) stream.write('\r\x1b[K');
    },
  };
}
