"""ampbench for Python: formats and rounding of NumPy arrays, exact dot products and sums, the op
catalog's correctly rounded references, the audit (of ampbench's emulation or of a Python
callable), the error metrics and the loss scaler, computed by the same C++ code as the
``ampbench`` command line (docs/python.md)."""

from ._core import (EVENTS, LossScaler, audit, audit_kernel, decode, dot, eval, exact_sum,
                    format_info, formats, metrics, ops, policies, policy, read_result, reference,
                    result, round, ulp_distance)

__all__ = ["EVENTS", "LossScaler", "audit", "audit_kernel", "decode", "dot", "eval", "exact_sum",
           "format_info", "formats", "metrics", "ops", "policies", "policy", "read_result",
           "reference", "result", "round", "ulp_distance"]
