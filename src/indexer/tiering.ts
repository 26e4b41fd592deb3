// V8's tier-up budget for the parse workers, set when a worker starts, before the
// binder's code is loaded (worker.ts imports this module first).
//
// A function is optimised by TurboFan once it has run `--interrupt-budget` bytes of
// bytecode (V8 11's default: 66 KB). The binder's large functions (`visitExpr`,
// `resolve`, `visitImport`, `visitStatement`) reach that within the first files, before
// the rarer node types have given them type feedback; each rarer file then
// deoptimises them and TurboFan compiles them again (visitExpr five times, resolve
// four, per worker on timm). Those compilations were ~0.4 s of CPU per worker, on V8's
// background threads. With a budget of 1,000,000 bytes the binder runs longer in the
// interpreter and baseline code and is optimised once with fuller feedback: a cold
// index of timm took 17-20% less CPU (docs/SCALE.md). The facts are the same (tiering
// changes no result).
//
// V8 flags are per process: a process that starts a parse worker keeps this budget for
// all its threads. The budget only decides when hot code is optimised.
import v8 from 'node:v8';

/** bytes of bytecode a function runs before TurboFan optimises it */
export const INTERRUPT_BUDGET = 1_000_000;

v8.setFlagsFromString(`--interrupt-budget=${INTERRUPT_BUDGET}`);
