"""Snippets: the best window of a document, with matched words in [brackets]."""

from .analysis import analyze_with_offsets

WINDOW = 12


def make_snippet(text, terms, window=WINDOW):
    """Return a short excerpt of ``text`` around the densest run of ``terms``.

    The document is re-analyzed so that stemmed forms match (``searching``
    lights up for the term ``search``). The window of ``window`` tokens with
    the most matches wins; earlier windows win ties.
    """
    tokens = list(analyze_with_offsets(text))
    if not tokens:
        return ""
    flags = [term is not None and term in terms for term, _, _ in tokens]
    best_start, best_count = 0, sum(flags[:window])
    count = best_count
    for start in range(1, max(1, len(tokens) - window + 1)):
        count += flags[start + window - 1] - flags[start - 1]
        if count > best_count:
            best_start, best_count = start, count
    stop = min(len(tokens), best_start + window)
    pieces = []
    cursor = tokens[best_start][1]
    for i in range(best_start, stop):
        _, begin, end = tokens[i]
        if flags[i]:
            pieces.append(text[cursor:begin] + "[" + text[begin:end] + "]")
            cursor = end
    pieces.append(text[cursor:tokens[stop - 1][2]])
    prefix = "... " if best_start > 0 else ""
    suffix = " ..." if stop < len(tokens) else ""
    return prefix + "".join(pieces) + suffix
