"""The Python module against the command line: the same inputs give the same numbers, bit for bit,
and the same error messages. AMPBENCH_CLI names the ampbench program (CTest sets it)."""

import json
import os
import subprocess

import pytest

np = pytest.importorskip("numpy", reason="NumPy is not installed (Debian: python3-numpy)")
import ampbench  # noqa: E402  (after the skip: the module needs NumPy)

CLI = os.environ.get("AMPBENCH_CLI", "ampbench")


def cli(*args, stdin=""):
    """The command line's standard output; its standard error and status on failure."""
    done = subprocess.run([CLI, *args], input=stdin, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


def exact_text(x):
    """A binary64 value as text the command line reads exactly (a hex float, inf, -inf, nan)."""
    return float(x).hex()


def sample_values(seed, count=400):
    """Values across every format's range: random doubles of many magnitudes, the edges of the
    formats (each format's max, min normal and subnormal and their neighbours), ties, signed zeros
    and the special values."""
    rng = np.random.default_rng(seed)
    mags = rng.uniform(-30, 20, count)
    values = list(np.sign(rng.uniform(-1, 1, count)) * 2.0**mags * rng.uniform(1, 2, count))
    for f in ampbench.formats():
        p, emin, emax = f["precision"], f["emin"], f["emax"]
        for e in (emin, emax, emin - p + 1):
            if -1074 <= e <= 1023 and e - p - 1 >= -1074:
                base = 2.0**e
                ulp = 2.0 ** (e - p + 1) if e - p + 1 >= -1074 else 0.0
                values += [base, -base, base + ulp / 2, base * (2 - 2.0 ** (1 - p)),
                           base * (2 - 2.0 ** (1 - p)) + ulp / 2, base - 2.0 ** (e - p - 1)]
    values += [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.5, 2.5, -3.5, 1e300]
    return np.array(values, dtype=np.float64)


def cli_round(values, fmt, mode="rne", seed=0, extra=()):
    rc, out, err = cli("round", "--to", fmt, "--mode", mode, "--seed", str(seed), *extra,
                       stdin="".join(exact_text(v) + "\n" for v in values))
    assert rc == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) == len(values)
    return rows


@pytest.mark.parametrize("fmt", ["fp64", "fp32", "tf32", "bf16", "fp16", "e4m3", "e5m2", "e3m2",
                                 "e2m3", "e2m1", "user:p=5,emin=-10,emax=9",
                                 "user:p=3,emin=-2,emax=3,specials=none"])
@pytest.mark.parametrize("mode", ["rne", "rna", "rz", "ru", "rd", "rto", "sr", "sre"])
def test_round_equals_the_command_line(fmt, mode):
    values = sample_values(hash((fmt, mode)) % 2**32)
    got = ampbench.round(values, fmt, mode=mode, seed=11)
    rows = cli_round(values, fmt, mode, seed=11)
    for i, (text, value, bits, event) in enumerate(rows):
        assert text == exact_text(values[i])
        expected = float.fromhex(value)
        assert (got["values"][i] == expected and np.signbit(got["values"][i]) == np.signbit(expected)
                or np.isnan(got["values"][i]) and np.isnan(expected)), (i, values[i])
        assert int(got["bits"][i]) == int(bits, 16), (i, values[i])
        assert ampbench.EVENTS[got["events"][i]] == event, (i, values[i])


@pytest.mark.parametrize("options", [{"subnormals": False}, {"overflow": "saturate"}])
def test_round_options_equal_the_command_line(options):
    values = sample_values(5)
    got = ampbench.round(values, "fp16", **options)
    extra = ("--subnormals", "off") if "subnormals" in options else ("--overflow", "saturate")
    rows = cli_round(values, "fp16", extra=extra)
    assert [int(r[2], 16) for r in rows] == [int(b) for b in got["bits"]]
    assert [r[3] for r in rows] == [ampbench.EVENTS[e] for e in got["events"]]


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1"])
def test_every_value_round_trips(fmt):
    """Every bit pattern decodes to a value that rounds back to the same pattern, exactly."""
    bits = np.arange(2 ** ampbench.format_info(fmt)["bits"], dtype=np.uint64)
    values = ampbench.decode(bits, fmt)
    got = ampbench.round(values, fmt)
    finite = ~np.isnan(values)
    assert np.array_equal(got["bits"][finite], bits[finite])
    assert np.all(np.array(ampbench.EVENTS)[got["events"][finite]] == "exact")
    assert np.all(np.isnan(got["values"][~finite]))


