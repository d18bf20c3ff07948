"""Reference for csrc/slocore/core/fit.h: least squares on relative error
(HFX appendix A) by the normal equations of the row-scaled problem, in plain Python."""

from __future__ import annotations

import math


def fit_relative_least_squares(X: list[list[float]], y: list[float]) -> tuple[list[float], float, float]:
    k = len(X[0])
    A = [[x / yi for x in row] for row, yi in zip(X, y)]
    # Normal equations (A^T A) theta = A^T 1, solved by Gauss-Jordan with partial pivoting.
    M = [[sum(r[i] * r[j] for r in A) for j in range(k)] + [sum(r[i] for r in A)] for i in range(k)]
    for col in range(k):
        piv = max(range(col, k), key=lambda r: abs(M[r][col]))
        if abs(M[piv][col]) < 1e-300:
            raise ValueError("X: features are linearly dependent")
        M[col], M[piv] = M[piv], M[col]
        for r in range(k):
            if r != col:
                f = M[r][col] / M[col][col]
                M[r] = [a - f * b for a, b in zip(M[r], M[col])]
    theta = [M[i][k] / M[i][i] for i in range(k)]
    rel = [(sum(x * t for x, t in zip(row, theta)) - yi) / yi for row, yi in zip(X, y)]
    return theta, math.sqrt(sum(r * r for r in rel) / len(rel)), max(abs(r) for r in rel)
