"""ampbench.torch: the ATen ops a PyTorch model runs, as PyTorch's own kernels computed them, judged
against ampbench's correctly rounded references (docs/python.md).

    with ampbench.torch.record(model) as rec:
        loss = model(x).sum()          # under torch.autocast, model.half(), ...
    judged = rec.judge()               # one entry per judged output of a captured op
    document = rec.result(suite="my-model")

The recorder is a TorchDispatchMode: it sees each op after autocast has chosen its dtypes, with
its actual inputs and outputs. Ops the catalog knows are judged in their output's dtype (the
reference from the op's actual inputs, correctly rounded to that format); every other op is listed
in `rec.not_judged` with the reason, never dropped silently.
"""

import contextlib
import weakref

import numpy as np
import torch
from torch.utils._python_dispatch import (TorchDispatchMode, _get_current_dispatch_mode,
                                          _pop_mode_temporarily)

from . import _core

FORMATS = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16",
           torch.bfloat16: "bf16"}
SAMPLES = 4096  # outputs with more elements are judged at this many positions


def _array(t):
    """A tensor's values as float64, exactly (every format here is a subset of binary64)."""
    return t.detach().to("cpu", torch.float64).contiguous().numpy()


class _Copies:
    """Tensors as they are now, copied (the model may overwrite them later), each tensor once
    while it is unchanged: an op's output that the next op takes, or a weight that the forward
    and the backward take, is copied once. A copy is reused only while the tensor it was taken
    of lives (its memory cannot hold another tensor), its version counter is unchanged and no op
    has written to memory it spans since (`written`, before every op that writes an argument)."""

    def __init__(self):
        self._copies = {}

    @staticmethod
    def _span(t):
        """The bytes a tensor's elements lie in: [first, end)."""
        if t.numel() == 0:
            return t.data_ptr(), t.data_ptr()
        last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
        return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()

    def written(self, tensors):
        """Forget the copies of memory that `tensors` are about to be written to."""
        spans = [self._span(t) for t in tensors]
        for key, (_, _, _, (first, end)) in list(self._copies.items()):
            if any(first < e and f < end for f, e in spans):
                del self._copies[key]

    def __call__(self, a):
        if isinstance(a, torch.Tensor):
            key = (a.data_ptr(), a.dtype, a.device, a.shape, a.stride())
            hit = self._copies.get(key)
            if hit is not None and hit[0]() is not None and hit[1] == a._version:
                return hit[2]
            copy = a.detach().clone()
            self._copies[key] = (weakref.ref(a), a._version, copy, self._span(a))
            return copy
        if isinstance(a, (list, tuple)):
            return type(a)(self(b) for b in a)
        return a


def _convert(a):
    """A snapshot's tensors as float64 arrays."""
    if isinstance(a, torch.Tensor):
        return _array(a)
    if isinstance(a, (list, tuple)):
        return type(a)(_convert(b) for b in a)
    return a


def _key(t):
    """What identifies a tensor while it lives: a backward op gets the forward's saved tensors."""
    return (str(t.device), t.data_ptr(), tuple(t.shape), t.dtype)


def _rows(x):
    """An array as the catalog's RxC operand: the last dim the columns."""
    return x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)


def _autocast():
    """The autocast state where Python code runs (inside an op's dispatch autocast reads off)."""
    state = {}
    if torch.is_autocast_cpu_enabled():
        state["cpu"] = str(torch.get_autocast_cpu_dtype())
    if torch.is_autocast_enabled():
        state["cuda"] = str(torch.get_autocast_gpu_dtype())
    return state


