# nnrag_harness: the focused modules of the validation harness (src/validate/README.md).
#
#   worker   - the long-lived worker: a child per request, deadline, cleanup (Worker)
#   channel  - the nonce-framed protocol of a worker with the pool or a zygote (Channel)
#   zygote   - a fork per repository that imported the original once (Zygote)
#   stash    - the original's modules a zygote imported, hidden while a candidate runs (STASH)
#   stages   - the stages of one candidate in its child (Stages), child_main
#   procs    - rlimits, working directory, /proc walks, reaping and killing descendants
#   classify - failure categories, error and traceback text
#   arguments- guesses by name / annotation, constructor parameters, refinements; values
#              mapped to the original's objects
#   candidates - arg_candidates: orders the sources' plans and refines them
#   inputs   - forward-input candidates from layers, widths and token counts; shape repair
#   snippet  - the usage snippet: rendered from recorded values through a whitelist IR,
#              checked with ast, run (or its values compared) before it is recorded
#   values   - encode / decode recorded Python values (constructor arguments, forward
#              inputs) as JSON: numbers, strings, tuples, classes, partials, tensors by
#              shape and statistics, nested modules by their own construction, objects
#              rebuilt from their fields
#   harvest  - witness harvesting: list a repository's own ways to build whole models,
#              build one and run it on a small input, recording what every class got
#   harvest_step - a harvest step in its child (harvest_main): the harvest's entry; the
#              modules it imports, followed through theirs, are the harvest's cache key
#   harvest_docs - witnesses from the repository's tests (pytest) and documented examples
#              (Markdown code blocks, docstring `>>>` examples, examples/ scripts)
#   sources  - the one interface of the argument sources (a source's plans(request) yields
#              Plans), label -> argumentsSource; one module per source:
#              source_witness, source_callsite, source_table, source_guess
#
# harness.py (the entry point: --probe, --worker) imports this package. Inside the sandbox the package has no folder: the
# pool sends harness.py with the package's module texts bundled in front of it
# (environment.ts harnessSource, in dependency order: each module after those it imports
# at its top level) and harness.py installs them as modules in that order.

# the module name a candidate's text is imported as: not an identifier (Language
# Reference §7.11: an import statement names identifiers), so no repository module can
# be named like it, and `import` in repository code never reaches the copy; its file in
# the candidate's scratch folder (an unpredictable name)
CANDIDATE_MODULE = "nnrag candidate"
CANDIDATE_FILE = "candidate.py"
