"""Text analysis: lowercasing, tokenizing, stop-word removal and stemming.

Positions are counted over *all* word tokens, stop words included, so that a
phrase such as ``"search the index"`` keeps its gaps when it is matched.
"""

import re

TOKEN_RE = re.compile(r"[a-z0-9]+")

STOP_WORDS = frozenset(
    """a an and are as at be but by for from has have he her his i in is it its
    not of on or our she that the their there they this to was we were which will
    with you""".split()
)

_VOWELS = frozenset("aeiouy")
_stem_cache = {}


def _has_vowel(text):
    """Return True if ``text`` contains a vowel (``y`` counts)."""
    return any(ch in _VOWELS for ch in text)


def _strip_suffixes(word):
    """Strip common English inflections and derivations from ``word``.

    A deliberately small relative of the Porter stemmer: one plural step, one
    derivational/inflectional step, then undoubling of a final consonant.
    """
    if len(word) <= 3:
        return word
    # Step 1: plurals.
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ss") or word.endswith("us"):
        pass
    elif word.endswith("s"):
        word = word[:-1]
    # Step 2: one derivational or inflectional suffix.
    if word.endswith("ational"):
        return word[:-7] + "ate"
    elif word.endswith("ation") and len(word) > 6:
        return word[:-5] + "ate"
    elif word.endswith("ness") and len(word) > 6:
        word = word[:-4]
    elif word.endswith("ment") and len(word) > 6:
        word = word[:-4]
    elif word.endswith("ing") and len(word) > 5 and _has_vowel(word[:-3]):
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4 and _has_vowel(word[:-2]):
        word = word[:-2]
    elif word.endswith("ly") and len(word) > 4:
        word = word[:-2]
    elif word.endswith("er") and len(word) > 4:
        word = word[:-2]
    else:
        return word
    # Step 3: "running" -> "runn" -> "run", but keep "pass", "fall", "buzz".
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    return word


def stem(word):
    """Return the stem of a lowercase ``word`` (memoised)."""
    result = _stem_cache.get(word)
    if result is None:
        result = _strip_suffixes(word)
        _stem_cache[word] = result
    return result


def analyze(text):
    """Split ``text`` into ``(term, position)`` pairs, skipping stop words."""
    terms = []
    for position, match in enumerate(TOKEN_RE.finditer(text.lower())):
        word = match.group()
        if word not in STOP_WORDS:
            terms.append((stem(word), position))
    return terms


def analyze_with_offsets(text):
    """Yield ``(term_or_None, start, end)`` for every word token of ``text``.

    Stop words yield ``None`` as their term; offsets index into ``text`` itself,
    which is what the highlighter needs.
    """
    for match in TOKEN_RE.finditer(text.lower()):
        word = match.group()
        term = None if word in STOP_WORDS else stem(word)
        yield term, match.start(), match.end()
