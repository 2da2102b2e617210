"""Resource classes from code: which resource a function's work is bound by, read off its source.

A scikit-learn pipeline (the code features of :mod:`code_features`, log-scaled -> ``DictVectorizer`` ->
complement naive Bayes, its smoothing chosen by cross-validation on the training functions) trained on
the shipped corpus (``corpus.json``): real functions of the standard library and of PyPI packages, each
labelled cpu, memory, disk or network by measuring it on the machine that built the corpus
(``benchmarks/dataflow/label_corpus.py``). An operation of a Dask job is classified from the functions its tasks run. The corpus holds the features, so training needs
neither the corpus's packages nor their sources.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .code_features import features_at
from .types import FunctionRef

CLASSES = ("cpu", "memory", "disk", "network")
ALPHAS = (0.5, 1.0, 2.0, 3.0)
CORPUS = Path(__file__).resolve().parent / "corpus.json"
_SKIPPED = ("dask._task_spec.", "builtins.", "_operator.", "toolz.functoolz.")


class CorpusError(ValueError):
    """A corpus file that cannot be read: the message names the file and the entry."""


@dataclass(frozen=True)
class CorpusEntry:
    """One labelled function of the corpus."""

    function: str
    label: str
    features: dict[str, float]
    measured: dict[str, float]

    @property
    def package(self) -> str:
        """The top-level package (``networkx``, ``shutil``...): what a grouped split holds out together."""
        return self.function.split(".", 1)[0]


def load_corpus(path: Path = CORPUS) -> list[CorpusEntry]:
    """Read and check the corpus."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorpusError(f"{path}: cannot be read ({exc})") from None
    if not isinstance(body, dict) or body.get("format") != "mantispy-resource-corpus":
        raise CorpusError(f"{path}: not a resource corpus (field format)")
    functions = body.get("functions")
    if not isinstance(functions, list):
        raise CorpusError(f"{path}: field functions: expected a list")
    entries = []
    for i, item in enumerate(functions):
        where = f"{path}: functions[{i}]"
        if not isinstance(item, dict) or item.get("label") not in CLASSES or not isinstance(item.get("function"), str):
            raise CorpusError(f"{where}: needs a function name and a label among {', '.join(CLASSES)}")
        for field in ("features", "measured"):
            if not _numbers(item.get(field)):
                raise CorpusError(f"{where}.{field}: expected an object of finite numbers")
        entries.append(CorpusEntry(item["function"], item["label"], {k: float(v) for k, v in item["features"].items()},
                                   {k: float(v) for k, v in item["measured"].items()}))
    if len({e.label for e in entries}) < 2:
        raise CorpusError(f"{path}: needs functions of at least two classes")
    return entries


def _numbers(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        for k, v in value.items())


