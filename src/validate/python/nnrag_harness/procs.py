# Process utilities of the validation harness (harness.py): the references to json / os
# functions kept before any candidate code runs (a module that rebinds json.dumps or
# os.write cannot break reporting), a child's rlimits and working directory, and the
# worker's process housekeeping: /proc walks for descendants, reaping and killing them,
# child-subreaper and undumpable flags, emptying scratch folders.
import os
import re
import resource
import shutil
import signal
import time
import json

# References kept before any candidate code runs, so a module that rebinds
# json.dumps or os.write cannot break reporting by accident (the package is loaded when
# the harness starts, before any candidate).
_dumps = json.dumps
_loads = json.loads
_write = os.write
_getpid = os.getpid
_exit = os._exit
_monotonic = time.monotonic
_times = os.times

# A block's time limit counts CPU time (user + system), not the wall clock: on a loaded
# machine a wall-clock limit ended blocks that computed no more than on a quiet one, and
# verdicts changed with the load (issues 27, 28). A candidate that waits without computing
# (sleep, a blocking read) is ended by a wall-clock backstop of WALL_PER_CPU x its limit +
# WALL_SLACK seconds; the TS watchdog (pool.ts) waits longer still. The harvest's steps
# count their budgets the same way (harvest.py).
WALL_PER_CPU = 6
WALL_SLACK = 10.0
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def self_cpu():
    """CPU seconds of this process so far: its threads and its waited-for children
    (times(2)). A forked child starts from zero."""
    t = _times()
    return t.user + t.system + t.children_user + t.children_system


def cpu_of(pid):
    """CPU seconds of process `pid`: its threads and its waited-for children (fields 14-17
    of /proc/PID/stat, proc(5)); 0 when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            rest = f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
        return sum(int(x) for x in rest[11:15]) / _CLK_TCK
    except (OSError, IndexError, ValueError):
        return 0.0


def apply_limits(lim):
    def setl(res, soft, hard=None):
        try:
            resource.setrlimit(res, (soft, soft if hard is None else hard))
        except (ValueError, OSError):
            pass

    if lim.get("as_bytes"):
        setl(resource.RLIMIT_AS, lim["as_bytes"])
    if lim.get("cpu_seconds"):
        # the hard limit leaves room for the equivalence stage's own budget (see
        # Stages._equivalence, which raises the soft limit once)
        setl(resource.RLIMIT_CPU, lim["cpu_seconds"], 2 * lim["cpu_seconds"] + 2)
    if lim.get("nproc"):
        setl(resource.RLIMIT_NPROC, lim["nproc"])
    if lim.get("fsize_bytes"):
        setl(resource.RLIMIT_FSIZE, lim["fsize_bytes"])
    setl(resource.RLIMIT_CORE, 0)


def work_dir(scratch_root):
    """The working directory of import-time code: the same for the original (imported in
    a zygote) and for the copy, so a value computed from it at import
    (`sys.path.append(os.path.abspath('..'))`, a default data folder) is the same in
    both and the namespace stage compares like with like."""
    return os.path.join(scratch_root, "nnrag-cwd")


def enter_work_dir(scratch_root, fresh):
    """Enter the working directory; `fresh` (a candidate) first removes what the one
    before it left there, so nothing passes from one block to the next."""
    d = work_dir(scratch_root)
    if fresh:
        remove_tree(d)
    os.makedirs(d, mode=0o700, exist_ok=True)
    os.chdir(d)


def double_cpu_budget():
    """Equivalence and harvest run two models: twice the candidate's CPU seconds, within
    the hard limit (RLIMIT_CPU, setrlimit(2))."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if soft != resource.RLIM_INFINITY and hard != resource.RLIM_INFINITY:
            resource.setrlimit(resource.RLIMIT_CPU, (min(hard, 2 * soft), hard))
    except (ValueError, OSError):
        pass


def mount_points():
    """Mount points of this process's mount namespace (/proc/self/mountinfo, field 5,
    with the kernel's octal escapes for space, tab, newline and backslash)."""
    out = set()
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split(" ")
                if len(parts) > 4:
                    out.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4]))
    except OSError:
        pass
    return out


def sweep_dir(d, keep):
    """Remove everything below `d` except the mount points in `keep` and the folders that
    lead to them. True when nothing else is left."""
    try:
        names = os.listdir(d)
    except OSError:
        return False
    clean = True
    for n in names:
        p = os.path.join(d, n)
        if p in keep:
            continue
        if any(k.startswith(p + "/") for k in keep):
            clean = sweep_dir(p, keep) and clean
            continue
        remove_tree(p)
        if os.path.lexists(p):
            clean = False
    return clean


