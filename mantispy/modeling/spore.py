"""SPORE: sparse polynomial regression (the paper's §4, after Huang et al., NIPS 2010).

:class:`SporeRegressor` follows scikit-learn's estimator contract (``fit`` / ``predict`` /
``get_params``). ``fit(X, y)`` takes raw feature columns (a DataFrame whose columns are feature ids, or
an array) and does, on the training rows only:

0. preprocessing (:mod:`preprocess`): drop constant columns, collapse perfectly correlated ones, scale
   to [0, 1]; when more than max(40, 2 x training runs) columns remain (at most ``max_candidates``),
   keep those most correlated with the target (sure independence screening: fast at thousands of
   columns, and few enough candidates that a cross-validated LASSO on tens of runs does not fit noise);
1. linear screen: LASSO with lambda chosen by cross-validation (same rule as step 3); the survivors, in the order they enter
   the lasso path, at most ``max_screen`` of them;
2. expansion: every term of (1 + x1 + ... + xk)^degree over the survivors;
3. selection: LASSO on the terms with lambda by cross-validation on the training data only (the
   paper's footnote 3; ``lambda_rule="1se"`` takes the largest lambda within one standard error of the
   best, for a more compact model), or SPORE-FoBa (``method="foba"``): forward-backward greedy selection
   over the same terms, its size chosen by cross-validation.

Both LASSO stages are *adaptive* by default (``penalty="adaptive"``; Zou, JASA 2006): before each, every
column is multiplied by the size of its cross-validated ridge coefficient, so a term the ridge fit hardly
uses must explain much more to enter. With as many candidate columns as training inputs (30 inputs of a
suite build against their 20-odd option flags and content counts) a plain LASSO lets several options
that do nothing in beside the real ones; ``penalty="plain"`` is the paper's.

``form="log"`` fits the multiplicative form instead: log(y) over the terms of signed log1p(x) (a
product of powers of the features, such as documents x queries x terms, is linear there), without
weights (a log residual already is a relative error), and predicts exp(...). :mod:`selection` chooses
between the forms by cross-validation.

The solver is scikit-learn's coordinate descent (``LassoCV`` / ``lasso_path``): a pathwise solver with
warm starts, like glmnet's; ``solver="glmnet"`` runs the final LASSO stage with glmnet itself (the
optional python-glmnet package, over the same folds; the linear screen stays scikit-learn's). With ``weighting="relative"`` (default) every run is weighted by 1/y^2, so
the fit minimises squared *relative* error, the error the paper reports; ``refit=True`` re-estimates
the selected terms' coefficients by weighted least squares (the relaxed lasso), removing the shrinkage
that LASSO puts on them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LassoCV, lasso_path
from sklearn.model_selection import GroupKFold, KFold
from sklearn.preprocessing import PolynomialFeatures

from .preprocess import Preprocessed, preprocess

FORMS = ("polynomial", "log")
SOLVERS = ("sklearn", "glmnet")
PENALTIES = ("adaptive", "plain")


def signed_log1p(values: np.ndarray) -> np.ndarray:
    """sign(x) * log(1 + |x|): the log form's view of a feature (defined for zero and negatives)."""
    values = np.asarray(values, dtype=float)
    return np.sign(values) * np.log1p(np.abs(values))


class ModelingError(Exception):
    """The data cannot give a model (too few runs, no varying feature...); the message says why."""


