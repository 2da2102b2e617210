"""Query execution: matching, BM25 ranking, top-k selection and fuzzy expansion."""

import heapq
import math
from dataclasses import dataclass

from .highlight import make_snippet
from .query import Bool, Empty, Phrase, Prefix, Term, parse_query

K1 = 1.2
B = 0.75


@dataclass
class Hit:
    """One result: the document, its score (None in boolean mode) and a snippet."""

    doc_id: int
    score: float
    snippet: str = ""


@dataclass
class SearchResult:
    """The outcome of one query: how many documents matched and the page shown."""

    query: str
    total: int
    hits: list


def top_k(scored, k):
    """The ``k`` best ``(doc_id, score)`` pairs, best first; ties go to lower ids.

    Keeps a min-heap of size ``k`` whose root is the weakest hit kept so far.
    """
    heap = []
    for doc_id, score in scored:
        item = (score, -doc_id)
        if len(heap) < k:
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)
    return [(-neg_id, score) for score, neg_id in sorted(heap, reverse=True)]


class Searcher:
    """Runs queries against an :class:`~minisearch.index.InvertedIndex`.

    ``mode`` is ``"bm25"`` (rank matches by BM25, default operator OR) or
    ``"boolean"`` (unranked matches in doc id order, default operator AND).
    ``fuzzy`` (0, 1 or 2) lets every plain term match indexed terms within
    that many edits; it is costly, as every term is compared with the vocabulary.
    """

    def __init__(self, index, mode="bm25", fuzzy=0):
        if mode not in ("bm25", "boolean"):
            raise ValueError(f"unknown mode {mode!r}")
        if fuzzy not in (0, 1, 2):
            raise ValueError("fuzzy must be 0, 1 or 2")
        self.index = index
        self.mode = mode
        self.fuzzy = fuzzy
        self.default_op = "OR" if mode == "bm25" else "AND"
        self._all_docs = None
        self._expansions = {}

    def parse(self, text):
        """Parse ``text`` with this searcher's default operator."""
        return parse_query(text, self.default_op)

    def search(self, text, k=10, highlight=True):
        """Run one query and return a :class:`SearchResult` with up to ``k`` hits."""
        self._expansions = {}  # per query: no caching across queries
        tree = self.parse(text)
        matched = self._match(tree)
        terms = self._positive_terms(tree)
        if self.mode == "bm25":
            scores = self._bm25(terms, matched)
            page = top_k(((doc_id, scores.get(doc_id, 0.0)) for doc_id in matched), k)
        else:
            page = [(doc_id, None) for doc_id in heapq.nsmallest(k, matched)]
        hits = []
        wanted = set(terms)
        for doc_id, score in page:
            snippet = make_snippet(self.index.documents[doc_id], wanted) if highlight else ""
            hits.append(Hit(doc_id, score, snippet))
        return SearchResult(text, len(matched), hits)

    # -- term expansion ----------------------------------------------------

    def _expand(self, node):
        """The indexed terms a Term or Prefix node stands for, in sorted order."""
        key = node
        if key not in self._expansions:
            if isinstance(node, Prefix):
                terms = self.index.expand_prefix(node.prefix)
            elif self.fuzzy:
                terms = self.index.expand_fuzzy(node.term, self.fuzzy)
            else:
                terms = [node.term] if node.term in self.index.postings else []
            self._expansions[key] = terms
        return self._expansions[key]

    def _positive_terms(self, node):
        """Terms that contribute to scores and highlights (not under NOT), no repeats."""
        found = []
        if isinstance(node, (Term, Prefix)):
            found.extend(self._expand(node))
        elif isinstance(node, Phrase):
            found.extend(term for term, _ in node.terms)
        elif isinstance(node, Bool):
            for clause in node.clauses:
                found.extend(self._positive_terms(clause))
        return list(dict.fromkeys(found))

    # -- matching ----------------------------------------------------------

    def _all(self):
        if self._all_docs is None:
            self._all_docs = set(range(len(self.index)))
        return self._all_docs

    def _match(self, node):
        """The set of doc ids that satisfy ``node``."""
        if isinstance(node, (Term, Prefix)):
            docs = set()
            for term in self._expand(node):
                docs |= self.index.doc_ids(term)
            return docs
        if isinstance(node, Phrase):
            return self._match_phrase(node)
        if isinstance(node, Empty):
            return set()
        clauses = [c for c in node.clauses if not isinstance(c, Empty)]
        if not clauses:
            docs = set(self._all()) if node.excluded else set()
        elif node.op == "AND":
            docs = self._intersect(clauses)
        else:
            docs = set()
            for clause in clauses:
                docs |= self._match(clause)
        for clause in node.excluded:
            docs -= self._match(clause)
        return docs

    def _intersect(self, clauses):
        """Intersect clause matches, applying pure exclusions by subtraction."""
        positive, negative = [], []
        for clause in clauses:
            if isinstance(clause, Bool) and not clause.clauses:
                negative.extend(clause.excluded)
            else:
                positive.append(self._match(clause))
        if positive:
            positive.sort(key=len)
            docs = positive[0]
            for other in positive[1:]:
                docs &= other
        else:
            docs = set(self._all())
        for clause in negative:
            docs -= self._match(clause)
        return docs

    def _match_phrase(self, node):
        """Documents where the phrase's terms occur at the right relative positions."""
        terms = node.terms
        if any(term not in self.index.postings for term, _ in terms):
            return set()
        ordered = sorted(terms, key=lambda pair: self.index.doc_freq(pair[0]))
        candidates = self.index.doc_ids(ordered[0][0])
        for term, _ in ordered[1:]:
            candidates &= self.index.doc_ids(term)
            if not candidates:
                return set()
        positions = {term: dict(self.index.postings[term]) for term, _ in ordered}
        matched = set()
        for doc_id in candidates:
            starts = None
            for term, offset in ordered:
                shifted = {p - offset for p in positions[term][doc_id]}
                starts = shifted if starts is None else starts & shifted
                if not starts:
                    break
            if starts:
                matched.add(doc_id)
        return matched

    # -- ranking -----------------------------------------------------------

    def _bm25(self, terms, matched):
        """BM25 scores of the ``matched`` documents over the positive ``terms``."""
        index = self.index
        n_docs = len(index)
        avg_length = index.average_length or 1.0
        lengths = index.doc_lengths
        scores = {}
        for term in terms:
            postings = index.postings.get(term)
            if not postings:
                continue
            df = len(postings)
            idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            for doc_id, positions in postings:
                if doc_id in matched:
                    tf = len(positions)
                    norm = K1 * (1.0 - B + B * lengths[doc_id] / avg_length)
                    scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
        return scores