def test_round_keeps_the_shape_and_reads_float32():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 3
    got = ampbench.round(x, "bf16")
    assert got["values"].shape == (3, 4) and got["bits"].dtype == np.uint64
    assert np.array_equal(got["values"], ampbench.round(x.astype(np.float64).ravel(),
                                                        "bf16")["values"].reshape(3, 4))


@pytest.mark.parametrize("fmt,acc,mode", [("fp16", "fp16", "rne"), ("fp16", "fp32", "rz"),
                                          ("bf16", "bf16", "sr"), ("fp32", "fp32", "rne"),
                                          ("e4m3", "fp16", "ru"), ("fp64", "fp64", "rd")])
def test_dot_equals_the_command_line(fmt, acc, mode):
    rng = np.random.default_rng(len(fmt) + len(mode))
    a = rng.normal(0, 1, 300) * 2.0 ** rng.integers(-8, 8, 300)
    b = rng.normal(0, 1, 300)
    got = ampbench.dot(a, b, fmt, accumulate=acc, mode=mode, seed=3)
    rc, out, err = cli("dot", "--format", fmt, "--accumulate", acc, "--mode", mode, "--seed", "3",
                       "--json", stdin=json.dumps({"a": [exact_text(v) for v in a],
                                                   "b": [exact_text(v) for v in b]}))
    assert rc == 0, err
    expected = json.loads(out)
    for key in ("format", "accumulate", "mode", "length", "inputs_rounded", "exact", "exact_hex",
                "rounded_event", "naive_ulp_error", "naive_step_events"):
        assert got[key] == expected[key], key
    for key in ("rounded", "naive", "naive_reference"):
        assert got[key] == float.fromhex(expected[key]), key


def test_exact_sum_equals_the_command_lines_dot_with_ones():
    rng = np.random.default_rng(9)
    x = rng.normal(0, 1, 1000) * 2.0 ** rng.integers(-600, 600, 1000)
    got = ampbench.exact_sum(x)
    rc, out, err = cli("dot", "--format", "fp64", "--json",
                       stdin=json.dumps({"a": [exact_text(v) for v in x], "b": [1] * len(x)}))
    assert rc == 0, err
    expected = json.loads(out)
    assert got["exact"] == expected["exact"] and got["exact_hex"] == expected["exact_hex"]
    assert got["rounded"] == float.fromhex(expected["rounded"])
    assert got["rounded_event"] == expected["rounded_event"]


EVAL_CASES = [
    ("gemm", "fp16", {"a": (4, 6), "b": (6, 3)}),
    ("gemm", "amp-bf16", {"a": (3, 5), "b": (5, 2), "c": (3, 2)}),
    ("softmax", "fp16", {"x": (3, 7)}),
    ("layer_norm", "bf16", {"x": (2, 8), "gamma": (8,), "beta": (8,)}),
    ("cross_entropy", "amp-fp16", {"logits": (4, 5), "targets": (4,)}),
]