def settings():
    """The PyTorch version and the settings that decide its kernels' precision."""
    matmul = torch.backends.cuda.matmul
    s = {"torch": torch.__version__, "cuda": torch.version.cuda,
         "allow_tf32": matmul.allow_tf32,
         "allow_fp16_reduced_precision_reduction": matmul.allow_fp16_reduced_precision_reduction,
         "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "autocast": _autocast()}
    if hasattr(torch._C, "_get_cublas_allow_bf16_reduced_precision_reduction"):  # PyTorch 2.0 on
        s["allow_bf16_reduced_precision_reduction"] = matmul.allow_bf16_reduced_precision_reduction
    return s


def underflow(grads, scale, format=None):
    """How many gradient entries underflow in their dtype (or `format`), with the loss scale and
    without: of the nonzero finite scaled entries, the fraction below the format's smallest
    normal as they are (`scaled`), and once divided by `scale` and rounded to the format
    (`unscaled`: what the gradient would have been without the scaler, flushed or subnormal)."""
    scaled = unscaled = entries = 0
    for g in grads:
        fmt = format or FORMATS[g.dtype]
        tiny = 2.0 ** _core.format_info(fmt)["emin"]
        v = _array(g).ravel()
        v = v[np.isfinite(v) & (v != 0)]
        entries += v.size
        scaled += int(np.count_nonzero(np.abs(v) < tiny))
        if v.size:
            unscaled += int(np.count_nonzero(np.abs(_core.round(v / scale, fmt)["values"]) < tiny))
    return {"entries": entries, "scaled": scaled / entries if entries else 0.0,
            "unscaled": unscaled / entries if entries else 0.0}


def _why_not(func):
    """Why an op outside the table below is not judged."""
    alias = func._schema.returns[0].alias_info if func._schema.returns else None
    if alias is not None and not alias.is_write:
        return "a view of its input: no arithmetic"
    return "not an op of ampbench's catalog"


@contextlib.contextmanager
def _paused(mode):
    """The recorder off, for its own work on the tensors (the rest of the stack stays)."""
    if _get_current_dispatch_mode() is mode:
        with _pop_mode_temporarily():
            yield
    else:
        yield


# ATen op -> the catalog ops that judge its outputs: a list of (catalog op, operands, the
# PyTorch output it judges and its format), or the reason it cannot be judged. Each gets the
# capture: `args` (tensors as float64 arrays), `kwargs`, `outputs` (arrays, None where not
# floating), `formats` and `forward` (what the op's forward recorded, for a backward op).
def _out(c, i, layout=None):
    """Output i and its format, in the catalog's layout."""
    a = c["outputs"][i] if i < len(c["outputs"]) else None
    if a is None:
        return None
    return (layout(a) if layout else a), c["formats"][i]


def _present(judged):
    return [j for j in judged if j[2] is not None]


def _matmul(c):
    a, b = c["args"][:2]
    return [("bmm" if a.ndim == 3 else "gemm", {"a": a, "b": b}, _out(c, 0))]


def _addmm(c):
    bias, a, b = c["args"][:3]
    if c["kwargs"].get("beta", 1) != 1 or c["kwargs"].get("alpha", 1) != 1:
        return "addmm with beta or alpha other than 1 (the catalog's linear is x W + bias)"
    if bias.ndim == 1 and bias.shape[0] == b.shape[1]:  # nn.Linear's: the bias of every row
        return [("linear", {"x": a, "w": b, "bias": bias}, _out(c, 0))]
    return [("gemm", {"a": a, "b": b, "c": np.broadcast_to(bias, (a.shape[0], b.shape[1]))},
             _out(c, 0))]


def _last_dim(c, name, at=1):
    x, dim = c["args"][0], c["args"][at]
    if dim not in (-1, x.ndim - 1):
        return f"{name} over dim {dim} (the catalog's is over the last)"
    return None


def _softmax(name):
    def operands(c):
        return _last_dim(c, name) or [(name, {"x": _rows(c["args"][0])}, _out(c, 0))]
    return operands


def _softmax_backward(name):
    def operands(c):
        if c["forward"] is None:
            return f"{name}: its forward's input was not recorded"
        return _last_dim(c, name, 2) or [(name, {"x": _rows(c["forward"]), "dy": _rows(c["args"][0])},
                                       _out(c, 0))]
    return operands


def _layer_norm(c):
    x, normalized_shape, weight, bias, eps = c["args"][:5]
    if len(normalized_shape) != 1 or eps != 1e-5:
        return "layer_norm over several dims or with eps other than 1e-5 (the catalog's)"
    n = x.shape[-1]
    return [("layer_norm", {"x": _rows(x), "gamma": np.ones(n) if weight is None else weight,
                            "beta": np.zeros(n) if bias is None else bias}, _out(c, 0))]


def _layer_norm_backward(c):
    dy, x, normalized_shape, _, _, weight = c["args"][:6]
    if len(normalized_shape) != 1 or c["forward"] != 1e-5:
        return "layer_norm_backward over several dims or with eps other than 1e-5 (or unknown)"
    x, dy = _rows(x), _rows(dy)
    gamma = np.ones(x.shape[1]) if weight is None else weight
    judged = zip(("layer_norm_backward", "layer_norm_backward_gamma", "layer_norm_backward_beta"),
                 ({"x": x, "dy": dy, "gamma": gamma}, {"x": x, "dy": dy}, {"x": x, "dy": dy}),
                 (_out(c, i) for i in range(3)))
    return _present(judged)


def _channels_last(x):
    """NxC or NxCx... as the catalog's NxC: every position of a channel a row."""
    return x if x.ndim == 2 else np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])


