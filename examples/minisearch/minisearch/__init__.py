"""minisearch: a small pure-Python full-text search engine in the spirit of Lucene.

The package is split the way a classic search library is:

* :mod:`minisearch.analysis`  - tokenizing, stop words and a suffix-stripping stemmer;
* :mod:`minisearch.index`     - the inverted index (term -> postings with positions);
* :mod:`minisearch.query`     - a tiny query language (AND / OR / NOT, parentheses,
  quoted phrases, ``prefix*`` wildcards) parsed into a query tree;
* :mod:`minisearch.searcher`  - matching, BM25 scoring, top-k selection, fuzzy expansion;
* :mod:`minisearch.highlight` - snippets with the matched words marked.
"""

from .analysis import analyze, stem
from .index import InvertedIndex
from .query import QuerySyntaxError, parse_query
from .searcher import Hit, Searcher, SearchResult

__all__ = [
    "analyze",
    "stem",
    "InvertedIndex",
    "QuerySyntaxError",
    "parse_query",
    "Hit",
    "SearchResult",
    "Searcher",
]