@pytest.mark.parametrize("op,policy,shapes", EVAL_CASES)
def test_eval_equals_the_command_line(op, policy, shapes, tmp_path):
    rng = np.random.default_rng(len(op))
    arrays = {}
    for name, shape in shapes.items():
        if name == "targets":
            arrays[name] = rng.integers(0, 5, shape).astype(np.float64)
        else:
            arrays[name] = rng.normal(0, 3, shape)
    got = ampbench.eval(op, policy, arrays)
    path = tmp_path / "inputs.json"
    path.write_text(json.dumps({k: np.vectorize(exact_text, otypes=[object])(v).tolist()
                                for k, v in arrays.items()}))
    rc, out, err = cli("eval", "--op", op, "--policy", policy, "--inputs", str(path), "--json")
    assert rc == 0, err
    expected = json.loads(out)
    for key in ("op", "policy", "shape", "formats", "inputs_rounded", "backend"):
        assert got[key] == expected[key], key
    # The command line writes a one-element output as a number, not a list.
    shape = got["output"].shape
    hexes = np.vectorize(float.fromhex)
    for key in ("output", "reference"):
        cli_values = hexes(np.array(expected[key])).reshape(shape)
        assert np.array_equal(got[key], cli_values, equal_nan=True), key
    cli_ulps = np.array(expected["ulp_error"], dtype=object).reshape(shape)
    assert got["ulp_error"].tolist() == cli_ulps.tolist()


@pytest.mark.parametrize("call,args", [
    (lambda: ampbench.round(np.zeros(1), "fp7"), ("round", "--to", "fp7")),
    (lambda: ampbench.round(np.zeros(1), "fp16", mode="nearest"),
     ("round", "--to", "fp16", "--mode", "nearest")),
    (lambda: ampbench.round(np.zeros(1), "user:p=60,emin=-10,emax=10"),
     ("round", "--to", "user:p=60,emin=-10,emax=10")),
    (lambda: ampbench.dot(np.zeros(2), np.zeros(2), "fp16", mode="up"),
     ("dot", "--format", "fp16", "--mode", "up")),
    (lambda: ampbench.eval("softmaxx", "fp16", {}), ("eval", "--op", "softmaxx", "--policy",
                                                      "fp16", "--inputs", "x.json")),
    (lambda: ampbench.eval("softmax", "fp12", {}), ("eval", "--op", "softmax", "--policy",
                                                     "fp12", "--inputs", "x.json")),
])
def test_bad_input_raises_the_command_lines_message(call, args):
    with pytest.raises(ValueError) as raised:
        call()
    rc, _, err = cli(*args, stdin="1\n")
    assert rc == 2
    assert str(raised.value) and str(raised.value) in err, (str(raised.value), err)


def test_eval_gives_the_exact_values_and_the_bound_where_the_op_has_one():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, (4, 64)), rng.normal(0, 1, (64, 5))
    e = ampbench.eval("gemm", "bf16", {"a": a, "b": b})
    ab = ampbench.round(a, "bf16")["values"] @ ampbench.round(b, "bf16")["values"]
    assert e["exact"].shape == e["bound"].shape == (4, 5)
    assert np.allclose(e["exact"], ab, rtol=1e-12, atol=1e-12)
    assert np.all(np.abs(e["output"] - e["exact"]) <= e["bound"])
    # fp32 accumulation: far tighter than pure bf16's, which rounds every partial sum
    tight = ampbench.eval("gemm", "bf16-model", {"a": a, "b": b})["bound"]
    assert np.all(tight < e["bound"] / 4)
    assert ampbench.eval("softmax", "bf16", {"x": a})["bound"] is None


def test_eval_names_a_missing_operand_and_a_bad_class_index():
    with pytest.raises(ValueError, match="missing operand 'b'"):
        ampbench.eval("gemm", "fp32", {"a": np.ones((2, 2))})
    with pytest.raises(ValueError, match="is not below the 3 classes"):
        ampbench.eval("cross_entropy", "fp32", {"logits": np.ones((2, 3)),
                                                "targets": np.array([0.0, 3.0])})


def docs_examples():
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..")
    text = open(os.path.join(root, "docs", "python.md"), encoding="utf-8").read()
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


@pytest.mark.parametrize("code", docs_examples())
def test_docs_examples(code):
    if "import torch" in code:
        pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
    exec(compile(code, "docs/python.md", "exec"), {})


