"""A deterministic synthetic corpus with Zipf-like word frequencies.

The vocabulary is fixed (built from a constant seed): a few dozen stop words at
the top ranks, about 90 real English words spread from common to rare ranks,
and some 3,000 made-up words built from syllables and English suffixes (so the
stemmer has work to do). Documents depend only on ``(n_docs, seed)``.
"""

import random
from functools import cache
from itertools import accumulate

VOCABULARY_SEED = 20100601
ZIPF_EXPONENT = 1.05

STOP_WORDS = """the of and to a in is it that for on was with as by at from this be
are or an which their will were has have its they we not""".split()

REAL_WORDS = """data search index query engine python score document term token
phrase system network model time memory cache server client file record table
graph tree node value error test program input output result user page word
text language library function class object stream signal process thread lock
queue packet vector matrix image sound light river mountain forest city market
price trade energy power report science music history travel health sport game
story paper letter number color water fire stone garden winter summer searching
indexed queries documents scoring ranking engines networks running tested
parsed lucene posting analyzer stemming highlight fuzzy wildcard boolean""".split()

# Word pairs that documents use as fixed expressions, so phrase queries find hits.
PHRASES = [
    ("search", "engine"), ("data", "model"), ("python", "library"),
    ("query", "language"), ("inverted", "index"), ("memory", "cache"),
    ("river", "valley"), ("market", "price"), ("summer", "garden"),
    ("error", "report"), ("thread", "lock"), ("signal", "process"),
]

_ONSETS = "b c d f g h k l m n p r s t v w z br cl dr fl gr pl pr st tr sh ch".split()
_VOWELS = "a e i o u ai ea ou io".split()
_CODAS = ["", "", "n", "r", "l", "s", "m", "x", "nd", "rt", "st"]
_SUFFIXES = ["", "", "", "s", "ing", "ed", "er", "ly", "ness", "ation", "ies", "ment"]


def _make_stem(rng):
    """A pronounceable made-up stem of one to three syllables."""
    syllables = rng.choice((1, 2, 2, 2, 3))
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)) + rng.choice(_CODAS)


@cache
def vocabulary(size=3200):
    """The word list in frequency-rank order (rank 0 is the most frequent word)."""
    rng = random.Random(VOCABULARY_SEED)
    taken = set(STOP_WORDS) | set(REAL_WORDS) | {w for pair in PHRASES for w in pair}
    synthetic = []
    while len(synthetic) < size:
        stem = _make_stem(rng)
        for suffix in rng.sample(_SUFFIXES, rng.randint(1, 3)):
            word = stem + suffix
            if word not in taken and len(word) > 2:
                taken.add(word)
                synthetic.append(word)
    rng.shuffle(synthetic)
    words = list(STOP_WORDS) + synthetic[:size]
    # Real words at exponentially spaced ranks: the first ones are common, the last rare.
    for i, word in enumerate(REAL_WORDS):
        words.insert(len(STOP_WORDS) + int(3 * 1.065 ** i) + i, word)
    for word in ("inverted", "valley"):
        words.insert(len(words) // 3, word)
    return tuple(words)


@cache
def _cumulative_weights(n_words):
    return list(accumulate(1.0 / (rank + 1) ** ZIPF_EXPONENT for rank in range(n_words)))


def generate(n_docs, seed=0):
    """Return ``n_docs`` documents (strings) generated from ``seed``."""
    words = vocabulary()
    weights = _cumulative_weights(len(words))
    rng = random.Random(seed)
    documents = []
    for _ in range(n_docs):
        length = rng.randint(20, 110)
        drawn = rng.choices(words, cum_weights=weights, k=length)
        topics = rng.sample(words[40:1500], 2)
        tokens = []
        for word in drawn:
            roll = rng.random()
            if roll < 0.06:
                tokens.append(rng.choice(topics))
            elif roll < 0.08:
                tokens.extend(rng.choice(PHRASES))
            else:
                tokens.append(word)
        sentences = []
        start = 0
        while start < len(tokens):
            end = start + rng.randint(6, 14)
            sentence = " ".join(tokens[start:end])
            sentences.append(sentence[0].upper() + sentence[1:] + ".")
            start = end
        documents.append(" ".join(sentences))
    return documents


if __name__ == "__main__":
    words = vocabulary()
    print(f"{len(words)} words; top 40 by rank:")
    print(" ".join(words[:40]))
    for doc in generate(3, seed=1):
        print("-", doc)
