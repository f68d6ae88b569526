"""Whether two sets of numbers over seeds differ beyond chance: the paired and Welch t-tests the suite uses.

`compare` (two results of one experiment) and `table --baseline` (cells of one
table against a baseline cell) both test with these, at one level (`ALPHA`) and
from one minimum of seeds (`MIN_SEEDS_FOR_TEST`: pairs, or seeds a side). SciPy
is imported only when a test runs.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

ALPHA = 0.05  # two-sided level of the tests over seeds
PAIRED, WELCH = "paired t", "Welch t"
# From 3 seeds (pairs, or a side): with 2, one degree of freedom makes the t interval too wide to mean anything.
MIN_SEEDS_FOR_TEST = 3


def paired_test(differences: np.ndarray) -> tuple[float, float, float]:
    """Two-sided paired t-test of mean difference 0, and the 95% t interval of the mean difference.

    Identical differences on every seed (no spread at all) are either exactly zero
    (p = 1) or a systematic shift (p = 0); the t statistic is undefined there.
    """
    from scipy import stats

    n = len(differences)
    mean = float(differences.mean())
    spread = float(differences.std(ddof=1))
    if spread == 0 or not math.isfinite(spread):
        return (1.0 if mean == 0 else 0.0), mean, mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p_value = float(stats.ttest_1samp(differences, 0.0).pvalue)
    half_width = float(stats.t.ppf(1 - ALPHA / 2, n - 1)) * spread / math.sqrt(n)
    return p_value, mean - half_width, mean + half_width


def welch_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Two-sided Welch's t-test of equal means (variances may differ), and the 95% interval of mean(B) − mean(A).

    As in the paired test, no spread on either side makes the difference either
    exactly zero (p = 1) or a systematic shift (p = 0).
    """
    from scipy import stats

    difference = float(b.mean() - a.mean())
    share_a, share_b = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)  # each mean's squared standard error
    error_squared = float(share_a + share_b)
    if error_squared == 0 or not math.isfinite(error_squared):
        return (1.0 if difference == 0 else 0.0), difference, difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p_value = float(stats.ttest_ind(b, a, equal_var=False).pvalue)
    # Welch–Satterthwaite degrees of freedom, as ttest_ind uses.
    freedom = error_squared**2 / (share_a**2 / (len(a) - 1) + share_b**2 / (len(b) - 1))
    half_width = float(stats.t.ppf(1 - ALPHA / 2, freedom)) * math.sqrt(error_squared)
    return p_value, difference - half_width, difference + half_width
