"""Performance-regression diagnosis (AutoPerf, ../shared/papers/autoperf.md; ``mantispy diagnose``):
whether a new version of a program regressed, in which function and which counter.

* :mod:`.changes`: the functions whose code differs between the versions (syntax trees compared), the
  renamed and the added ones, and their callers;
* :mod:`.profiling`: both versions run over a campaign's inputs, interleaved, every call of the touched
  functions counted and their counters read at a sample of calls that keeps the profile's cost low
  (:mod:`mantispy.runtime.function_counters`, :mod:`mantispy.runtime.call_sampling`);
* :mod:`.counting`: both versions instrumented and run once per input for mantispy's program counts;
* :mod:`.count_changes`: the functions whose loop, call or handler counts grew (or shrank), and the changed
  function each is put down to;
* :mod:`.autoencoder`: the anomaly detector trained on the baseline's runs of a function;
* :mod:`.analysis`: flagged runs, the counter and function they name, effect and significance, clusters,
  and the whole-process CPU comparison beside the verdict;
* :mod:`.types`: the diagnosis artefact; :mod:`.document`: its checked reader;
* :mod:`.render_text`, :mod:`.render_html`: the terminal and the page.
"""
