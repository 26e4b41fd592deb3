// One external command run to completion: exit code (null when killed), stdout and stderr
// as text, a timeout, and optionally each line of stderr as it comes (uv's progress). Used
// by the environment layer's installers (pypi.ts), bytecode sharing and source trees.
import { execFile } from 'node:child_process';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCmd(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; onLine?: (l: string) => void } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      args,
      { env: opts.env ?? process.env, cwd: opts.cwd, timeout: opts.timeoutMs ?? 3_600_000, maxBuffer: 256 << 20 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as NodeJS.ErrnoException & { code?: unknown }).code === 'number'
            ? (err as unknown as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (opts.onLine) {
      let buf = '';
      child.stderr?.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          opts.onLine!(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      });
    }
  });
}
