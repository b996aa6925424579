"""The element-wise steps of the numpy encoder (``llm.local_embedding``), compiled by numba.

numpy runs each element-wise operation as its own pass over memory: GELU with a bias took ~18
passes, a residual + LayerNorm ~8, softmax ~5, a third of the encoder's time beside the matrix
products. Here each is one loop over a row that stays in the L1 cache, vectorised by LLVM
(``fastmath``; ``error_model="numpy"`` drops the zero-division check that stops vectorisation).
``nogil``: the encoder's threads run these side by side. Compiled once per machine and kept in
numba's on-disk cache.

- ``bias_gelu``: BERT's exact (erf) GELU of ``x + bias``; erf is the rational approximation of
  Eigen and TensorFlow (clamped to +-4, where float32 erf is +-1): max abs error 1.1e-6.
- ``add_norm`` / ``layer_norm``: LayerNorm of ``x + bias + residual`` / of ``x``.
- ``softmax_rows``: softmax over the last axis; exp from a range reduction (x = n ln2 + r),
  a degree-6 polynomial of r and 2**n written into the float's exponent bits (rel. error 2e-7).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_F = np.float32
# erf(z) = z * P(z^2) / Q(z^2) on [-4, 4] (Eigen's generic_fast_erf_float)
A13, A11, A9, A7, A5, A3, A1 = map(_F, (
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
    -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02,
))  # fmt: skip
B8, B6, B4, B2, B0 = map(_F, (
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
    -1.42647390514189e-02,
))  # fmt: skip
RSQRT2 = _F(1.0 / np.sqrt(2.0))
# exp(x) = 2**n * exp(r), r = x - n ln2 (ln2 split in two for an exact product)
LOG2E, LN2_HI, LN2_LO = _F(1.4426950408889634), _F(0.693359375), _F(-2.12194440e-4)
E2, E3, E4, E5, E6 = _F(1 / 2), _F(1 / 6), _F(1 / 24), _F(1 / 120), _F(1 / 720)
EXP_FLOOR = _F(-87.0)  # exp(-87) is still a normal float32; below, the weight is ~0 anyway


@intrinsic
def _bits_as_float32(typingctx: Any, value: Any) -> Any:
    """The float32 whose bit pattern is the low 32 bits of the int64 ``value`` (vectorises,
    unlike ldexp)."""
    if value != types.int64:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(builder.trunc(args[0], ir.IntType(32)), ir.FloatType())

    return types.float32(value), codegen


def _compiled(function: Any) -> Any:
    """Compiled, nogil, vectorised; cached on disk where numba finds a writable place (beside
    this file or in the user's cache), else compiled in each process (a second or two)."""
    try:
        return njit(nogil=True, fastmath=True, cache=True, error_model="numpy")(function)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(nogil=True, fastmath=True, cache=False, error_model="numpy")(function)


@_compiled
def _exp_nonpositive(x: np.float32) -> np.float32:
    x = EXP_FLOOR if x < EXP_FLOOR else x
    n = np.floor(x * LOG2E + _F(0.5))
    r = x - n * LN2_HI - n * LN2_LO
    p = r * E6 + E5
    p = p * r + E4
    p = p * r + E3
    p = p * r + E2
    p = p * r + _F(1.0)
    p = p * r + _F(1.0)
    return p * _bits_as_float32((np.int64(n) + 127) << 23)  # type: ignore[call-arg]


@_compiled
def bias_gelu(x: np.ndarray, bias: np.ndarray) -> None:
    """x <- gelu(x + bias), in place, for a 2-D C-contiguous float32 ``x``."""
    for i in range(x.shape[0]):
        row = x[i]
        for j in range(x.shape[1]):
            v = row[j] + bias[j]
            z = v * RSQRT2
            z = _F(4.0) if z > _F(4.0) else z
            z = _F(-4.0) if z < _F(-4.0) else z
            z2 = z * z
            p = z2 * A13 + A11
            p = z2 * p + A9
            p = z2 * p + A7
            p = z2 * p + A5
            p = z2 * p + A3
            p = z2 * p + A1
            q = z2 * B8 + B6
            q = z2 * q + B4
            q = z2 * q + B2
            q = z2 * q + B0
            row[j] = _F(0.5) * v * (_F(1.0) + z * p / q)


@_compiled
def _normalise_row(row: np.ndarray, weight: np.ndarray, shift: np.ndarray, eps: float) -> None:
    n = row.shape[0]
    total = _F(0.0)
    for j in range(n):
        total += row[j]
    mean = total / _F(n)
    squares = _F(0.0)
    for j in range(n):
        d = row[j] - mean
        squares += d * d
    scale = _F(1.0) / np.sqrt(squares / _F(n) + _F(eps))
    for j in range(n):
        row[j] = (row[j] - mean) * scale * weight[j] + shift[j]


@_compiled
def layer_norm(x: np.ndarray, weight: np.ndarray, shift: np.ndarray, eps: float) -> None:
    """x <- LayerNorm(x) over its last axis, in place (2-D, C-contiguous, float32)."""
    for i in range(x.shape[0]):
        _normalise_row(x[i], weight, shift, eps)


@_compiled
def add_norm(
    x: np.ndarray,
    bias: np.ndarray,
    residual: np.ndarray,
    weight: np.ndarray,
    shift: np.ndarray,
    eps: float,
) -> None:
    """x <- LayerNorm(x + bias + residual), in place (BERT's sub-layer output)."""
    for i in range(x.shape[0]):
        row, res = x[i], residual[i]
        for j in range(x.shape[1]):
            row[j] += bias[j] + res[j]
        _normalise_row(row, weight, shift, eps)


@_compiled
def softmax_rows(scores: np.ndarray) -> None:
    """Softmax over the last axis of a 2-D C-contiguous float32 array, in place. The
    exponentials run as one loop over the whole array: per row, the vector loop's scalar tail
    would be a tenth of a row of exps."""
    rows, width = scores.shape
    lanes = np.empty(16, dtype=np.float32)  # a row's maximum in 16 lanes: a plain loop's
    whole = width - width % 16  # reduction does not vectorise
    for i in range(rows):
        row = scores[i]
        lanes[:] = row[0]
        for start in range(0, whole, 16):
            for lane in range(16):
                v = row[start + lane]
                lanes[lane] = v if v > lanes[lane] else lanes[lane]
        top = row[0]
        for lane in range(16):
            top = lanes[lane] if lanes[lane] > top else top
        for j in range(whole, width):
            top = row[j] if row[j] > top else top
        for j in range(width):
            row[j] -= top
    flat = scores.reshape(-1)
    for j in range(flat.shape[0]):
        flat[j] = _exp_nonpositive(flat[j])
    for i in range(rows):
        row = scores[i]
        total = _F(0.0)
        for j in range(width):
            total += row[j]
        inv = _F(1.0) / total
        for j in range(width):
            row[j] *= inv
