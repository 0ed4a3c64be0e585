"""ampbench.torch: the ATen ops a PyTorch model runs, as PyTorch's own kernels computed them, judged
against ampbench's correctly rounded references (docs/python.md).

    with ampbench.torch.record() as rec:
        loss = model(x).sum()          # under torch.autocast, model.half(), ...
    judged = rec.judge()               # one entry per captured op
    document = ampbench.result(rec.records(), suite="my-model")

The recorder is a TorchDispatchMode: it sees each op after autocast has chosen its dtypes, with
its actual inputs and output. Ops the catalog knows are judged in their output's dtype (the
reference from the op's actual inputs, correctly rounded to that format); the others are listed
in `rec.not_judged` with the reason, never dropped silently.
"""

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _core

FORMATS = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16",
           torch.bfloat16: "bf16"}


def _array(t):
    """A tensor's values as float64, exactly (every format here is a subset of binary64)."""
    return t.detach().to("cpu", torch.float64).contiguous().numpy()


# ATen op -> its catalog op and operands, or the reason it cannot be judged. Each gets the op's
# arguments, its tensors converted with _array, and its keyword arguments.
def _addmm(args, kwargs):
    if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1:
        return "addmm with beta or alpha other than 1 (the catalog's gemm is A B + C)"
    a, b = args[1], args[2]
    return "gemm", {"a": a, "b": b, "c": np.broadcast_to(args[0], (a.shape[0], b.shape[1]))}


def _rowwise(name):
    def operands(args):
        x, dim = args[0], args[1]
        if dim not in (-1, x.ndim - 1):
            return f"{name} over dim {dim} (the catalog's is over the last)"
        return name, {"x": x.reshape(-1, x.shape[-1])}
    return operands


def _layer_norm(args):
    x, normalized_shape, weight, bias, eps = args[:5]
    if len(normalized_shape) != 1 or eps != 1e-5:
        return "layer_norm over several dims or with eps other than 1e-5"
    n = x.shape[-1]
    return "layer_norm", {"x": x.reshape(-1, n),
                          "gamma": np.ones(n) if weight is None else weight,
                          "beta": np.zeros(n) if bias is None else bias}


def _activation(name):
    def operands(args):
        x = args[0]
        return name, {"x": x.reshape(-1, x.shape[-1]), "bias": np.zeros(x.shape[-1])}
    return operands


def _gelu(args, kwargs):
    if kwargs.get("approximate", "none") != "none":
        return _activation("gelu_tanh")(args)
    return _activation("gelu")(args)


OPS = {
    "aten::mm": lambda args, kwargs: ("gemm", {"a": args[0], "b": args[1]}),
    "aten::addmm": _addmm,
    "aten::bmm": lambda args, kwargs: ("bmm", {"a": args[0], "b": args[1]}),
    "aten::_softmax": lambda args, kwargs: _rowwise("softmax")(args),
    "aten::_log_softmax": lambda args, kwargs: _rowwise("log_softmax")(args),
    "aten::native_layer_norm": lambda args, kwargs: _layer_norm(args),
    "aten::relu": lambda args, kwargs: _activation("relu")(args),
    "aten::silu": lambda args, kwargs: _activation("silu")(args),
    "aten::gelu": _gelu,
}


class Recorder(TorchDispatchMode):
    """Captures each op's name, dtypes, inputs and output while it is active."""

    def __init__(self):
        super().__init__()
        self.captured = []
        self.not_judged = []
        self._judged = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func._schema.name
        first = out[0] if isinstance(out, (tuple, list)) else out
        if not isinstance(first, torch.Tensor) or not first.is_floating_point():
            return out
        entry = {"aten": name, "index": len(self.captured) + len(self.not_judged),
                 "input_dtypes": [str(a.dtype) for a in args if isinstance(a, torch.Tensor)],
                 "output_dtype": str(first.dtype)}
        if name not in OPS:
            self.not_judged.append({**entry, "reason": "not an op of ampbench's catalog"})
        elif first.dtype not in FORMATS:
            self.not_judged.append({**entry, "reason": f"output dtype {first.dtype}"})
        else:
            converted = [_array(a) if isinstance(a, torch.Tensor) else a for a in args]
            self.captured.append({**entry, "args": converted, "kwargs": kwargs,
                                  "format": FORMATS[first.dtype], "output": _array(first)})
        return out

    def judge(self):
        """Each captured op's error against its correctly rounded reference in its output's
        format: the metrics of ampbench.metrics with the op, dtypes and shape; ops whose
        arguments the catalog cannot take move to not_judged with the reason."""
        if self._judged is not None:
            return self._judged
        judged = []
        for c in self.captured:
            mapped = OPS[c["aten"]](c["args"], c["kwargs"])
            entry = {k: c[k] for k in ("aten", "index", "input_dtypes", "output_dtype")}
            if isinstance(mapped, str):
                self.not_judged.append({**entry, "reason": mapped})
                continue
            op, operands = mapped
            fmt = c["format"]
            try:
                ref = _core.reference(op, operands, fmt)
            except ValueError as e:  # arguments the reference cannot take
                self.not_judged.append({**entry, "reason": f"{op}: {e}"})
                continue
            summary = _core.metrics(c["output"].ravel(), ref["rounded"].ravel(),
                                    ref["nearest"].ravel(), fmt)
            judged.append({**entry, "op": op, "shape": ref["shape"], "format": fmt, **summary})
        self._judged = judged
        return judged

    def records(self, policy="torch"):
        """The judged ops as audit records that ampbench.result() turns into an
        ampbench.result/1 record (distribution "recorded", seed the op's capture index)."""
        out = []
        for j in self.judge():
            record = {k: v for k, v in j.items()
                      if k not in ("aten", "index", "input_dtypes", "output_dtype", "format")}
            record.update({"policy": f"{policy}-{j['format']}", "backend": "torch",
                           "dist": "recorded", "seed": j["index"], "outputs": j["count"],
                           "reference_sample": j["count"], "breaches": [], "status": "PASS"})
            out.append(record)
        return out


def record():
    """A recorder to use as a context manager around the model's forward, loss and backward."""
    return Recorder()
