// Command-line options of the benchmark scripts: `--name value` pairs and flags.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const args = process.argv.slice(2);

/** The value after `--name`, else `dflt`. */
export function opt(name: string, dflt?: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
}

/** Every value of a repeatable `--name value` option, in order. */
export function opts(name: string): string[] {
  return args.flatMap((a, i) => (a === name && i + 1 < args.length ? [args[i + 1]] : []));
}

/** The nnrag checkouts (with dist/ built) given by `--build DIR …`, else the one these
 *  scripts were built from. */
export function buildDirs(): string[] {
  const given = opts('--build').map((d) => path.resolve(d));
  return given.length ? given : [path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')];
}