def _batch_norm(c):
    x, weight, bias = c["args"][:3]
    training, eps = c["args"][5], c["args"][7]
    if not training or eps != 1e-5 or x.ndim < 2:
        return "batch_norm in eval mode or with eps other than 1e-5 (the catalog's: training, 1e-5)"
    n = x.shape[1]
    return [("batch_norm", {"x": _channels_last(x),
                            "gamma": np.ones(n) if weight is None else weight,
                            "beta": np.zeros(n) if bias is None else bias},
             _out(c, 0, _channels_last))]


def _batch_norm_backward(c):
    dy, x, weight = c["args"][:3]
    training, eps = c["args"][7], c["args"][8]
    if not training or eps != 1e-5:
        return "batch_norm_backward in eval mode or with eps other than 1e-5"
    x, dy = _channels_last(x), _channels_last(dy)
    gamma = np.ones(x.shape[1]) if weight is None else weight
    judged = zip(("batch_norm_backward", "batch_norm_backward_gamma", "batch_norm_backward_beta"),
                 ({"x": x, "dy": dy, "gamma": gamma}, {"x": x, "dy": dy}, {"x": x, "dy": dy}),
                 (_out(c, 0, _channels_last), _out(c, 1), _out(c, 2)))
    return _present(judged)


def _activation(name):
    def operands(c):
        x = _rows(c["args"][0])
        return [(name, {"x": x, "bias": np.zeros(x.shape[1])}, _out(c, 0))]
    return operands


def _arg(c, name, at, default):
    """An argument given by keyword or at its position, or its default."""
    return c["kwargs"].get(name, c["args"][at] if len(c["args"]) > at else default)


def _gelu(at, catalog_op, suffix=""):
    """gelu or its backward: exact or tanh-approximated (`approximate`, argument `at`)."""
    def operands(c):
        tanh = _arg(c, "approximate", at, "none") != "none"
        return catalog_op(("gelu_tanh" if tanh else "gelu") + suffix)(c)
    return operands


def _activation_backward(name):
    def operands(c):
        dy, x = c["args"][:2]
        return [(name, {"x": _rows(x), "dy": _rows(dy)}, _out(c, 0))]
    return operands


def _threshold_backward(c):
    # relu's backward: self is relu's output, which is positive exactly where its input is.
    if c["args"][2] != 0:
        return "threshold_backward with a threshold other than 0 (relu's)"
    return _activation_backward("relu_backward")(c)


def _elementwise(name):
    def operands(c):
        x, y = c["args"][:2]
        if _arg(c, "alpha", 2, 1) != 1:
            return f"{name} with alpha other than 1"
        shape = c["outputs"][0].shape
        x, y = (np.broadcast_to(np.asarray(v, dtype=np.float64), shape) for v in (x, y))
        return [(name, {"x": _rows(x), "y": _rows(y)}, _out(c, 0))]
    return operands


def _dims(x, c):
    dims = _arg(c, "dim", 1, None)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(x.ndim))
    dims = dims if isinstance(dims, (list, tuple)) else [dims]
    return sorted(d % max(x.ndim, 1) for d in dims)