def remove_tree(path):
    """Remove a file or folder a candidate may have made hard to remove (folders
    without write or search permission for their owner)."""

    def fix(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.chmod(path, 0o700)
            except OSError:
                pass
            shutil.rmtree(path, onerror=fix)
        else:
            os.unlink(path)
    except (OSError, RecursionError):
        pass


def read_tail(path, n=2000):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def vm_size_kb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 1 << 20


def count_my_tasks():
    """Tasks (threads) already owned by this uid: RLIMIT_NPROC counts them too."""
    uid = os.getuid()
    n = 0
    try:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                if os.stat("/proc/" + name).st_uid != uid:
                    continue
                n += len(os.listdir("/proc/%s/task" % name))
            except OSError:
                continue
    except OSError:
        return 0
    return n


def count_threads(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return 0


def kill_descendants(pid):
    """SIGKILL and reap every descendant of `pid` (this process, a subreaper)."""
    for _ in range(200):
        left = [p for p, st in descendants(pid) if st != "Z"]
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        reap()
        if not left and not descendants(pid):
            return
        time.sleep(0.002)


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def remove_sysv_ipc():
    """Remove every System V IPC object of this IPC namespace (the sandbox's own, from
    bwrap --unshare-all): shared memory segments, message queues, semaphore sets, listed
    in /proc/sysvipc (second column: the id), removed with IPC_RMID (svipc(7)). The
    seccomp filter already refuses to create them; this holds where it is not loaded
    (an architecture it does not know). False when one could not be removed."""
    IPC_RMID = 0
    ok = True
    libc = None
    for kind in ("shm", "msg", "sem"):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            parts = row.split()
            if len(parts) < 2:
                continue
            libc = libc or _libc()
            ident = int(parts[1])
            if kind == "shm":
                r = libc.shmctl(ident, IPC_RMID, None)
            elif kind == "msg":
                r = libc.msgctl(ident, IPC_RMID, None)
            else:
                r = libc.semctl(ident, 0, IPC_RMID)
            ok = ok and r == 0
    return ok


def set_subreaper():
    # PR_SET_CHILD_SUBREAPER (36): orphaned descendants of candidates are re-parented
    # to this worker, so kill_descendants() finds double-forked processes too
    try:
        _libc().prctl(36, 1, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def set_undumpable():
    # PR_SET_DUMPABLE (4) = 0: /proc/<worker>/fd and ptrace are closed to the
    # candidates (same uid), so they cannot write into the protocol pipe
    try:
        _libc().prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def proc_table():
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                s = f.read().decode("ascii", "replace")
            rest = s.rsplit(")", 1)[1].split()
            table[int(name)] = (int(rest[1]), rest[0])
        except (OSError, IndexError, ValueError):
            continue
    return table


def _children_files(pid):
    """Direct children of every thread of `pid` (/proc/PID/task/TID/children, Linux 3.5+)."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
            out.extend(int(x) for x in f.read().split())
    return out


def _state(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def descendants(root, exclude=()):
    """[(pid, state)] of every descendant of root, not entering the subtrees of
    `exclude`: through the children files when the kernel has them (cheap), else by
    scanning /proc."""
    try:
        out, stack = [], [root]
        while stack:
            p = stack.pop()
            try:
                kids = _children_files(p)
            except FileNotFoundError:
                if p == root:
                    raise
                kids = []
            for c in kids:
                if c in exclude:
                    continue
                out.append((c, _state(c)))
                stack.append(c)
        return out
    except OSError:
        pass
    table = proc_table()
    kids = {}
    for pid, (ppid, state) in table.items():
        kids.setdefault(ppid, []).append((pid, state))
    out, stack = [], [root]
    while stack:
        p = stack.pop()
        for c, state in kids.get(p, ()):
            if c in exclude:
                continue
            out.append((c, state))
            stack.append(c)
    return out


def tree_cpu(pid):
    """CPU seconds of `pid` and of its live descendants (what a candidate forked and did
    not wait for counts too: a fork bomb computes in its children)."""
    return cpu_of(pid) + sum(cpu_of(c) for c, st in descendants(pid) if st != "Z")


def reap_except(keep):
    """Reap dead children, but never a zygote's status (its owner waits for it)."""
    if not keep:
        reap()
        return
    for p, state in descendants(os.getpid(), keep):
        if state == "Z":
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass


def reap():
    while True:
        try:
            p, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if p == 0:
            return


def close_quietly(*fds):
    """Close each descriptor, ignoring one that is already closed."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def kill_group(pid):
    """SIGKILL the candidate and its process group (it made itself a session leader)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
