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
    x, y = torch.randn(8, 16, requires_grad=True), torch.randint(0, 10, (8,))
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
    assert {("linear", "bf16"), ("gemm", "bf16"), ("layer_norm", "fp32"), ("log_softmax", "fp32"),
            ("mean", "fp32")} <= ops, ops
    for j in judged:
        assert j["mismatches"]["nan_vs_number"] == 0 and j["max_ulp"] is not None, j
        if j["aten"] == "aten::addmm":  # the forward GEMMs: fp32 accumulation, one rounding
            assert j["format"] == "bf16" and j["max_ulp"] <= 1, j
    # What it cannot judge is listed with the reason (the views, the loss's NLL backward, ...).
    assert rec.not_judged and all(n["reason"] for n in rec.not_judged)
    assert any(n["aten"] == "aten::nll_loss_backward" for n in rec.not_judged)


def test_a_recorded_step_is_a_record_report_and_compare_take(tmp_path):
    document = recorded_step().result(suite="torch-mlp")
    assert all(r["status"] == "pass" for r in document["records"])
    path = tmp_path / "result.json"
    path.write_text(json.dumps(document))
    for args in (["report", str(path), "--md", str(tmp_path / "report.md")],
                 ["compare", str(path), str(path)]):
        done = subprocess.run([CLI, *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def test_ops_it_cannot_judge_are_listed_with_the_settings():
    rec = recorded_step()
    rec.judge()
    indices = sorted([j["index"] for j in rec.judge()] + [n["index"] for n in rec.not_judged])
    # Every op that ran is judged or listed: the indices count every captured op, none missing.
    assert set(indices) == set(range(max(indices) + 1))
    assert all(n["reason"] for n in rec.not_judged)
    s = rec.settings
    assert s["torch"] == torch.__version__ and s["devices"] == ["cpu"]
    assert s["allow_tf32"] == torch.backends.cuda.matmul.allow_tf32
    assert {"cpu": "torch.bfloat16"} in s["autocast_in_modules"]
    document = rec.result(suite="torch-mlp")
    assert document["environment"]["torch"]["torch"] == torch.__version__
    assert len(document["not_run"]) == len(rec.not_judged)


def test_catalog_ops_of_forward_and_backward_are_judged():
    rec = recorded_step()
    judged = rec.judge()
    ops = {j["op"] for j in judged}
    expected = {"linear", "gemm", "layer_norm", "layer_norm_backward", "layer_norm_backward_gamma",
                "layer_norm_backward_beta", "log_softmax", "log_softmax_backward", "gelu",
                "gelu_backward", "cast", "mean", "linear_backward_bias"}
    assert expected <= ops, expected - ops
    # Every captured op of the table was judged: none of them is among the ops not judged.
    assert not [n for n in rec.not_judged if n["aten"] in ampbench.torch.OPS], rec.not_judged
    for j in judged:
        assert j["mismatches"]["nan_vs_number"] == 0 and j["max_ulp"] is not None, j
        if j["op"] == "cast":  # a conversion is a correct rounding, or PyTorch is wrong
            assert j["max_ulp"] == 0, j


def test_module_paths_and_batch_norm_relu_softmax():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4), torch.nn.Softmax(dim=-1))
    with ampbench.torch.record(model) as rec:
        (model(torch.randn(32, 8)) * torch.randn(32, 4)).sum().backward()
    judged = rec.judge()
    by_op = {}
    for j in judged:
        by_op.setdefault(j["op"], set()).add(j["module"])
    for op in ("batch_norm", "relu", "softmax", "linear", "mul"):
        assert op in by_op, (op, by_op)
    assert by_op["batch_norm"] == {"1"} and by_op["relu"] == {"2"} and by_op["softmax"] == {"4"}
    for op in ("batch_norm_backward", "batch_norm_backward_gamma", "batch_norm_backward_beta",
               "relu_backward", "softmax_backward", "sum"):
        assert op in by_op, (op, by_op)
    # The backward's ops in the module of the forward op they are the gradient of.
    assert by_op["batch_norm_backward"] == {"1"} and by_op["relu_backward"] == {"2"}
    assert by_op["softmax_backward"] == {"4"} and by_op["linear_backward_bias"] == {"0", "3"}
    for j in judged:
        assert j["breaches"] == [], j


