// CPU time of a process tree, read from /proc (proc(5)), for deadlines that hold on a
// loaded machine: a process that computes slowly because the machine is busy is making
// progress, one that waits without computing is not. Linux only; elsewhere (no /proc)
// the reading is null and callers fall back to wall-clock deadlines.
import { readdirSync, readFileSync } from 'node:fs';

/** /proc/PID/stat reports times in clock ticks of USER_HZ, which Linux fixes at 100 for
 *  user space on every architecture it exports it to (sysconf(_SC_CLK_TCK), time(7)). */
const CLK_TCK = 100;

interface StatFields {
  ppid: number;
  /** utime + stime + cutime + cstime (fields 14–17): the process's threads and its
   *  waited-for children, in ms */
  cpuMs: number;
}

/** Fields of /proc/PID/stat after the command (which may hold spaces and parentheses, so
 *  the split is at the last `)`); null when the process is gone. */
function stat(pid: number): StatFields | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state): field N is rest[N - 3]
    const ticks = Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]);
    if (!Number.isFinite(ticks)) return null;
    return { ppid: Number(rest[1]), cpuMs: (ticks * 1000) / CLK_TCK };
  } catch {
    return null;
  }
}

/** CPU milliseconds used so far by `root` and every living descendant (each with what
 *  it reaped of its own children); null when /proc cannot be read or root is gone.
 *  Descendants are found by one scan of /proc's parent links: the kernel's
 *  /proc/PID/task/TID/children files need CONFIG_PROC_CHILDREN, which many kernels lack. */
export function treeCpuMs(root: number): number | null {
  const top = stat(root);
  if (!top) return null;
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return null;
  }
  const kids = new Map<number, { pid: number; cpuMs: number }[]>();
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const pid = Number(name);
    if (pid === root) continue;
    const f = stat(pid);
    if (!f) continue;
    const list = kids.get(f.ppid);
    if (list) list.push({ pid, cpuMs: f.cpuMs });
    else kids.set(f.ppid, [{ pid, cpuMs: f.cpuMs }]);
  }
  let total = top.cpuMs;
  const stack = [root];
  const seen = new Set<number>([root]);
  while (stack.length) {
    for (const k of kids.get(stack.pop()!) ?? []) {
      if (seen.has(k.pid)) continue;
      seen.add(k.pid);
      total += k.cpuMs;
      stack.push(k.pid);
    }
  }
  return total;
}