def _sum(c):
    x = c["args"][0]
    dims = _dims(x, c)
    if dims == list(range(x.ndim)):
        return [("sum", {"x": x.ravel()}, _out(c, 0))]
    if x.ndim == 2 and dims == [0]:  # a linear layer's bias gradient
        return [("linear_backward_bias", {"dy": x}, _out(c, 0))]
    return f"sum over dims {dims} of a {x.ndim}-dim tensor (the catalog's: all, or the rows)"


def _mean(c):
    x = c["args"][0]
    dims = _dims(x, c)
    if dims == list(range(x.ndim)):
        return [("mean", {"x": x.ravel()}, _out(c, 0))]
    if dims == list(range(dims[0], x.ndim)):  # the trailing dims: global average pooling
        rows = int(np.prod(x.shape[:dims[0]]))
        return [("mean_pool", {"x": x.reshape(rows, -1)}, _out(c, 0))]
    return f"mean over dims {dims} of a {x.ndim}-dim tensor (the catalog's: all, or trailing)"


def _nll_loss(c):
    # nll_loss on log-probabilities: the mean (or sum) of the negated picked entries, which is
    # what is judged; cross_entropy is log_softmax, judged itself, and this.
    x, target, weight, reduction, ignore_index = c["args"][:5]
    if weight is not None or x.ndim != 2 or reduction not in (1, 2):
        return "nll_loss with class weights, not 2-dim or without reduction"
    target = target.astype(np.int64)
    if np.any(target == ignore_index):
        return "nll_loss with ignored targets"
    picked = -x[np.arange(x.shape[0]), target]
    return [("mean" if reduction == 1 else "sum", {"x": picked}, _out(c, 0))]


def _cast(c):
    return [("cast", {"x": _rows(c["args"][0])}, _out(c, 0))]


def _logsumexp(c):
    x = c["args"][0]
    if _dims(x, c) != [max(x.ndim - 1, 0)]:
        return f"logsumexp over dims {_dims(x, c)} of a {x.ndim}-dim tensor (the catalog's: " \
               "the last)"
    return [("logsumexp", {"x": _rows(x)}, _out(c, 0))]


def _l2_norm(ord_at, ord_name):
    """norm or linalg_vector_norm: the 2-norm of all the values (the catalog's l2_norm)."""
    def operands(c):
        x = c["args"][0]
        p = _arg(c, ord_name, ord_at, 2)
        dims = _arg(c, "dim", ord_at + 1, None)
        if p not in (2, None) or c["kwargs"].get("dtype") is not None:
            return f"a norm of order {p} or with a dtype (the catalog's l2_norm: order 2, none)"
        if dims not in (None, []) and sorted(d % max(x.ndim, 1) for d in
                                             (dims if isinstance(dims, (list, tuple)) else [dims])
                                             ) != list(range(x.ndim)):
            return f"a norm over dims {dims} of a {x.ndim}-dim tensor (the catalog's: all)"
        return [("l2_norm", {"x": x.ravel()}, _out(c, 0))]
    return operands


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv_geometry(c, x_shape, w_shape):
    """A 2-D convolution's shape text (docs/audit.md's: NxCxHxW:KxRxS and its options), or why the
    catalog's conv2d cannot be it."""
    stride, pad, dilation, transposed, output_padding, groups = c["args"][4:10] \
        if c["aten"] == "aten::convolution_backward" else c["args"][3:9]
    if len(x_shape) != 4:
        return None, f"a {len(x_shape) - 2}-d convolution (the catalog's conv2d is 2-d)"
    if transposed or any(output_padding):
        return None, "a transposed convolution (the catalog's conv2d is not)"
    text = "{}x{}x{}x{}:{}x{}x{}".format(*x_shape, w_shape[0], *w_shape[2:])
    for name, value, default in (("stride", stride, 1), ("pad", pad, 0),
                                 ("dilation", dilation, 1)):
        h, w = _pair(value)
        if (h, w) != (default, default):
            text += f",{name}={h}" if h == w else f",{name}={h}x{w}"
    return text + (f",groups={groups}" if groups != 1 else ""), None