AUDIT_CASES = [
    ("gemm", "fp16", "8x8x32", "normal", 0),
    ("softmax", "bf16", "4x64", "uniform:a=-20,b=20", 0),
    ("layer_norm", "amp-fp16", "4x32", "normal", 16),
    ("sum", "fp16", "1000", "normal", 0),
]


@pytest.mark.parametrize("op,policy,shape,dist,samples", AUDIT_CASES)
def test_audit_equals_the_command_line(op, policy, shape, dist, samples, tmp_path):
    """The whole case record, metrics included (ulp histogram, normwise and componentwise errors,
    bound ratio, events), as `ampbench audit --json` writes it."""
    got = ampbench.audit(op, policy, shape=shape, dist=dist, seed=7, samples=samples)
    path = tmp_path / "audit.json"
    rc, out, err = cli("audit", "--op", op, "--policy", policy, "--shape", shape, "--dist", dist,
                       "--seed", "7", "--samples", str(samples), "--budgets", "none",
                       "--json", str(path))
    assert rc == 0, out + err
    [expected] = json.loads(path.read_text())["cases"]
    assert got == expected


def test_metrics_equal_the_audits():
    """metrics() of a kernel's output against reference() gives what the audit records of it."""
    seen = {}

    def kernel(inputs):
        x = inputs["x"]
        e = np.exp(x - x.max(axis=1, keepdims=True))
        seen["x"] = x
        seen["output"] = ampbench.round(e / e.sum(axis=1, keepdims=True), "fp32")["values"]
        return seen["output"]

    record = ampbench.audit_kernel("softmax", "fp32", kernel, shape="3x40", seed=3)
    ref = ampbench.reference("softmax", {"x": seen["x"]}, "fp32")
    got = ampbench.metrics(seen["output"], ref["rounded"], ref["nearest"], "fp32")
    assert got == {k: v for k, v in record.items() if k in got}
    assert got["count"] == 120 and sum(b["count"] for b in got["ulp_histogram"]) == 120


def test_reference_is_evals_on_values_of_the_input_format():
    x = ampbench.round(np.random.default_rng(2).normal(0, 5, (3, 9)), "fp16")["values"]
    ref = ampbench.reference("softmax", {"x": x}, "fp16")
    assert np.array_equal(ref["rounded"], ampbench.eval("softmax", "fp16", {"x": x})["reference"])
    sampled = ampbench.reference("softmax", {"x": x}, "fp16", samples=5, seed=1)
    assert len(sampled["positions"]) == 5
    assert np.array_equal(sampled["rounded"], ref["rounded"].ravel()[sampled["positions"]])


def naive_softmax(inputs):
    x = inputs["x"].astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float64)


def stable_softmax(inputs):
    x = inputs["x"].astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float64)


def test_a_python_softmax_is_judged_like_the_embedding_example():
    """The textbook softmax overflows on inputs in +-100 and fails with its NaN mismatches
    counted; the max-subtracted one passes (the budgets of suites/budgets.toml)."""
    budgets = os.path.join(os.path.dirname(__file__), "..", "..", "..", "suites", "budgets.toml")
    args = dict(shape="64x256", dist="uniform:a=-100,b=100", seed=7, budgets=budgets)
    naive = ampbench.audit_kernel("softmax", "fp32", naive_softmax, name="naive", **args)
    stable = ampbench.audit_kernel("softmax", "fp32", stable_softmax, name="stable", **args)
    assert naive["backend"] == "naive" and naive["status"] == "FAIL"
    assert naive["mismatches"]["nan_vs_number"] > 0
    assert stable["status"] == "PASS", stable["breaches"]
    assert stable["mismatches"]["nan_vs_number"] == 0


def test_a_kernel_of_the_wrong_length_is_a_value_error():
    with pytest.raises(ValueError, match="softmax"):
        ampbench.audit_kernel("softmax", "fp32", lambda inputs: np.zeros(3), shape="2x4")


