#!/usr/bin/env python3
"""Tests scripts/make-budgets --device on a synthetic device record: a budget for the device's
backend for each metric a case broke, with the margins and a source naming the device and what ran;
CPU cases and passing cases write nothing; a breach of another metric is refused."""
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-budgets")
DEVICE = {"name": "NVIDIA H200", "compute_capability": "9.0"}


def case(op, policy, backend, breaches, cuda=None, normwise=1e-6, fraction=0.02):
    return {"op": op, "policy": policy, "backend": backend, "shape": "256x256x256",
            "dist": "normal", "seed": 1, "normwise_rel_error": normwise,
            "fraction_correctly_rounded": fraction, "breaches": breaches,
            "device": DEVICE if backend == "cuda" else None, "cuda": cuda}


def run(cases):
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "device.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"schema": "ampbench.audit/1", "cases": cases}, f)
        return subprocess.run([sys.executable, SCRIPT, "--device", path], capture_output=True,
                              text=True, check=False)


class MakeDeviceBudgets(unittest.TestCase):
    def test_each_broken_metric_gets_a_budget_of_its_backend(self):
        gemm = {"library": "cuBLASLt", "compute_type": "CUBLAS_COMPUTE_32F_FAST_TF32",
                "algorithm": {"split_k": 1}}
        conv = {"library": "cuDNN", "compute_type": "CUDNN_DATA_FLOAT",
                "algorithm": {"name": "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED",
                              "math": "CUDNN_FMA_MATH"}}
        result = run([
            case("gemm", "tf32", "cpu", ["gemm tf32: normwise_rel_error 1 > 0.5 (...)"]),
            case("gemm", "tf32", "cuda", ["gemm tf32: normwise_rel_error 1e-06 > 5e-07 (...)",
                                          "gemm tf32: fraction_correctly_rounded 0.02 < 0.05"],
                 gemm),
            case("bmm", "tf32", "cuda", [], gemm),
            case("conv2d_backward_filter", "fp32", "cuda",
                 ["conv2d_backward_filter fp32: normwise_rel_error 1e-06 > 5e-07 (...)"], conv),
        ])
        self.assertEqual(result.returncode, 0, result.stderr)
        budgets = tomllib.loads(result.stdout)["budget"]
        self.assertEqual([(b["op"], b["metric"]) for b in budgets],
                         [("gemm", "normwise_rel_error"), ("gemm", "fraction_correctly_rounded"),
                          ("conv2d_backward_filter", "normwise_rel_error")])
        self.assertTrue(all(b["backend"] == "cuda" for b in budgets))
        self.assertEqual([b["limit"] for b in budgets], [2e-6, 0.01, 2e-6])
        self.assertIn("on cuda (NVIDIA H200, sm 9.0; CUBLAS_COMPUTE_32F_FAST_TF32)",
                      budgets[0]["source"])
        self.assertIn("margin 1/2", budgets[1]["source"])
        self.assertIn("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, CUDNN_FMA_MATH",
                      budgets[2]["source"])

    def test_a_breach_of_another_metric_is_refused(self):
        result = run([case("dot", "fp16", "cuda", ["dot fp16: bound_ratio 2 > 1 (...)"])])
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("a breach this script does not budget", result.stderr)


if __name__ == "__main__":
    unittest.main()