def _with_bias(x, w, bias, c):
    """x and w with the bias folded in exactly: x padded explicitly, and one more input channel
    per group, of ones, whose weight is the bias at the first tap (which always reads inside the
    padded image): each output gains the product bias x 1 in its sum. The shape text of the
    convolution the reference then computes."""
    stride, pad, dilation, _, _, groups = c["args"][3:9]
    ph, pw = _pair(pad)
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, channels, h, width = x.shape
    x = x.reshape(n, groups, channels // groups, h, width)
    x = np.concatenate([x, np.ones((n, groups, 1, h, width))], axis=2)
    x = x.reshape(n, -1, h, width)
    extra = np.zeros((w.shape[0], 1, *w.shape[2:]))
    extra[:, 0, 0, 0] = bias
    w = np.concatenate([w, extra], axis=1)
    shape, _ = _conv_geometry({**c, "args": [*c["args"][:4], 0, *c["args"][5:]]}, x.shape,
                              w.shape)
    return x, w, shape


def _convolution(c):
    x, w, bias = c["args"][:3]
    shape, why = _conv_geometry(c, x.shape, w.shape)
    if why:
        return why
    out = _out(c, 0)
    if bias is None:
        return [("conv2d", {"x": x, "w": w}, out, (shape, shape))]
    x, w, folded = _with_bias(x, w, bias, c)
    return [("conv2d", {"x": x, "w": w}, out, (folded, shape))]


def _convolution_backward(c):
    dy, x, w = c["args"][:3]
    shape, why = _conv_geometry(c, x.shape, w.shape)
    if why:
        return why
    judged = [("conv2d_backward_data", {"dy": dy, "w": w}, _out(c, 0), (shape, shape)),
              ("conv2d_backward_filter", {"x": x, "dy": dy}, _out(c, 1), (shape, shape)),
              # the bias's gradient: the sum of dy over the batch and the positions, per filter
              ("linear_backward_bias", {"dy": _channels_last(dy)}, _out(c, 2))]
    return _present(judged)


OPS = {
    "aten::mm": _matmul,
    "aten::bmm": _matmul,
    "aten::addmm": _addmm,
    "aten::_softmax": _softmax("softmax"),
    "aten::_log_softmax": _softmax("log_softmax"),
    "aten::_softmax_backward_data": _softmax_backward("softmax_backward"),
    "aten::_log_softmax_backward_data": _softmax_backward("log_softmax_backward"),
    "aten::native_layer_norm": _layer_norm,
    "aten::native_layer_norm_backward": _layer_norm_backward,
    "aten::native_batch_norm": _batch_norm,
    "aten::_native_batch_norm_legit": _batch_norm,
    "aten::native_batch_norm_backward": _batch_norm_backward,
    "aten::relu": _activation("relu"),
    "aten::silu": _activation("silu"),
    "aten::gelu": _gelu(1, _activation),
    "aten::threshold_backward": _threshold_backward,
    "aten::silu_backward": _activation_backward("silu_backward"),
    "aten::gelu_backward": _gelu(2, _activation_backward, "_backward"),
    "aten::add": _elementwise("add"),
    "aten::add_": _elementwise("add"),
    "aten::mul": _elementwise("mul"),
    "aten::mul_": _elementwise("mul"),
    "aten::sum": _sum,
    "aten::mean": _mean,
    "aten::nll_loss_forward": _nll_loss,
    "aten::_to_copy": _cast,
    "aten::logsumexp": _logsumexp,
    "aten::linalg_vector_norm": _l2_norm(1, "ord"),
    "aten::norm": _l2_norm(1, "p"),
    "aten::convolution": _convolution,
    "aten::convolution_backward": _convolution_backward,
}


class Recorder(TorchDispatchMode):
    """Captures each op's name, module path, dtypes, inputs and outputs while it is active."""

    def __init__(self, model=None, samples=SAMPLES, budgets=None):
        super().__init__()
        self.captured = []
        self.not_judged = []
        self.settings = {}
        self.scaler = []  # one entry per scaler_step
        self.samples, self.budgets = samples, budgets
        self._names = {id(m): n for n, m in model.named_modules()} if model is not None else {}
        self._path, self._hooks, self._forward = [], [], {}
        self._count, self._judged, self._mirror = 0, None, None
        self._copy = _Copies()
        self._writes = {}  # ATen op -> the (position, name) of the arguments it writes to
        # The backward's module paths: the forward ops' autograd nodes, tagged (_tag) with the
        # module their op ran in, set `_backward` while they run.
        self._untagged, self._backward = None, ""

    def __enter__(self):
        self.settings = {**settings(), "devices": [], "autocast_in_modules": []}
        nn = torch.nn.modules.module
        self._hooks = [nn.register_module_forward_pre_hook(self._enter_module),
                       nn.register_module_forward_hook(self._leave_module)]
        return super().__enter__()

    def __exit__(self, *exc):
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        return super().__exit__(*exc)

    def _enter_module(self, module, _):
        self._path.append(self._names.get(id(module), type(module).__name__))
        state = _autocast()
        if state not in self.settings["autocast_in_modules"]:
            self.settings["autocast_in_modules"].append(state)

    def _leave_module(self, module, _, __):
        self._tag()
        self._path.pop()

    def _tag(self):
        """The autograd nodes of the last forward op (set once its dispatch returned) tagged
        with its module: while the backward runs a node, its ops are that module's."""
        if self._untagged is None:
            return
        path, tensors = self._untagged
        self._untagged = None
        for t in tensors:
            node = t.grad_fn
            if node is not None and "ampbench.module" not in node.metadata:
                node.metadata["ampbench.module"] = path
                node.register_prehook(lambda _, path=path: setattr(self, "_backward", path))
                node.register_hook(lambda _, __: setattr(self, "_backward", ""))

    def _forward_of(self, name, args):
        """What a backward op needs of its forward: softmax's input, layer norm's eps."""
        if name in ("aten::_softmax_backward_data", "aten::_log_softmax_backward_data"):
            return self._forward.get(_key(args[1]))
        if name == "aten::native_layer_norm_backward":
            return self._forward.get(_key(args[4]))
        return None

    def _remember(self, name, args, snapshot, outs):
        if name in ("aten::_softmax", "aten::_log_softmax"):
            self._forward[_key(outs[0])] = snapshot[0]
        elif name == "aten::native_layer_norm":
            self._forward[_key(outs[2])] = args[4]

    def _written(self, func, args, kwargs):
        """The tensors an op writes to (an in-place op's self, an out= argument)."""
        writes = self._writes.get(func)
        if writes is None:
            writes = self._writes[func] = [
                (i, a.name) for i, a in enumerate(func._schema.arguments)
                if a.alias_info is not None and a.alias_info.is_write]
        tensors = []
        for i, name in writes:
            a = args[i] if i < len(args) else kwargs.get(name)
            for t in (a if isinstance(a, (list, tuple)) else [a]):
                if isinstance(t, torch.Tensor):
                    tensors.append(t)
        return tensors

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        self._tag()
        # The inputs before the op runs (an in-place op overwrites them), converted when judged.
        snapshot = self._copy(list(args)) if name in OPS else None
        written = self._written(func, args, kwargs)
        if written:
            self._copy.written(written)
        out = func(*args, **kwargs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        tensors = [o for o in outs if isinstance(o, torch.Tensor)]
        module = "/".join(p for p in self._path if p) if self._path else self._backward
        if self._path and torch.is_grad_enabled():
            self._untagged = (module, tensors)
        entry = {"aten": name, "index": self._count, "module": module,
                 "input_dtypes": [str(a.dtype) for a in args if isinstance(a, torch.Tensor)],
                 "output_dtypes": [str(t.dtype) for t in tensors]}
        self._count += 1
        for t in tensors:
            if str(t.device) not in self.settings["devices"]:
                self.settings["devices"].append(str(t.device))
        floating = [t for t in tensors if t.is_floating_point()]
        if not floating:
            reason = "no floating-point output" if tensors else "no tensor output"
            self.not_judged.append({**entry, "reason": reason})
        elif name not in OPS:
            self.not_judged.append({**entry, "reason": _why_not(func)})
        elif any(t.dtype not in FORMATS for t in floating):
            self.not_judged.append({**entry, "reason": f"output dtype {floating[0].dtype}"})
        else:
            self._remember(name, args, snapshot, outs)
            kept = [self._copy(o) if isinstance(o, torch.Tensor) and o.is_floating_point()
                    else None for o in outs]
            self.captured.append({**entry, "args": snapshot, "kwargs": kwargs, "outputs": kept,
                                  "formats": [FORMATS[o.dtype] if o is not None else None
                                              for o in kept],
                                  "forward": self._forward_of(name, args)})
        return out

    def scaler_step(self, scaler, optimizer, format=None):
        """`scaler.step(optimizer)` and `scaler.update()` of a torch GradScaler, observed: its
        scale, growth tracker and whether it skipped the step, each checked against ampbench's
        LossScaler fed the same scaled gradients (`agrees`), and the gradients' underflow()
        with and without the scale. Appends the iteration to `rec.scaler`; returns it."""
        with _paused(self):
            grads = [p.grad for group in optimizer.param_groups for p in group["params"]
                     if p.grad is not None]
            scale = scaler.get_scale()
            scaled = [_array(g).astype(np.float32).ravel() for g in grads]
            fractions = underflow(grads, scale, format)
            scaler.step(optimizer)
            found_inf = sum(v.item() for v in scaler._found_inf_per_device(optimizer).values())
            scaler.update()
            if self._mirror is None:
                self._mirror = _core.LossScaler(
                    init_scale=scale, growth_factor=scaler.get_growth_factor(),
                    backoff_factor=scaler.get_backoff_factor(),
                    growth_interval=scaler.get_growth_interval())
            mirror_ran = self._mirror.step(scaled)
            self._mirror.update()
        torch_state = {"scale": scaler.get_scale(), "growth_tracker": scaler._get_growth_tracker(),
                       "skipped": found_inf > 0}
        mirror = {"scale": self._mirror.scale, "growth_tracker": self._mirror.growth_tracker,
                  "skipped": not mirror_ran}
        entry = {"iteration": len(self.scaler), "scale_before": scale, **torch_state,
                 "ampbench": mirror, "agrees": mirror == torch_state, "underflow": fractions}
        self.scaler.append(entry)
        return entry

    def _judge_one(self, entry, op, operands, output, fmt, geometry=None):
        count = output.size
        samples = self.samples if self.samples and count > self.samples else 0
        ref = _core.reference(op, operands, fmt, samples=samples, seed=entry["index"],
                              shape=geometry[0] if geometry else None)
        summary = _core.metrics(output.ravel()[ref["positions"]], ref["rounded"].ravel(),
                                ref["nearest"].ravel(), fmt, op=op, policy=f"torch-{fmt}",
                                budgets=self.budgets)
        return {**entry, "op": op, "shape": geometry[1] if geometry else ref["shape"],
                "format": fmt, "outputs": count,
                "judged_positions": len(ref["positions"]), **summary}

    def _mapped(self):
        """Each captured op with its catalog ops, operands and outputs (or why it has none)."""
        for c in self.captured:
            entry = {k: c[k] for k in ("aten", "index", "module", "input_dtypes", "output_dtypes")}
            with _paused(self):
                yield entry, OPS[c["aten"]]({**c, "args": _convert(c["args"]),
                                             "outputs": _convert(c["outputs"]),
                                             "forward": _convert(c["forward"])})

    def emulate(self, policy):
        """Each judged op run again by ampbench's emulation under `policy` (eval()) on the
        operands PyTorch's kernel got, at every element: `torch` and `emulation`, the metrics of
        PyTorch's output and of the emulation's against the correctly rounded reference, with
        the a-priori bound of the policy's formats where the op has one (`bound_ratio`), and
        `distance`, the ulps between the two outputs (`max_ulp`, `mean_ulp`, its histogram).
        An op the emulation cannot run, or whose output format under the policy is not its
        dtype's, has only `why`; ops judge() cannot judge are left out."""
        compared = []
        for entry, mapped in self._mapped():
            if isinstance(mapped, str):
                continue
            for op, operands, (output, fmt), *geometry in mapped:
                if geometry and "," in geometry[0][0]:
                    compared.append({**entry, "op": op, "shape": geometry[0][1], "policy": policy,
                                     "why": "eval() takes a convolution's geometry from its "
                                            "operands (stride 1, no padding or dilation, one "
                                            f"group), not {geometry[0][0]}"})
                    continue
                try:
                    e = _core.eval(op, policy, operands)
                except (ValueError, RuntimeError) as error:  # arguments the op cannot take
                    compared.append({**entry, "op": op, "policy": policy, "why": f"{op}: {error}"})
                    continue
                row = {**entry, "op": op, "shape": geometry[0][1] if geometry else e["shape"],
                       "format": fmt, "policy": policy,
                       "inputs_rounded": e["inputs_rounded"]}
                if e["formats"]["output"] != fmt:
                    compared.append({**row, "why": f"the policy's output is "
                                                   f"{e['formats']['output']}, PyTorch's {fmt}"})
                    continue
                rounded, exact = e["reference"].ravel(), e["exact"].ravel()
                bound = None if e["bound"] is None else e["bound"].ravel()
                computed = output.ravel()
                compared.append({
                    **row,
                    "torch": _core.metrics(computed, rounded, exact, fmt, bounds=bound),
                    "emulation": _core.metrics(e["output"].ravel(), rounded, exact, fmt,
                                               bounds=bound),
                    "distance": _core.metrics(computed, e["output"].ravel(), exact, fmt)})
        return compared

    def judge(self):
        """Each captured op's outputs against their correctly rounded references in their
        formats: the metrics of ampbench.metrics with the op, module, dtypes, shape and the
        breaches of the budgets; ops whose arguments the catalog cannot take move to not_judged
        with the reason."""
        if self._judged is not None:
            return self._judged
        judged = []
        for entry, mapped in self._mapped():
            if isinstance(mapped, str):
                self.not_judged.append({**entry, "reason": mapped})
                continue
            for op, operands, (output, fmt), *geometry in mapped:
                try:
                    judged.append(self._judge_one(entry, op, operands, output, fmt, *geometry))
                except (ValueError, RuntimeError) as e:  # arguments the reference cannot take
                    self.not_judged.append({**entry, "reason": f"{op}: {e}"})
        self._judged = judged
        return judged

    def records(self, policy="torch"):
        """The judged ops as audit records that ampbench.result() turns into an
        ampbench.result/1 record (distribution "recorded", seed the op's capture index): FAIL
        where a budget breaks."""
        out = []
        for j in self.judge():
            record = {k: v for k, v in j.items()
                      if k not in ("aten", "index", "module", "input_dtypes", "output_dtypes",
                                   "format", "judged_positions")}
            record.update({"policy": f"{policy}-{j['format']}", "backend": "torch",
                           "dist": "recorded", "seed": j["index"],
                           "reference_sample": j["judged_positions"],
                           "status": "FAIL" if j["breaches"] else "PASS"})
            out.append(record)
        return out

    def result(self, suite="torch", policy="torch"):
        """An ampbench.result/1 record of the judged ops, with the PyTorch settings (and the
        scaler's iterations) in its environment (`torch`) and the ops not judged in `not_run`."""
        document = _core.result(self.records(policy), suite=suite)
        document["environment"]["torch"] = self.settings
        document["not_run"] = [{"key": f"torch/{n['aten']}/#{n['index']}", "why": n["reason"]}
                               for n in self.not_judged]
        if self.scaler:
            document["environment"]["torch"]["scaler"] = self.scaler
        return document


def record(model=None, samples=SAMPLES, budgets=None):
    """A recorder to use as a context manager around the model's forward, loss and backward.
    `model` names the module path of each op (its named_modules(); else their class names);
    outputs above `samples` elements are judged at that many positions (0: all); `budgets`, a
    budgets file whose limits the judged ops are checked against (always: no NaN/Inf mismatch,
    no broken a-priori bound)."""
    return Recorder(model, samples, budgets)
