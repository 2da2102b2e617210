"""Content features (issue 18: "features that are cheap by construction").

When every slice of a program's token or line counters keeps the parser, the cheapest stand-in for
those counts is the program's own scanner run on the input by itself. Here that scanner is one of the
program's regular expressions, counted over the input files at C speed; beside them, the input's own
structure: how often each punctuation byte and the newline occur (``byte`` candidates, counted with
``bytes.count``), for programs whose patterns are too few or too slow to count:

* :mod:`.types`: the artefact (:class:`ContentTable`: the candidate patterns, their values and costs
  per input, their selection), its JSON reader;
* :mod:`.discover`: which patterns the program compiles, from a few training runs of the original
  program under :mod:`mantispy.runtime.regex_probe`, and the scanners among them (the rules one place
  compiled, as one alternation: the lexer's token count), and the byte candidates;
* :mod:`.measure`: every candidate's value and cost on given inputs, in a child process with a time limit
  (:mod:`mantispy.runtime.content`, which predictor packages also carry);
* :mod:`.choose`: which candidates a build offers its models: deterministic, cheap within the budget,
  correlated with a metric on the training inputs, and not a copy of another candidate or of the input's
  size.
"""
