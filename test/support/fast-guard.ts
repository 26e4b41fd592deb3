// Preloaded by `npm run test:fast` (node --import): in the fast tier, starting a process
// that needs torch or the sandbox throws, naming the command, so a test that needs them
// but does not ask test/support/tier.ts's needsTorch()/needsSandbox() fails instead of
// silently running the slow path. Processes refused: bubblewrap, debootstrap, chroot, and
// any Python whose command line or standard input mentions torch or the nnrag harness, and
// test/support/run_modules.py unless it is told --no-run.
// Python without torch (e.g. the tokenizer cross-check against CPython) stays allowed.
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { FAST } from './tier.js';

const SLOW_COMMANDS = new Set(['bwrap', 'debootstrap', 'chroot']);
const SLOW_TEXT = /torch|nnrag_harness|harness\.py/;

function refuse(command: unknown, args: unknown, options: unknown): void {
  const name = path.basename(String(command));
  const argv = Array.isArray(args) ? args.map(String) : [];
  const opts = (Array.isArray(args) ? options : args) as { input?: unknown } | undefined;
  const input = opts && typeof opts === 'object' && opts.input != null ? String(opts.input) : '';
  const python = /^python/.test(name);
  // test/support/run_modules.py imports torch unless told --no-run (pyflakes only)
  const runsModules = argv.some((a) => a.endsWith('run_modules.py')) && !argv.includes('--no-run');
  if (
    SLOW_COMMANDS.has(name) ||
    (python && (SLOW_TEXT.test(argv.join(' ')) || runsModules || /nnrag_harness|harness\.py/.test(input)))
  ) {
    throw new Error(
      `fast tier (NNRAG_TEST_FAST=1) refuses \`${name} ${argv.join(' ').slice(0, 120)}\`: ` +
        'this test needs torch or the sandbox; skip it with needsTorch()/needsSandbox() from test/support/tier.js',
    );
  }
}

if (FAST) {
  type Fn = ((...a: unknown[]) => unknown) & { [promisify.custom]?: (...a: unknown[]) => unknown };
  const cp = childProcess as unknown as Record<string, Fn>;
  for (const fn of ['spawn', 'spawnSync', 'execFile', 'execFileSync']) {
    const original = cp[fn];
    const guarded: Fn = function (this: unknown, ...a: unknown[]) {
      refuse(a[0], a[1], a[2]);
      return original.apply(this, a);
    };
    // promisify(execFile) uses the original's custom form: guard that too
    const custom = original[promisify.custom];
    if (custom)
      guarded[promisify.custom] = (...a: unknown[]) => {
        refuse(a[0], a[1], a[2]);
        return custom(...a);
      };
    cp[fn] = guarded;
  }
  syncBuiltinESMExports();
}