def test_large_outputs_are_judged_at_sampled_positions():
    a, b = torch.randn(64, 96), torch.randn(96, 80)
    with ampbench.torch.record(samples=500) as rec:
        a.bfloat16() @ b.bfloat16()
    [mm] = [j for j in rec.judge() if j["op"] == "gemm"]
    assert mm["outputs"] == 64 * 80 and mm["judged_positions"] == 500 and mm["count"] == 500
    with ampbench.torch.record(samples=0) as rec:
        a.bfloat16() @ b.bfloat16()
    [mm] = [j for j in rec.judge() if j["op"] == "gemm"]
    assert mm["judged_positions"] == 64 * 80


def test_arguments_the_catalog_cannot_take_are_listed():
    x = torch.randn(4, 6)
    with ampbench.torch.record() as rec:
        torch.softmax(x, dim=0)
        torch.nn.functional.layer_norm(x, (6,), eps=1e-3)
        x.sum(dim=1)
        x.argmax(dim=1)
        x.t()
        x.clone().add_(x, alpha=2)
        x.clone().mul_(x)
    assert [j["op"] for j in rec.judge() if j["aten"] == "aten::mul_"] == ["mul"]
    reasons = [n["reason"] for n in rec.not_judged]
    assert any("softmax over dim 0" in r for r in reasons), reasons
    assert any("eps other than 1e-5" in r for r in reasons), reasons
    assert any("sum over dims [1]" in r for r in reasons), reasons
    assert [n["aten"] for n in rec.not_judged if n["reason"] == "no floating-point output"] == \
        ["aten::argmax"]
    assert [n["aten"] for n in rec.not_judged if n["reason"].startswith("a view")] == ["aten::t"]
    assert [n["reason"] for n in rec.not_judged if n["aten"] == "aten::add_"] == \
        ["add with alpha other than 1"]


def test_budgets_fail_the_recorded_ops(tmp_path):
    # A budget nothing meets: every judged op breaks it, and the record's statuses say FAIL.
    budgets = tmp_path / "budgets.toml"
    budgets.write_text('[[budget]]\nop = "*"\npolicy = "*"\nmetric = "fraction_correctly_rounded"'
                       '\nlimit = 1.0\nsource = "test"\n')
    x = torch.randn(16, 300)
    with ampbench.torch.record(budgets=str(budgets)) as rec:
        torch.softmax(x, dim=-1)
    softmax = [r for r in rec.records() if r["op"] == "softmax"]
    assert softmax and any(r["status"] == "FAIL" for r in softmax)
    for r in softmax:
        assert (r["status"] == "FAIL") == (r["fraction_correctly_rounded"] < 1), r
        assert (r["status"] == "FAIL") == bool(r["breaches"]), r


def test_a_nan_where_the_reference_is_a_number_always_fails():
    exact = np.array([0.5, 1.0])
    assert ampbench.metrics(exact, exact, exact, "fp32", op="softmax")["breaches"] == []
    bad = ampbench.metrics(np.array([np.nan, 1.0]), exact, exact, "fp32", op="softmax")
    assert bad["mismatches"]["nan_vs_number"] == 1 and len(bad["breaches"]) == 1, bad


def test_a_textbook_softmax_fails_through_audit_kernel():
    def textbook(inputs):
        x = torch.from_numpy(inputs["x"]).float()
        e = torch.exp(x)
        return (e / e.sum(dim=1, keepdim=True)).double().numpy()

    def stable(inputs):
        return torch.softmax(torch.from_numpy(inputs["x"]).float(), dim=1).double().numpy()

    bad, good = (ampbench.audit_kernel("softmax", "fp32", f, shape="8x128",
                                       dist="uniform:a=-100,b=100") for f in (textbook, stable))
    assert bad["status"] == "FAIL" and bad["mismatches"]["nan_vs_number"] > 0, bad["mismatches"]
    assert good["status"] == "PASS" and good["mismatches"]["nan_vs_number"] == 0


