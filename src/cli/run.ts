// Running one CLI command: its flags parsed, --help answered, the context built, the
// Python parser made ready in this thread, errors turned into exit codes (0 success, 1
// failures in the work, 2 bad usage). Shared by the full command table (main.ts) and the
// executable's short way to `nnrag index` (bin.ts), which loads only indexing's modules.
import { parseArgs } from 'node:util';
import { NnragError, UsageError } from '../util/errors.js';
import { ready } from '../commands/index-repos.js';
import { storeFolder } from '../store/location.js';
import { common, type Command, type Ctx } from './context.js';
import { commandHelp } from './help.js';
import { safeJson, safeText } from './terminal.js';

/** Run command `name` (`cmd`) with the arguments after its name; resolves with the exit code. */
export async function runCommand(name: string, cmd: Command, rest: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...common, ...cmd.options }, allowPositionals: true, strict: true });
  } catch (e) {
    process.stderr.write(`nnrag ${name}: ${safeText((e as Error).message)}\nusage: ${cmd.usage}\n`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(commandHelp(name, cmd, common) + '\n');
    return 0;
  }
  const json = !!parsed.values.json;
  const ctx: Ctx = {
    json,
    store: storeFolder(parsed.values.store as string | undefined),
    values: parsed.values as Record<string, unknown>,
    positionals: parsed.positionals,
    out(human, data) {
      process.stdout.write(json ? safeJson(JSON.stringify(data, null, 2)) + '\n' : safeText(human) + '\n');
    },
  };
  try {
    // the resolver parses modules it reads on demand synchronously (src/resolve/ondemand.ts);
    // a command that makes the parser ready itself (index: meanwhile its workers start) says so
    if (!cmd.readiesParser) await ready();
    return await cmd.run(ctx);
  } catch (e) {
    // a block name that names no block is bad usage too (README: exit 2), like an
    // ambiguous one; --json still gets the error object
    if (e instanceof UsageError || (e instanceof NnragError && e.code === 'unknown-block')) {
      process.stderr.write(`nnrag ${name}: ${safeText(e.message)}\n`);
      if (json && !(e instanceof UsageError))
        process.stdout.write(safeJson(JSON.stringify({ error: e.message, code: e.code })) + '\n');
      return 2;
    }
    if (e instanceof NnragError) {
      process.stderr.write(`nnrag ${name}: ${safeText(e.message)}\n`);
      if (json) process.stdout.write(safeJson(JSON.stringify({ error: e.message, code: e.code })) + '\n');
      return 1;
    }
    process.stderr.write(`nnrag ${name}: ${safeText(String((e as Error).stack ?? e))}\n`);
    return 1;
  }
}