class ResourceClassifier:
    """Code features -> resource class (scikit-learn's estimator contract: fit, predict, predict_proba).

    Complement naive Bayes over the log-scaled feature counts: a text classifier's model, as the features
    are mostly words (names called, modules, docstring, function and parameter names). ``alpha`` is its
    smoothing; left at None, ``fit`` chooses it among ``ALPHAS`` by stratified ``folds``-fold
    cross-validation on the training functions alone (1.0 when a class has fewer functions than folds),
    so that a held-out estimate of the whole procedure stays held out. ``alpha_`` is the one used."""

    def __init__(self, alpha: float | None = None, folds: int = 5) -> None:
        self.alpha = alpha
        self.folds = folds

    def _pipeline(self, alpha: float) -> Any:
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.naive_bayes import ComplementNB
        from sklearn.pipeline import make_pipeline

        return make_pipeline(DictVectorizer(), ComplementNB(alpha=alpha))

    def fit(self, X: list[dict[str, float]], y: list[str]) -> ResourceClassifier:  # noqa: N803
        """Fit on feature dicts and labels."""
        data = [_transform(x) for x in X]
        self.alpha_ = self.alpha if self.alpha is not None else self._chosen_alpha(data, list(y))
        self.pipeline_ = self._pipeline(self.alpha_).fit(data, y)
        self.classes_ = [str(c) for c in self.pipeline_.classes_]
        return self

    def _chosen_alpha(self, data: list[dict[str, float]], y: list[str]) -> float:
        """The smoothing with the best mean accuracy over stratified folds of the training data (the first
        of ``ALPHAS`` on a tie): each fold vectorised once, on its own training part, for every candidate."""
        from collections import Counter

        from sklearn.feature_extraction import DictVectorizer
        from sklearn.model_selection import StratifiedKFold
        from sklearn.naive_bayes import ComplementNB

        if min(Counter(y).values()) < self.folds or len(set(y)) < 2:
            return 1.0
        right = dict.fromkeys(ALPHAS, 0.0)
        for train, test in StratifiedKFold(self.folds, shuffle=True, random_state=0).split(data, y):
            vectoriser = DictVectorizer().fit([data[i] for i in train])
            fitted_x = vectoriser.transform([data[i] for i in train])
            held_x = vectoriser.transform([data[i] for i in test])
            for alpha in ALPHAS:
                model = ComplementNB(alpha=alpha).fit(fitted_x, [y[i] for i in train])
                right[alpha] += float(model.score(held_x, [y[i] for i in test]))
        return max(ALPHAS, key=lambda alpha: (right[alpha], -ALPHAS.index(alpha)))

    def predict(self, X: list[dict[str, float]]) -> list[str]:  # noqa: N803
        """The most probable class of each feature dict."""
        return [str(c) for c in self.pipeline_.predict([_transform(x) for x in X])]

    def predict_proba(self, X: list[dict[str, float]]) -> Any:  # noqa: N803
        """Class probabilities, columns in ``classes_`` order."""
        return self.pipeline_.predict_proba([_transform(x) for x in X])


def _transform(features: dict[str, float]) -> dict[str, float]:
    return {k: math.log1p(v) for k, v in features.items() if v > 0}


@lru_cache(maxsize=1)
def default_classifier() -> ResourceClassifier:
    """The classifier trained on the shipped corpus."""
    corpus = load_corpus()
    return ResourceClassifier().fit([e.features for e in corpus], [e.label for e in corpus])


def operation_features(functions: list[FunctionRef] | tuple[FunctionRef, ...]) -> dict[str, float]:
    """The summed code features of an operation's functions (Dask's own task wrappers left out)."""
    total: defaultdict[str, float] = defaultdict(float)
    for ref in functions:
        if ref.label.startswith(_SKIPPED) or not ref.file:
            continue
        for name, value in features_at(ref.file, ref.line).items():
            total[name] += value
    return dict(total)


def classify_operation(functions: list[FunctionRef] | tuple[FunctionRef, ...]) -> tuple[str, dict[str, float]] | None:
    """The code class of an operation and the class probabilities; None when none of its code is readable."""
    features = operation_features(functions)
    if not features:
        return None
    classifier = default_classifier()
    probabilities = classifier.predict_proba([features])[0]
    ranked = dict(zip(classifier.classes_, (float(p) for p in probabilities)))
    return max(ranked, key=lambda c: ranked[c]), ranked


def held_out_accuracy(corpus: list[CorpusEntry], folds: int = 5, seed: int = 0) -> dict[str, float]:
    """Accuracy on held-out functions: stratified k-fold, and grouped so that no package is in both sides."""
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    X = [e.features for e in corpus]  # noqa: N806
    y = [e.label for e in corpus]
    groups = [e.package for e in corpus]
    result = {}
    for name, splitter, split_args in (("stratified", StratifiedKFold(folds, shuffle=True, random_state=seed), (X, y)),
                                       ("by_package", GroupKFold(folds), (X, y, groups))):
        right = 0
        for train, test in splitter.split(*split_args):
            model = ResourceClassifier().fit([X[i] for i in train], [y[i] for i in train])
            predicted = model.predict([X[i] for i in test])
            right += sum(p == y[i] for p, i in zip(predicted, test))
        result[name] = right / len(y)
    return result