def test_underflow_with_and_without_the_scale():
    scale = 2.0**10
    true = torch.tensor([2.0**-20, 2.0**-26, 3 * 2.0**-12, 1.0, 0.0, -2.0**-18])
    grads = [(true * scale).half(), (true * scale).float()]
    got = ampbench.torch.underflow(grads, scale)
    # Computed here by PyTorch's own conversions: the scaled values as they are, and unscaled
    # in each dtype, against the dtype's smallest normal.
    considered = torch.cat([g.float()[g != 0] for g in grads])
    unscaled = torch.cat([(g.double()[g != 0] / scale).to(g.dtype).abs().double() <
                          torch.finfo(g.dtype).tiny for g in grads])
    scaled = torch.cat([g.double()[g != 0].abs() < torch.finfo(g.dtype).tiny for g in grads])
    assert got["entries"] == considered.numel() == 10
    assert got["unscaled"] == unscaled.double().mean().item() > 0
    assert got["scaled"] == scaled.double().mean().item()
    assert got["scaled"] < got["unscaled"]
    # In fp16 whatever the dtype: the float32 gradients underflow there as the fp16 ones do.
    fp16 = ampbench.torch.underflow(grads[:1], scale)
    assert ampbench.torch.underflow(grads, scale, format="fp16") == {**fp16, "entries": 10}


def grad_scaler():
    """A GradScaler that runs here: CUDA's, or the CPU one of PyTorch 2.3 on."""
    if torch.cuda.is_available():
        return torch.cuda.amp.GradScaler(init_scale=2.0**16, growth_interval=2), "cuda"
    try:
        return torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=2), "cpu"
    except (AttributeError, TypeError):
        pytest.skip("no GradScaler runs here: no CUDA device, and PyTorch "
                    f"{torch.__version__} has no CPU GradScaler (2.3 on)")


def test_grad_scaler_is_observed_and_agrees_with_ampbench():
    scaler, device = grad_scaler()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with ampbench.torch.record(model) as rec:
        for i in range(5):
            optimizer.zero_grad()
            x = torch.randn(4, 8, device=device) * (float("inf") if i == 1 else 1)
            scaler.scale(model(x).sum()).backward()
            rec.scaler_step(scaler, optimizer)
    assert [s["skipped"] for s in rec.scaler] == [False, True, False, False, False]
    assert all(s["agrees"] for s in rec.scaler), rec.scaler
    assert [s["scale"] for s in rec.scaler] == [2.0**16, 2.0**15, 2.0**15, 2.0**16, 2.0**16]


def conv_model():
    torch.manual_seed(2)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, stride=2), torch.nn.ReLU(),
                               torch.nn.Conv2d(8, 4, 3, groups=2, bias=False))


def test_convolutions_forward_and_backward_are_judged_in_their_modules():
    model = conv_model()
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    with ampbench.torch.record(model) as rec:
        model(x).square().sum().backward()
    judged = {(j["aten"], j["op"], j["module"], j["shape"], j["format"]) for j in rec.judge()}
    first, second = "2x3x8x8:8x3x3,stride=2,pad=1", "2x8x4x4:4x3x3,groups=2"
    assert {("aten::convolution", "conv2d", "0", first, "fp32"),
            ("aten::convolution", "conv2d", "2", second, "fp32"),
            ("aten::convolution_backward", "conv2d_backward_data", "0", first, "fp32"),
            ("aten::convolution_backward", "conv2d_backward_filter", "0", first, "fp32"),
            ("aten::convolution_backward", "linear_backward_bias", "0", "32x8", "fp32"),
            ("aten::convolution_backward", "conv2d_backward_data", "2", second, "fp32"),
            ("aten::convolution_backward", "conv2d_backward_filter", "2", second, "fp32"),
            ("aten::threshold_backward", "relu_backward", "1", "64x4", "fp32")} <= judged, judged
    # The second convolution has no bias: no bias gradient is judged for it.
    assert not [j for j in rec.judge() if j["module"] == "2" and j["op"] == "linear_backward_bias"]
    for j in rec.judge():
        assert j["breaches"] == [] and j["mismatches"]["nan_vs_number"] == 0, j
    assert not [n for n in rec.not_judged if n["aten"] in ampbench.torch.OPS], rec.not_judged
    # The backward's ops outside any module (the loss's) have no module path.
    assert {j["module"] for j in rec.judge() if j["aten"] == "aten::mul"} == {""}
    # eval() cannot take the first convolution's geometry: emulate() says so.
    why = [c for c in rec.emulate("fp32") if c["op"] == "conv2d" and c["module"] == "0"]
    assert why and "stride=2" in why[0]["why"], why