def _cv_splits(n: int, groups: np.ndarray | None, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    if groups is not None and len(np.unique(groups)) >= folds:
        return list(GroupKFold(n_splits=folds).split(np.zeros(n), groups=groups))
    return list(KFold(n_splits=folds, shuffle=True, random_state=seed).split(np.zeros(n)))


def _one_se(mse_path: np.ndarray) -> tuple[int, int]:
    """(index of the best, index chosen by the one-standard-error rule) along a path (rows = path)."""
    mean = mse_path.mean(axis=1)
    best = int(np.argmin(mean))
    se = mse_path[best].std(ddof=1) / math.sqrt(mse_path.shape[1]) if mse_path.shape[1] > 1 else 0.0
    within = np.flatnonzero(mean <= mean[best] + se)
    chosen = int(within.min())  # paths run from the simplest model (largest lambda) first
    if mean[chosen] >= mean[0] * (1 - 1e-9) and mean[best] < 0.9 * mean[0]:
        # The rule landed on the constant model (the path's first points) although the best model
        # beats it clearly: with few, noisy training runs the standard error is wide enough to reach
        # back to the constant. A constant is no prediction; keep the best instead.
        chosen = best
    return best, chosen


def _weighted_lstsq(A: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """Weighted least squares with an intercept; a tiny ridge keeps collinear terms finite."""
    sw = np.sqrt(w)
    mean_a = np.average(A, axis=0, weights=w) if A.shape[1] else np.zeros(0)
    mean_y = float(np.average(y, weights=w))
    Ac = (A - mean_a) * sw[:, None]
    yc = (y - mean_y) * sw
    if A.shape[1] == 0:
        return np.zeros(0), mean_y
    ridge = 1e-10 * max(float(np.trace(Ac.T @ Ac)), 1e-300)
    coef = np.linalg.solve(Ac.T @ Ac + ridge * np.eye(A.shape[1]), Ac.T @ yc)
    return coef, mean_y - float(mean_a @ coef)


def _adaptive_scales(A: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Column scales of the adaptive LASSO (Zou, JASA 2006): each column multiplied by the size of its
    cross-validated ridge coefficient, so that a LASSO on the scaled columns penalises a term in inverse
    proportion to how much the ridge fit already leans on it. With as many candidate terms as training
    inputs, a plain LASSO lets small, noisy terms in beside the real ones; this keeps them out."""
    from sklearn.linear_model import RidgeCV

    if A.shape[1] == 0:
        return np.ones(0)
    ridge = RidgeCV(alphas=np.logspace(-4, 3, 30)).fit(A, y, sample_weight=w)
    size = np.abs(np.ravel(ridge.coef_))
    top = float(size.max()) if size.size else 0.0
    if not np.isfinite(top) or top <= 0:
        return np.ones(A.shape[1])
    return np.maximum(size / top, 1e-6)


class SporeRegressor(RegressorMixin, BaseEstimator):
    """Sparse polynomial regression over program features (see the module docstring)."""

    def __init__(
        self,
        degree: int = 3,
        method: str = "lasso",
        max_screen: int = 12,
        max_candidates: int = 400,
        cv: int = 5,
        lambda_rule: str = "1se",
        weighting: str = "relative",
        refit: bool = True,
        max_terms: int = 30,
        exclude: tuple[str, ...] = (),
        random_state: int = 0,
        form: str = "polynomial",
        solver: str = "sklearn",
        penalty: str = "adaptive",
    ) -> None:
        self.degree = degree
        self.method = method
        self.max_screen = max_screen
        self.max_candidates = max_candidates
        self.cv = cv
        self.lambda_rule = lambda_rule
        self.weighting = weighting
        self.refit = refit
        self.max_terms = max_terms
        self.exclude = exclude
        self.random_state = random_state
        self.form = form
        self.solver = solver
        self.penalty = penalty

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, groups=None):
        """Fit on raw feature columns X (DataFrame with feature-id columns, or array) and target y."""
        import pandas as pd

        if self.method not in ("lasso", "foba"):
            raise ValueError(f"method must be 'lasso' or 'foba', not {self.method!r}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {', '.join(SOLVERS)}, not {self.solver!r}")
        if self.penalty not in PENALTIES:
            raise ValueError(f"penalty must be one of {', '.join(PENALTIES)}, not {self.penalty!r}")
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {', '.join(FORMS)}, not {self.form!r}")
        frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=float),
                                                                     columns=[f"x{i}" for i in range(np.shape(X)[1])])
        y = np.asarray(y, dtype=float)
        if self.form == "log":
            if np.any(y <= 0):
                raise ModelingError("the log form needs a positive metric on every training run")
            y = np.log(y)
            frame = pd.DataFrame(signed_log1p(frame.to_numpy(dtype=float)), index=frame.index,
                                 columns=[str(c) for c in frame.columns])
        n = len(y)
        folds = min(self.cv, n)
        if n < 4 or folds < 2:
            raise ModelingError(f"{n} training runs are too few to fit and cross-validate; profile more inputs")
        excluded = set(self.exclude)
        columns = [str(c) for c in frame.columns if str(c) not in excluded]
        self.feature_names_in_ = np.asarray([str(c) for c in frame.columns], dtype=object)
        self.n_features_in_ = frame.shape[1]
        self.prep_: Preprocessed = preprocess(frame, columns, np.arange(n))
        if not self.prep_.columns:
            raise ModelingError("every feature is constant over the training runs; vary the inputs more")
        w = self.sample_weights(y)
        groups = None if groups is None else np.asarray(groups)
        splits = _cv_splits(n, groups, folds, self.random_state)
        Z = self.prep_.scale(frame[self.prep_.columns].to_numpy(dtype=float))
        candidates = self._sure_screen(Z, y, w)
        survivors = self._linear_screen(Z[:, candidates], y, w, splits)
        self.screened_ = [self.prep_.columns[candidates[i]] for i in survivors]
        Zs = Z[:, [candidates[i] for i in survivors]]
        self.poly_ = PolynomialFeatures(degree=self.degree, include_bias=False).fit(Zs)
        A = self.poly_.transform(Zs)
        if self.method == "lasso":
            coef, intercept = self._lasso_terms(A, y, w, splits)
        else:
            coef, intercept = self._foba_terms(A, y, w, splits)
        keep = np.flatnonzero(coef)
        self.powers_ = self.poly_.powers_[keep]
        self.coef_ = coef[keep]
        self.intercept_ = float(intercept)
        self.term_features_ = [
            [(self.screened_[j], int(p)) for j, p in enumerate(row) if p] for row in self.powers_
        ]
        return self

    def sample_weights(self, y: np.ndarray) -> np.ndarray:
        """Per-sample weights of the least-squares fit of ``y`` (relative error: 1/y², normalised)."""
        if self.form == "log":  # a residual of log(y) is already a relative error
            return np.ones_like(y)
        if self.weighting == "relative" and np.all(y > 0):
            w = 1.0 / y**2
            return w / w.mean()
        if self.weighting not in ("relative", "none"):
            raise ValueError("weighting must be 'relative' or 'none'")
        return np.ones_like(y)

    def _sure_screen(self, Z: np.ndarray, y: np.ndarray, w: np.ndarray) -> list[int]:
        # Sure independence screening sized to the data: with few training runs, hundreds of candidates
        # let the cross-validated LASSO fit noise (minisearch, 16 runs: CV error 12 % at 400 candidates,
        # 7 % at 40), so at most max(40, 2 x runs) of them, and never more than max_candidates.
        limit = min(self.max_candidates, max(40, 2 * Z.shape[0]))
        if Z.shape[1] <= limit:
            return list(range(Z.shape[1]))
        mz = np.average(Z, axis=0, weights=w)
        my = np.average(y, weights=w)
        cov = ((Z - mz) * (w * (y - my))[:, None]).sum(axis=0)
        sd = np.sqrt(((Z - mz) ** 2 * w[:, None]).sum(axis=0))
        score = np.abs(cov) / np.where(sd > 0, sd, np.inf)
        return sorted(np.argsort(-score, kind="stable")[:limit].tolist())

    def _lasso_cv(self, A: np.ndarray, y: np.ndarray, w: np.ndarray, splits, rule: str):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LassoCV(alphas=60, cv=splits, max_iter=5000, tol=1e-5, random_state=self.random_state)
            model.fit(A, y, sample_weight=w)
        best, chosen = _one_se(model.mse_path_)
        index = chosen if rule == "1se" else best
        return model, float(model.alphas_[index])

    def _penalty_scales(self, A: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """How much each column of ``A`` is scaled before a LASSO (ones under ``penalty="plain"``)."""
        return _adaptive_scales(A, y, w) if self.penalty == "adaptive" else np.ones(A.shape[1])

    def _linear_screen(self, Z: np.ndarray, y: np.ndarray, w: np.ndarray, splits) -> list[int]:
        Z = Z * self._penalty_scales(Z, y, w)[None, :]
        model, alpha = self._lasso_cv(Z, y, w, splits, rule=self.lambda_rule)
        sw = np.sqrt(w)
        Zc = (Z - np.average(Z, axis=0, weights=w)) * sw[:, None]
        yc = (y - np.average(y, weights=w)) * sw
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            alphas, coefs, _ = lasso_path(Zc, yc, alphas=model.alphas_, max_iter=5000, tol=1e-5)
        entered = np.where(np.abs(coefs) > 0, np.arange(len(alphas))[None, :], len(alphas))
        first = entered.min(axis=1)  # path index where each feature enters (alphas decrease)
        active = np.flatnonzero(first <= int(np.argmin(np.abs(alphas - alpha))))
        if len(active) == 0:
            active = np.flatnonzero(first < len(alphas))
        if len(active) == 0:  # nothing enters at all: the single feature that enters first does
            active = np.array([int(np.argmin(first))])
        ranked = sorted(active.tolist(), key=lambda i: (first[i], -abs(coefs[i, -1])))
        return sorted(ranked[: self.max_screen])

    def _glmnet_terms(self, A: np.ndarray, y: np.ndarray, w: np.ndarray, splits) -> tuple[np.ndarray, float]:
        """The final LASSO stage with glmnet's Fortran pathwise solver (python-glmnet), lambda by its own
        cross-validation over the same folds (groups), the 1se rule as ``cut_point=1``."""
        try:
            from glmnet import ElasticNet
        except ImportError:
            raise ModelingError("solver 'glmnet' needs python-glmnet: pip install 'mantispy[glmnet]'") from None
        groups = np.zeros(len(y), dtype=int)
        for fold, (_, test) in enumerate(splits):
            groups[test] = fold
        # Folds scored by squared error, as scikit-learn's LassoCV does: glmnet's default (R^2) is undefined on
        # a fold of one training input, and with every score NaN glmnet's own lambda choice raised IndexError.
        net = ElasticNet(alpha=1.0, n_lambda=60, standardize=False, n_splits=len(splits), scoring="mean_squared_error",
                         cut_point=1.0 if self.lambda_rule == "1se" else 0.0, random_state=self.random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            net.fit(A, y, sample_weight=w, groups=groups)
        self.alpha_ = float(net.lambda_best_[0] if np.ndim(net.lambda_best_) else net.lambda_best_)
        self.lasso_alphas_ = np.asarray(net.lambda_path_, dtype=float)
        return np.asarray(net.coef_, dtype=float).copy(), float(net.intercept_)

    def _lasso_terms(self, A: np.ndarray, y: np.ndarray, w: np.ndarray, splits) -> tuple[np.ndarray, float]:
        self.term_scales_ = self._penalty_scales(A, y, w)
        scaled = A * self.term_scales_[None, :]
        if self.solver == "glmnet":
            coef, intercept = self._glmnet_terms(scaled, y, w, splits)
        else:
            model, alpha = self._lasso_cv(scaled, y, w, splits, rule=self.lambda_rule)
            self.alpha_ = alpha
            self.lasso_alphas_ = model.alphas_
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                lasso = Lasso(alpha=alpha, max_iter=20000, tol=1e-6).fit(scaled, y, sample_weight=w)
            coef, intercept = lasso.coef_.copy(), float(lasso.intercept_)
        coef = coef * self.term_scales_  # back to the unscaled terms' coefficients
        support = np.flatnonzero(coef)
        if self.refit and len(support):
            refit, intercept = _weighted_lstsq(A[:, support], y, w)
            coef = np.zeros_like(coef)
            coef[support] = refit
            coef[support[refit == 0]] = 1e-300  # keep the support even if a refit coefficient is exactly 0
        return coef, intercept

    def _foba_terms(self, A: np.ndarray, y: np.ndarray, w: np.ndarray, splits) -> tuple[np.ndarray, float]:
        from .foba import foba_path

        self.term_scales_ = np.ones(A.shape[1])  # greedy selection penalises no term
        limit = min(self.max_terms, A.shape[1])
        fold_errors = []
        for train, test in splits:
            path = foba_path(A[train], y[train], w[train], limit)
            errors = []
            for support in path:
                coef, intercept = _weighted_lstsq(A[train][:, support], y[train], w[train])
                pred = A[test][:, support] @ coef + intercept
                errors.append(float(np.average((pred - y[test]) ** 2, weights=w[test])))
            fold_errors.append(errors)
        steps = min(len(e) for e in fold_errors)
        mse = np.array([e[:steps] for e in fold_errors]).T  # rows: path steps (simplest first)
        best, chosen = _one_se(mse)
        index = chosen if self.lambda_rule == "1se" else best
        path = foba_path(A, y, w, limit)
        support = path[min(index, len(path) - 1)]
        self.foba_steps_ = len(path)
        coef_s, intercept = _weighted_lstsq(A[:, support], y, w)
        coef = np.zeros(A.shape[1])
        coef[support] = np.where(coef_s == 0, 1e-300, coef_s)
        return coef, intercept

    # ------------------------------------------------------------------ predict
    def _scaled(self, X) -> np.ndarray:
        """The screened features of raw X on the training scale (rows x screened features)."""
        import pandas as pd

        frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=float),
                                                                     columns=list(self.feature_names_in_))
        index = {c: i for i, c in enumerate(self.prep_.columns)}
        cols = [index[c] for c in self.screened_]
        raw = np.column_stack([
            frame[c].to_numpy(dtype=float) if c in frame.columns else np.zeros(len(frame)) for c in self.screened_
        ]) if self.screened_ else np.zeros((len(frame), 0))
        if self.form == "log":
            raw = signed_log1p(raw)
        return (raw - self.prep_.minimum[cols]) / (self.prep_.maximum[cols] - self.prep_.minimum[cols])

    def term_matrix(self, X) -> np.ndarray:
        """Values of the model's terms for raw features X (rows x terms)."""
        Z = self._scaled(X)
        return np.prod(Z[:, None, :] ** self.powers_[None, :, :], axis=2) if len(self.powers_) else np.zeros((len(Z), 0))

    def design(self, X) -> np.ndarray:
        """Every candidate term of the expansion (not only the selected ones) for raw features X."""
        return self.poly_.transform(self._scaled(X))

    def penalised_design(self, X) -> np.ndarray:
        """:meth:`design` as the final LASSO stage saw it: each term scaled by its adaptive penalty
        (``lasso_alphas_`` and ``alpha_`` are on this scale)."""
        return self.design(X) * self.term_scales_[None, :]

    def target(self, y) -> np.ndarray:
        """The metric as the final stage regresses it: log(y) in the log form, y otherwise."""
        y = np.asarray(y, dtype=float)
        return np.log(y) if self.form == "log" else y

    def untarget(self, values) -> np.ndarray:
        """Inverse of :meth:`target`."""
        values = np.asarray(values, dtype=float)
        return np.exp(np.minimum(values, 700.0)) if self.form == "log" else values

    def predict(self, X) -> np.ndarray:
        """Predicted metric for raw features X."""
        return self.untarget(self.term_matrix(X) @ self.coef_ + self.intercept_)
