"""Calls inside comprehensions and generator expressions belong to the enclosing function."""


def normalize(word):
    return str.lower(word)


def is_valid(word):
    return bool(word)


def count_chars(word):
    return len(word)


def tokens(text):
    for part in text.split(","):
        yield normalize(part)


def summary(text):
    words = [normalize(w) for w in text.split() if is_valid(w)]
    sizes = {w: count_chars(w) for w in words}
    unique = {normalize(w) for w in words}
    total = sum(count_chars(w) for w in words)
    nested = [[count_chars(a) for a in w] for w in words]
    return words, sizes, unique, total, nested, list(tokens(text))


summary("a, b")
