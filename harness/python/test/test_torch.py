"""ampbench.torch: a recorded training step of a small MLP under CPU autocast (bfloat16), judged op
by op against the correctly rounded references, and its record accepted by the command line."""

import json
import os
import subprocess

import pytest

np = pytest.importorskip("numpy", reason="NumPy is not installed (Debian: python3-numpy)")
torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
import ampbench  # noqa: E402
import ampbench.torch  # noqa: E402

CLI = os.environ.get("AMPBENCH_CLI", "ampbench")


def recorded_step():
    torch.manual_seed(0)
    # The layer norm first: PyTorch 1.13's CPU layer norm refuses bf16 inputs with fp32 weights.
    model = torch.nn.Sequential(torch.nn.LayerNorm(16), torch.nn.Linear(16, 32), torch.nn.GELU(),
                                torch.nn.Linear(32, 10))
    x, y = torch.randn(8, 16), torch.randint(0, 10, (8,))
    with ampbench.torch.record() as rec:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
        loss.backward()
    return rec


def test_a_recorded_autocast_step_is_judged():
    rec = recorded_step()
    judged = rec.judge()
    ops = {(j["op"], j["format"]) for j in judged}
    assert {("gemm", "bf16"), ("layer_norm", "fp32"), ("log_softmax", "fp32")} <= ops, ops
    for j in judged:
        assert j["mismatches"]["nan_vs_number"] == 0 and j["max_ulp"] is not None, j
        if j["aten"] == "aten::addmm":  # the forward GEMMs: fp32 accumulation, one rounding
            assert j["format"] == "bf16" and j["max_ulp"] <= 1, j
    # What it cannot judge is listed with the reason (autocast's casts, the loss's NLL, ...).
    assert rec.not_judged and all(n["reason"] for n in rec.not_judged)
    assert any(n["aten"] == "aten::_to_copy" for n in rec.not_judged)


def test_a_recorded_step_is_a_record_report_and_compare_take(tmp_path):
    document = ampbench.result(recorded_step().records(), suite="torch-mlp")
    path = tmp_path / "result.json"
    path.write_text(json.dumps(document))
    for args in (["report", str(path), "--md", str(tmp_path / "report.md")],
                 ["compare", str(path), str(path)]):
        done = subprocess.run([CLI, *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
