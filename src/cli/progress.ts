// A one-line progress display on stderr, shown only when stderr is a terminal.
export interface Progress {
  update(phase: string, done: number, total: number): void;
  done(): void;
}

export function progress(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  let last = 0;
  let shown = false;
  return {
    update(phase, done, total) {
      const now = Date.now();
      if (now - last < 80 && done < total) return;
      last = now;
      const width = 30;
      const frac = total > 0 ? Math.min(1, done / total) : 0;
      const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '.');
      stream.write(`\r${label} ${phase.padEnd(8)} [${bar}] ${done}/${total}\x1b[K`);
      shown = true;
    },
    done() {
      if (shown) stream.write('\r\x1b[K');
    },
  };
}
