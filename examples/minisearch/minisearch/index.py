"""The inverted index: for every term, the documents that hold it and where."""

import bisect

from .analysis import analyze


def within_edits(a, b, max_edits):
    """Return True if the Levenshtein distance of ``a`` and ``b`` is <= ``max_edits``.

    Classic dynamic programming, one row at a time, giving up as soon as every
    cell of a row exceeds the bound.
    """
    if abs(len(a) - len(b)) > max_edits:
        return False
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
        if min(current) > max_edits:
            return False
        previous = current
    return previous[-1] <= max_edits


class InvertedIndex:
    """An in-memory inverted index with positional postings.

    ``postings[term]`` is a list of ``(doc_id, positions)`` in increasing doc id
    order; ``positions`` is the increasing list of token positions of ``term``
    in that document. Documents are stored too, for highlighting.
    """

    def __init__(self):
        self.postings = {}
        self.documents = []
        self.doc_lengths = []
        self.total_length = 0
        self._vocabulary = None

    def __len__(self):
        return len(self.documents)

    def add(self, text):
        """Analyze ``text``, add it to the index and return its doc id."""
        doc_id = len(self.documents)
        by_term = {}
        terms = analyze(text)
        for term, position in terms:
            by_term.setdefault(term, []).append(position)
        for term, positions in by_term.items():
            self.postings.setdefault(term, []).append((doc_id, positions))
        self.documents.append(text)
        self.doc_lengths.append(len(terms))
        self.total_length += len(terms)
        self._vocabulary = None
        return doc_id

    @property
    def average_length(self):
        """The mean number of indexed terms per document."""
        return self.total_length / len(self.documents) if self.documents else 0.0

    @property
    def vocabulary(self):
        """All indexed terms, sorted (computed once, after the last ``add``)."""
        if self._vocabulary is None:
            self._vocabulary = sorted(self.postings)
        return self._vocabulary

    def doc_freq(self, term):
        """How many documents contain ``term``."""
        return len(self.postings.get(term, ()))

    def doc_ids(self, term):
        """The set of documents that contain ``term``."""
        return {doc_id for doc_id, _ in self.postings.get(term, ())}

    def expand_prefix(self, prefix, limit=1024):
        """The indexed terms that start with ``prefix``, at most ``limit`` of them."""
        vocabulary = self.vocabulary
        start = bisect.bisect_left(vocabulary, prefix)
        expanded = []
        for term in vocabulary[start:]:
            if not term.startswith(prefix) or len(expanded) >= limit:
                break
            expanded.append(term)
        return expanded

    def expand_fuzzy(self, term, max_edits):
        """The indexed terms within ``max_edits`` edits of ``term`` (itself included)."""
        return [other for other in self.vocabulary if within_edits(term, other, max_edits)]
