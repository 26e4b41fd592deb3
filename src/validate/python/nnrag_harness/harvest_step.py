# A witness-harvest step in its child (harness.py; stages.child_main sets the child up and
# calls harvest_main): the entry of every harvest step. What a stored harvest was made
# by is this module and the harness modules it imports, followed through their imports
# (environment.ts harvestHarness): the harvest's cache key digests those and no other
# module of the package, so an edit of a validation stage keeps the stored harvests. Do
# not import the validation stages (stages, candidates, the argument sources) from here
# or from a module this one imports: each would join the harvest's key.
import gc
import signal
import sys
import traceback

from nnrag_harness import stash as _stash
from nnrag_harness.classify import fmt_error, fmt_trace
from nnrag_harness.inputs import seed_all
from nnrag_harness.procs import _monotonic, double_cpu_budget, self_cpu


def harvest_main(req, rep, torch):
    """A witness-harvest step (nnrag_harness.harvest) in a child of the repository's
    zygote: its modules are put back and its roots are on sys.path, its CPU budget is
    the doubled one of the equivalence stage."""
    from nnrag_harness import harvest

    for name, m in _stash.STASH.items():
        sys.modules.setdefault(name, m)
    cfg = req["harvest"]
    for p in reversed(cfg.get("roots") or []):
        if p not in sys.path:
            sys.path.insert(0, p)
    double_cpu_budget()
    # what the step draws before the harness's own seeds (an entry module's import, a test
    # file's collection) is the same in every run, whatever its zygote drew before the fork:
    # torch and NumPy seed their global generators from the operating system at start-up
    seed_all(torch, 0)
    # a run step reports the files of the repository it read (reads.py): its stored
    # result is reused while they are unchanged (witness/harvest.ts)
    reads = None
    if cfg.get("mode") != "list" and cfg.get("recordReads"):
        from nnrag_harness.reads import Reads

        # every root on its sys.path: the repository's and those it imports from (a
        # model of one repository built from another's layers reads both)
        reads = Reads(list(cfg.get("roots") or []) + [cfg.get("repoRoot")])

    # which functions ran is known when the zygote recorded its import's (reads.py) and
    # code objects carry their qualified names (co_qualname, Python 3.11)
    from nnrag_harness import reads as _reads_mod

    by_function = _reads_mod.IMPORT_CODES is not None and sys.version_info >= (3, 11)

    def send(ev):
        if reads is not None and ev.get("ev") == "harvest" and isinstance(ev.get("result"), dict):
            reads.stop()
            ev["result"]["reads"] = reads.files()
            if by_function:
                # per file the functions that ran, and the files opened (read whole)
                ev["result"]["calls"] = reads.calls()
                ev["result"]["opened"] = reads.opened_files()
        rep.send(ev)

    cpu0, wall0 = self_cpu(), _monotonic()

    from nnrag_harness import values as V

    try:
        if cfg.get("mode") == "list":
            # what the list step read (its modules and those they import, the files it
            # opened): a stored harvest stays current while they are unchanged
            # (witness/store.ts harvestDepends)
            listing_reads = None
            if cfg.get("recordReads"):
                from nnrag_harness.reads import Reads

                listing_reads = Reads(list(cfg.get("roots") or []) + [cfg.get("repoRoot")]).start(calls=False)
            # the entries' plans go through node and come back in run steps: floats of
            # integral value kept floats (an argparse `default=2.0` is 2.0, not 2)
            listed = harvest.list_entries(cfg, torch)
            for e in listed.get("entries") or []:
                if isinstance(e.get("plan"), dict):
                    e["plan"] = V.keep_floats(e["plan"])
            if listing_reads is not None:
                listing_reads.stop()
                listing_reads.add_modules()
                listed["reads"] = listing_reads.files()
                if by_function:
                    # the functions the zygote's import ran, per file (reads.IMPORT_CODES)
                    listed["importCalls"] = _reads_mod.calls_of(_reads_mod.IMPORT_CODES, listing_reads.roots)
                    # and the files whose source it read (whole files for every step)
                    listed["importSources"] = listing_reads._under(_reads_mod.IMPORT_SOURCES)
            rep.send({"ev": "harvest", "result": listed})
            return
        if isinstance((cfg.get("entry") or {}).get("plan"), dict):
            cfg["entry"]["plan"] = V.plain_floats(cfg["entry"]["plan"])
        if (cfg.get("entry") or {}).get("kind") in ("test", "readme", "doctest", "example"):
            from nnrag_harness import harvest_docs

            if reads is not None:
                reads.start()
            harvest_docs.run_doc_entry(cfg, torch, send)
        else:
            if reads is not None:
                reads.start()
            harvest.run_entry(cfg, torch, send)
    except BaseException as e:  # noqa: BLE001 - reported as the step's error
        # an error that escaped the step (a MemoryError while its witnesses were put
        # together): an answer all the same, with what it read and the CPU it spent, so
        # the harvest stores it and reuses it while those files are unchanged (the step
        # would fail the same way again; without an answer it ran again every time)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        res = {"error": fmt_error(e), "traceback": fmt_trace(e)}
        # free what the failed step held (its frames' locals: the recorder and every module
        # it built) before answering: a MemoryError left too little to answer with
        traceback.clear_frames(e.__traceback__)
        e.__traceback__ = None
        gc.collect()
        if cfg.get("mode") != "list":
            res["cpuMs"] = round((self_cpu() - cpu0) * 1000, 1)
            res["ms"] = round((_monotonic() - wall0) * 1000, 1)
            if res["error"].startswith(("EntryTimeout", "timeout")):
                res["stopped"] = "time"
        try:
            send({"ev": "harvest", "result": res})
        except BaseException:  # noqa: BLE001 - the reads could not be listed either
            if reads is not None:
                reads.stop()
            rep.send({"ev": "harvest", "result": {"error": res["error"], "traceback": res["traceback"]}})
