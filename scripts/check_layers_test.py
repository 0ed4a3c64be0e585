#!/usr/bin/env python3
"""Tests scripts/check-layers on small trees: it passes a tree whose includes point down and fails,
naming the file, line and layers, on an upward include or a module without a layer."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-layers")


def check(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        run = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True,
                             check=False)
        return run.returncode, run.stdout


class CheckLayers(unittest.TestCase):
    def test_downward_and_same_module_includes_pass(self):
        code, out = check({
            "harness/ops/a.hpp":
                '#include "harness/numeric/format.hpp"\n#include "harness/ops/b.hpp"\n',
            "harness/ops/b.hpp": "",
            "harness/numeric/format.hpp": "",
        })
        self.assertEqual(code, 0, out)

    def test_an_upward_include_fails_naming_file_line_and_layers(self):
        code, out = check({
            "harness/ops/a.hpp": "// x\n#include \"harness/audit/audit.hpp\"\n",
            "harness/audit/audit.hpp": "",
        })
        self.assertEqual(code, 1)
        self.assertIn("harness/ops/a.hpp:2: includes 'harness/audit/audit.hpp'", out)
        self.assertIn("ops (layer 3) may not depend on audit", out)

    def test_a_backend_including_the_trainer_fails(self):
        code, out = check({"harness/backends/cuda/x.hpp": '#include "harness/train/ops.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertIn("backends/cuda", out)

    def test_tests_are_not_checked(self):
        code, out = check({"harness/ops/test/t.cpp": '#include "harness/cli/options.hpp"\n'})
        self.assertEqual(code, 0, out)

    def test_a_module_without_a_layer_fails(self):
        code, out = check({"harness/newthing/a.hpp": ""})
        self.assertEqual(code, 1)
        self.assertIn("module 'newthing' has no layer", out)


if __name__ == "__main__":
    unittest.main()