def test_a_convolution_with_bias_is_folded_exactly_and_a_wrong_output_is_seen():
    torch.manual_seed(3)
    x, w, b = torch.randn(2, 4, 7, 7), torch.randn(6, 2, 3, 3), torch.randn(6)
    with ampbench.torch.record(samples=0) as rec:
        torch.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                                   groups=2)
    [c] = [c for c in rec.captured if c["aten"] == "aten::convolution"]
    [(op, operands, _, (shape, recorded))] = ampbench.torch.OPS["aten::convolution"](
        {**c, "args": [v.double().numpy() if isinstance(v, torch.Tensor) else v
                       for v in c["args"]],
         "outputs": [c["outputs"][0].double().numpy()]})
    assert recorded == "2x4x7x7:6x3x3,stride=2x1,pad=1x2,dilation=1x2,groups=2"
    ref = ampbench.reference(op, operands, "fp64", shape=shape)
    expected = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), stride=(2, 1),
                                          padding=(1, 2), dilation=(1, 2), groups=2)
    assert np.allclose(ref["nearest"], expected.numpy(), rtol=1e-14, atol=1e-14)
    [good] = [j for j in rec.judge() if j["op"] == "conv2d"]
    assert good["shape"] == recorded and good["max_ulp"] < 1000 and good["breaches"] == []
    # The same capture with a wrong output (off by 1%, one NaN) judged by the same path.
    c["outputs"][0] = c["outputs"][0] * 1.01
    c["outputs"][0].view(-1)[0] = float("nan")
    rec._judged = None
    [bad] = [j for j in rec.judge() if j["op"] == "conv2d"]
    assert bad["max_ulp"] > 10000 and bad["mismatches"]["nan_vs_number"] == 1 and bad["breaches"]


def test_a_convolution_under_autocast_is_judged_in_bf16():
    model = conv_model()
    x = torch.randn(2, 3, 8, 8)
    with ampbench.torch.record(model) as rec:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = model(x)
        y.float().sum().backward()
    formats = {(j["op"], j["format"]) for j in rec.judge()}
    assert {("conv2d", "bf16"), ("conv2d_backward_data", "bf16"),
            ("conv2d_backward_filter", "bf16")} <= formats, formats
    for j in rec.judge():
        assert j["mismatches"]["nan_vs_number"] == 0 and j["breaches"] == [], j


def test_logsumexp_and_norms():
    x = torch.randn(3, 5, 7)
    with ampbench.torch.record() as rec:
        torch.logsumexp(x, dim=-1)
        torch.logsumexp(x, dim=1)
        torch.norm(x)
        torch.linalg.vector_norm(x)
        x.norm(p=1)
        torch.norm(x, dim=1)
    judged = [(j["aten"], j["op"], j["shape"], j["format"]) for j in rec.judge()]
    assert judged == [("aten::logsumexp", "logsumexp", "15x7", "fp32"),
                      ("aten::norm", "l2_norm", "105", "fp32"),
                      ("aten::linalg_vector_norm", "l2_norm", "105", "fp32")], judged
    for j in rec.judge():
        assert j["max_ulp"] <= 2 and j["breaches"] == [], j
    reasons = [n["reason"] for n in rec.not_judged]
    assert any("logsumexp over dims [1]" in r for r in reasons), reasons
    assert any("order 1" in r for r in reasons), reasons
    assert any("norm over dims [1]" in r for r in reasons), reasons


def test_a_tensor_written_in_place_is_copied_again():
    # Each tensor is copied once while unchanged; an in-place write (or one through a view)
    # makes the next op that takes it copy it again: each softmax is judged on its own input.
    x = torch.randn(4, 6)
    with ampbench.torch.record(samples=0) as rec:
        torch.softmax(x, dim=-1)
        x.mul_(3)
        torch.softmax(x, dim=-1)
        x[1:].add_(5.0)
        torch.softmax(x, dim=-1)
    softmax = [j for j in rec.judge() if j["op"] == "softmax"]
    assert len(softmax) == 3
    for j in softmax:  # a stale input would be judged thousands of ulps off
        assert j["max_ulp"] <= 4, j
    inputs = [c["args"][0] for c in rec.captured if c["aten"] == "aten::_softmax"]
    assert torch.equal(inputs[1], inputs[0] * 3) and torch.equal(inputs[2][1:], inputs[1][1:] + 5)
