// Command-line options of the benchmark scripts: `--name value` pairs and flags.
export const args = process.argv.slice(2);

/** The value after `--name`, else `dflt`. */
export function opt(name: string, dflt?: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
}
