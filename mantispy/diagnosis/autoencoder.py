"""The anomaly detector AutoPerf trains on a good version: an autoencoder of a function's counter vectors
(scikit-learn's MLPRegressor fitted to reproduce its input through a narrow hidden layer), whose
reconstruction error is small for vectors like the training ones and large for the others.

A sample is one run of one function: ``log1p`` of its number of calls and of its mean per call of each
counter. Features are centred on the training mean and divided by their spread, but never by less than
``floor`` (in log units, 0.05 is about 5 %) nor by less than a counting noise: one event more than the
mean plus a Poisson deviation of the total (``(sqrt(total) + 1) / calls`` per call). A counter that never
moved in training (a function that never faults, never switched) must not turn one fault or one
preemption into an anomaly; for CPU time in nanoseconds the term is negligible. The threshold is AutoPerf's, mean +
``k`` standard deviations of the training error, with the training errors taken out of fold (each sample
scored by a model that did not see it), so that a model which memorised its few samples does not set a
threshold every new run exceeds.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

FLOOR = 0.05
"""The smallest spread a feature is divided by (log units)."""


def sample_vector(calls: int, totals: dict[str, float], events: list[str]) -> list[float]:
    """A function's features in one run: log1p(calls), then log1p(mean per call) of each event."""
    per_call = max(calls, 1)
    return [math.log1p(max(calls, 0)), *(math.log1p(max(totals.get(e, 0.0), 0.0) / per_call) for e in events)]


def counting_noise(calls: int, totals: dict[str, float], events: list[str], measured: int | None = None) -> list[float]:
    """Each feature's counting noise in one run, in the features' log units: how far one event more plus
    a Poisson deviation of the measured total moves the value (calls: one call more). ``measured``: how many
    calls had their counters read (default: all); the per-call mean of fewer calls is noisier."""
    per_call = max(calls, 1)
    read = max(min(measured if measured is not None else calls, calls), 1)
    noise = [math.log1p(max(calls, 0) + 1) - math.log1p(max(calls, 0))]
    for event in events:
        total = max(totals.get(event, 0.0), 0.0)
        mean = total / per_call
        noise.append(math.log1p(mean + (math.sqrt(mean * read) + 1) / read) - math.log1p(mean))
    return noise


class CounterAutoencoder:
    """An autoencoder anomaly detector with the estimator contract (``fit``, ``score_samples``).

    ``k``: the threshold's number of standard deviations; ``hidden``: the bottleneck's width (default half
    the features, at least one); ``folds``: for the out-of-fold training errors.
    """

    def __init__(self, k: float = 2.0, hidden: int | None = None, floor: float = FLOOR, folds: int = 5,
                 random_state: int = 0) -> None:
        self.k, self.hidden, self.floor, self.folds, self.random_state = k, hidden, floor, folds, random_state

    def _network(self, width: int):
        from sklearn.neural_network import MLPRegressor

        return MLPRegressor(hidden_layer_sizes=(self.hidden or max(1, width // 2),), activation="tanh",
                            solver="lbfgs", alpha=1e-3, max_iter=2000, random_state=self.random_state)

    def _fit_network(self, z: np.ndarray):
        network = self._network(z.shape[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lbfgs's iteration limit on tiny data: the fit is still usable
            network.fit(z, z)
        return network

    def fit(self, samples, noise=None) -> CounterAutoencoder:
        """Learn the training vectors (rows) and the threshold; ``noise`` (rows like ``samples``, optional):
        each sample's counting noise (:func:`counting_noise`), whose median also bounds a feature's scale."""
        started = time.process_time()
        x = np.asarray(samples, dtype=float)
        if x.ndim != 2 or len(x) < 2:
            raise ValueError("an autoencoder needs at least two training samples")
        self.center_ = x.mean(axis=0)
        self.scale_ = np.maximum(x.std(axis=0), self.floor)
        if noise is not None:
            self.scale_ = np.maximum(self.scale_, np.median(np.asarray(noise, dtype=float), axis=0))
        z = (x - self.center_) / self.scale_
        self.network_ = self._fit_network(z)
        self.training_errors_ = self._out_of_fold_errors(z)
        self.threshold_ = float(self.training_errors_.mean() + self.k * self.training_errors_.std())
        self.fit_seconds_ = time.process_time() - started
        return self

    def _out_of_fold_errors(self, z: np.ndarray) -> np.ndarray:
        folds = min(self.folds, len(z))
        if folds < 2:
            return self._errors(self.network_, z).mean(axis=1)
        order = np.random.default_rng(self.random_state).permutation(len(z))
        errors = np.empty(len(z))
        for fold in range(folds):
            held = order[fold::folds]
            kept = np.setdiff1d(order, held)
            if len(kept) < 2:
                errors[held] = self._errors(self.network_, z[held]).mean(axis=1)
                continue
            errors[held] = self._errors(self._fit_network(z[kept]), z[held]).mean(axis=1)
        return errors

    @staticmethod
    def _errors(network, z: np.ndarray) -> np.ndarray:
        return (z - network.predict(z).reshape(z.shape)) ** 2

    def feature_errors(self, samples) -> np.ndarray:
        """Squared reconstruction error of each feature of each sample (standardised units)."""
        z = (np.asarray(samples, dtype=float) - self.center_) / self.scale_
        return self._errors(self.network_, z)

    def deviations(self, samples) -> np.ndarray:
        """Each feature's signed distance from its reconstruction (positive: more than the training
        vectors would have it)."""
        z = (np.asarray(samples, dtype=float) - self.center_) / self.scale_
        return z - self.network_.predict(z).reshape(z.shape)

    def score_samples(self, samples) -> np.ndarray:
        """Each sample's reconstruction error (mean over its features)."""
        return self.feature_errors(samples).mean(axis=1)
