"""Forward-backward greedy selection (FoBa; T. Zhang, "Adaptive forward-backward greedy algorithm for
learning sparse representations", 2011), as SPORE-FoBa uses it over polynomial terms.

Each iteration adds the term that most reduces the weighted squared error of the least-squares fit,
then removes terms while the loss a removal costs is below ``nu`` times the gain of that last addition.
The support after every iteration is returned, simplest first, so cross-validation can pick the size.
"""

from __future__ import annotations

import numpy as np


def foba_path(A: np.ndarray, y: np.ndarray, w: np.ndarray, max_terms: int, nu: float = 0.5) -> list[list[int]]:
    """Supports after each forward(+backward) iteration, for terms A (rows x terms), target y, weights w."""
    sw = np.sqrt(w)
    Ac = (A - np.average(A, axis=0, weights=w)) * sw[:, None]
    yc = (y - np.average(y, weights=w)) * sw
    norms = np.linalg.norm(Ac, axis=0)
    usable = norms > 1e-12 * max(float(norms.max(initial=0.0)), 1e-300)
    total = float(yc @ yc)
    support: list[int] = []
    path: list[list[int]] = []
    for _ in range(2 * max_terms + 1):
        if len(support) >= max_terms:
            break
        gain, best = _best_addition(Ac, yc, support, usable)
        if best is None or gain <= 1e-12 * max(total, 1e-300):
            break
        support.append(best)
        while len(support) > 1:
            cost, worst = _cheapest_removal(Ac, yc, support)
            if cost >= nu * gain:
                break
            support.remove(worst)
        path.append(sorted(support))
    return path or [[]]


def _best_addition(Ac: np.ndarray, yc: np.ndarray, support: list[int], usable: np.ndarray) -> tuple[float, int | None]:
    if support:
        Q, _ = np.linalg.qr(Ac[:, support])
        residual = yc - Q @ (Q.T @ yc)
        orth = Ac - Q @ (Q.T @ Ac)
    else:
        residual, orth = yc, Ac
    denom = (orth**2).sum(axis=0)
    ok = usable & (denom > 1e-12 * np.maximum((Ac**2).sum(axis=0), 1e-300))
    ok[support] = False
    if not ok.any():
        return 0.0, None
    gains = np.where(ok, (orth.T @ residual) ** 2 / np.where(ok, denom, 1.0), -np.inf)
    best = int(np.argmax(gains))
    return float(gains[best]), best


def _cheapest_removal(Ac: np.ndarray, yc: np.ndarray, support: list[int]) -> tuple[float, int]:
    X = Ac[:, support]
    gram = X.T @ X
    inverse = np.linalg.pinv(gram)
    beta = inverse @ (X.T @ yc)
    costs = beta**2 / np.maximum(np.diag(inverse), 1e-300)
    worst = int(np.argmin(costs))
    return float(costs[worst]), support[worst]