def test_scaler_equals_the_command_line():
    words = ["ok"] * 5 + ["inf", "nan", "ok", "inf"] + ["ok"] * 9
    rc, out, err = cli("scaler", "--init-scale", "1024", "--growth-interval", "3", "--hex",
                       stdin="".join(w + "\n" for w in words))
    assert rc == 0, err
    rows = [line.split("\t") for line in out.splitlines() if not line.startswith("#")]
    scaler = ampbench.LossScaler(init_scale=1024, growth_interval=3)
    for word, row in zip(words, rows, strict=True):
        step, scale = scaler.steps, scaler.scale
        grad = {"ok": scaler.scale_loss(1.0), "inf": np.inf, "nan": np.nan}[word]
        grads = [np.array([grad], dtype=np.float32)]
        taken = scaler.step(grads)
        found_inf = scaler.found_inf
        scaler.update()
        assert [str(step), str(int(found_inf)), float(scale).hex(), str(int(not taken)),
                float(scaler.scale).hex(), str(scaler.growth_tracker)] == \
            [row[0], row[1], float.fromhex(row[2]).hex(), row[3], float.fromhex(row[4]).hex(),
             row[5]]
        if word == "ok":
            assert grads[0][0] == 1.0  # unscaled in place
    assert scaler.skipped_steps == [5, 6, 8]


def test_scaler_options_are_checked_with_the_command_lines_message():
    with pytest.raises(ValueError) as raised:
        ampbench.LossScaler(init_scale=1.0, min_scale=2.0)
    rc, _, err = cli("scaler", "--init-scale", "1", "--min-scale", "2", stdin="")
    assert rc == 2
    option, message = str(raised.value).split(": ", 1)
    assert option == "min_scale" and f"--min-scale: {message}" in err
    with pytest.raises(TypeError, match="float32"):
        ampbench.LossScaler().step([np.zeros(2)])


def test_a_result_record_passes_report_and_compare(tmp_path):
    """Audits from Python as an ampbench.result/1 record: `ampbench report` and `compare` take it,
    and read_result reads it back."""
    cases = [ampbench.audit("softmax", "fp16", shape="4x32", seed=2),
             ampbench.audit_kernel("softmax", "fp32", naive_softmax, shape="8x64",
                                   dist="uniform:a=-100,b=100", name="naive")]
    document = ampbench.result(cases, suite="python-test")
    keys = [r["key"] for r in document["records"]]
    assert keys == ["audit/softmax/4x32/fp16/normal/seed=2",
                    "audit/softmax/8x64/fp32/uniform:a=-100,b=100/seed=1/backend=naive"]
    assert [r["status"] for r in document["records"]] == [cases[0]["status"].lower(), "fail"]
    path = tmp_path / "result.json"
    path.write_text(json.dumps(document))
    assert ampbench.read_result(str(path)) == document
    rc, out, err = cli("report", str(path), "--md", str(tmp_path / "report.md"))
    assert rc == 0, err
    assert "backend=naive" in (tmp_path / "report.md").read_text()
    rc, out, err = cli("compare", str(path), str(path))
    assert rc == 0, out + err


def test_a_bad_record_raises_the_command_lines_message(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema": "ampbench.result/0", "records": []}))
    with pytest.raises(ValueError) as raised:
        ampbench.read_result(str(path))
    rc, _, err = cli("compare", str(path), str(path))
    assert rc == 2 and str(raised.value) in err


@pytest.mark.parametrize("name", ["amp-fp16", "bf16",
                                  os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                               "suites", "policies", "example.toml")])
def test_policy_equals_the_command_line(name):
    rc, out, err = cli("policies", "--policy", name, "--json")
    assert rc == 0, err
    assert ampbench.policy(name) == json.loads(out)


def test_policies_equal_the_command_line():
    rc, out, err = cli("policies", "--json")
    assert rc == 0, err
    assert ampbench.policies() == json.loads(out)
    with pytest.raises(ValueError) as raised:
        ampbench.policy("fp12")
    rc, _, err = cli("policies", "--policy", "fp12")
    assert rc == 2 and str(raised.value) in err
