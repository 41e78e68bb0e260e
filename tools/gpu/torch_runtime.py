#!/usr/bin/env python3
"""Runs and times goopt's ONNX files with PyTorch on a CUDA GPU: a measurer for `goopt calibrate
--measurer` and `goopt superopt --measurer` (the protocol of tools/ort/measure_ops.js), and a timer
of two whole models (original against rewritten), so that a cost table and a measured gain can come
from a GPU where onnxruntime has no GPU build.

  python3 torch_runtime.py [--mode graph|eager] --environment [--threads N] [--out FILE.json]
  python3 torch_runtime.py [--mode graph|eager] MANIFEST.json --out RESULT.json
  python3 torch_runtime.py [--mode graph|eager] time A.onnx B.onnx [--repeat R] [--out RESULT.json]

The runtime is a small ONNX interpreter over torch (fp32, NCHW; PyTorch's defaults, under which cuDNN's
convolutions may use TF32 and matrix products do not): constant subgraphs (a product or
concatenation of weights) are folded once when a model is loaded, as every runtime folds them; the
rest runs one torch call per node. --mode graph (the default) times CUDA-graph replays: K calls of a
model captured back to back in one graph, so a time is the GPU's, kernel launches included, with no
Python in it (what a runtime that replays a captured graph pays; TASO timed its kernels back to back
too). --mode eager times the Python calls themselves, one synchronisation per K calls.

Every one-op model is also run by onnxruntime (CPU) where it is installed, and a model whose outputs
differ from it by more than 1e-3 (relative to the largest) is reported as an error, never measured.
"""
import json
import math
import os
import statistics
import sys
import time

try:
    import numpy as np
except ImportError:  # said on use (torch_module), after the flags are checked
    np = None
try:
    import onnx
    from onnx import numpy_helper
except ImportError:  # said on use
    onnx = None


def fail(message):
    sys.stderr.write(f"torch_runtime.py: error: {message}\n")
    sys.exit(1)


def torch_module():
    if np is None:
        fail("numpy is not installed")
    try:
        import torch
    except ImportError as e:
        fail(f"PyTorch is not installed: {e}")
    if not torch.cuda.is_available():
        fail("PyTorch sees no CUDA device")
    return torch


# ---------------------------------------------------------------------------------------------
# The interpreter: an ONNX graph compiled into a list of torch calls


def attribute(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def ints(value):
    return [int(v) for v in np.asarray(value).reshape(-1)]


def scalar(value):
    """A scalar input (ONNX allows a 0-d or a one-element tensor)."""
    return float(np.asarray(value).reshape(-1)[0])


def torch_pads(pads):
    """ONNX pads (all begins, then all ends) as F.pad wants them (last dimension first)."""
    n = len(pads) // 2
    out = []
    for d in reversed(range(n)):
        out += [pads[d], pads[d + n]]
    return out


class Model:
    """An ONNX model on the GPU: `run(feeds)` returns its outputs (a list of tensors)."""

    def __init__(self, torch, path):
        if onnx is None:
            raise RuntimeError("the onnx Python package is not installed")
        self.torch = torch
        self.F = torch.nn.functional
        model = onnx.load(path)
        g = model.graph
        self.device = torch.device("cuda")
        consts = {}
        for init in g.initializer:
            consts[init.name] = numpy_helper.to_array(init)
        init_names = set(consts)
        self.inputs = [(i.name, i.type.tensor_type) for i in g.input if i.name not in init_names]
        self.outputs = [o.name for o in g.output]
        # the values known when the model loads: initializers, Constant nodes and what is computed
        # from them alone (folded here, once)
        known = {k: torch.from_numpy(np.array(v)).to(self.device) for k, v in consts.items()}
        self.steps = []
        for node in g.node:
            if node.op_type == "Constant":
                value = numpy_helper.to_array(attribute(node, "value"))
                known[node.output[0]] = torch.from_numpy(np.array(value)).to(self.device)
                continue
            fn = self.compile(node, known)
            if all((not n) or n in known for n in node.input):
                with torch.no_grad():
                    outs = fn({k: known[k] for k in node.input if k})
                for name, t in zip(node.output, outs):
                    if name:
                        known[name] = t
            else:
                self.steps.append((fn, list(node.input), list(node.output)))
        self.known = known

    def const(self, known, name):
        if name not in known:
            raise RuntimeError(f"input '{name}' must be a constant here")
        return known[name].cpu().numpy()

    def compile(self, node, known):
        """A function from the node's input values (by name) to its outputs (a list)."""
        torch, F = self.torch, self.F
        op = node.op_type
        ins = list(node.input)

        def unary(f):
            return lambda v: [f(v[ins[0]])]

        def binary(f):
            return lambda v: [f(v[ins[0]], v[ins[1]])]

        if op == "Add":
            return binary(torch.add)
        if op == "Sub":
            return binary(torch.sub)
        if op == "Mul":
            return binary(torch.mul)
        if op == "Div":
            return binary(torch.div)
        if op == "Pow":
            return binary(torch.pow)
        if op == "MatMul":
            return binary(torch.matmul)
        if op == "Relu":
            return unary(torch.relu)
        if op == "Sigmoid":
            return unary(torch.sigmoid)
        if op == "Tanh":
            return unary(torch.tanh)
        if op == "Sqrt":
            return unary(torch.sqrt)
        if op == "Erf":
            return unary(torch.erf)
        if op == "Log":
            return unary(torch.log)
        if op == "Exp":
            return unary(torch.exp)
        if op == "Neg":
            return unary(torch.neg)
        if op == "Identity":
            return lambda v: [v[ins[0]]]
        if op == "Gemm":
            alpha, beta = attribute(node, "alpha", 1.0), attribute(node, "beta", 1.0)
            ta, tb = attribute(node, "transA", 0), attribute(node, "transB", 0)

            def gemm(v):
                a, b = v[ins[0]], v[ins[1]]
                y = alpha * torch.matmul(a.t() if ta else a, b.t() if tb else b)
                return [y + beta * v[ins[2]] if len(ins) > 2 and ins[2] else y]

            return gemm
        if op == "Softmax":
            axis = attribute(node, "axis", -1)
            return lambda v: [torch.softmax(v[ins[0]], dim=axis)]
        if op == "Transpose":
            perm = attribute(node, "perm")
            return lambda v: [v[ins[0]].permute(*perm).contiguous() if perm else v[ins[0]].t().contiguous()]
        if op == "Concat":
            axis = attribute(node, "axis")
            return lambda v: [torch.cat([v[n] for n in ins], dim=axis)]
        if op == "Split":
            axis = attribute(node, "axis", 0)
            sizes = attribute(node, "split")
            if sizes is None and len(ins) > 1 and ins[1]:
                sizes = ints(self.const(known, ins[1]))
            count = len(node.output)

            def split(v):
                x = v[ins[0]]
                s = sizes if sizes is not None else [x.shape[axis] // count] * count
                return [t.contiguous() for t in torch.split(x, list(s), dim=axis)]

            return split
        if op == "Reshape":
            shape = ints(self.const(known, ins[1]))

            def reshape(v):
                x = v[ins[0]]
                target = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
                return [x.reshape(target)]

            return reshape
        if op == "Flatten":
            axis = attribute(node, "axis", 1)

            def flatten(v):
                x = v[ins[0]]
                a = axis if axis >= 0 else axis + x.dim()
                return [x.reshape(int(np.prod(x.shape[:a], dtype=np.int64)), -1)]

            return flatten
        if op in ("ReduceMean", "ReduceSum", "ReduceMax"):
            axes = attribute(node, "axes")
            if axes is None and len(ins) > 1 and ins[1]:
                axes = ints(self.const(known, ins[1]))
            keep = bool(attribute(node, "keepdims", 1))

            def reduce(v):
                x = v[ins[0]]
                dims = list(axes) if axes else list(range(x.dim()))
                if op == "ReduceMean":
                    return [x.mean(dim=dims, keepdim=keep)]
                if op == "ReduceSum":
                    return [x.sum(dim=dims, keepdim=keep)]
                return [torch.amax(x, dim=dims, keepdim=keep)]

            return reduce
        if op == "Slice":
            starts, ends = ints(self.const(known, ins[1])), ints(self.const(known, ins[2]))
            axes = ints(self.const(known, ins[3])) if len(ins) > 3 and ins[3] else list(range(len(starts)))
            steps = ints(self.const(known, ins[4])) if len(ins) > 4 and ins[4] else [1] * len(starts)

            def slice_(v):
                x = v[ins[0]]
                index = [slice(None)] * x.dim()
                for s, e, a, st in zip(starts, ends, axes, steps):
                    if st != 1:
                        raise RuntimeError("Slice with a step other than 1")
                    n = x.shape[a]
                    s = max(0, min(n, s + n if s < 0 else s))
                    e = max(0, min(n, e + n if e < 0 else e))
                    index[a] = slice(s, e)
                return [x[tuple(index)].contiguous()]

            return slice_
        if op == "Gather":
            axis = attribute(node, "axis", 0)

            def gather(v):
                x, idx = v[ins[0]], v[ins[1]].long()
                a = axis if axis >= 0 else axis + x.dim()
                flat = torch.where(idx < 0, idx + x.shape[a], idx).reshape(-1)
                y = torch.index_select(x, a, flat)
                return [y.reshape(list(x.shape[:a]) + list(idx.shape) + list(x.shape[a + 1:]))]

            return gather
        if op == "Clip":
            lo = scalar(self.const(known, ins[1])) if len(ins) > 1 and ins[1] else None
            hi = scalar(self.const(known, ins[2])) if len(ins) > 2 and ins[2] else None
            return lambda v: [torch.clamp(v[ins[0]], min=lo, max=hi)]
        if op == "Pad":
            pads = ints(self.const(known, ins[1]))
            value = scalar(self.const(known, ins[2])) if len(ins) > 2 and ins[2] else 0.0
            mode = attribute(node, "mode", b"constant")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            if mode != "constant":
                raise RuntimeError(f"Pad mode {mode}")
            p = torch_pads(pads)
            return lambda v: [F.pad(v[ins[0]], p, value=value)]
        if op == "Conv":
            strides = attribute(node, "strides", [1, 1])
            dilations = attribute(node, "dilations", [1, 1])
            group = attribute(node, "group", 1)
            pads = attribute(node, "pads", [0] * 2 * len(strides))
            auto_pad = attribute(node, "auto_pad", b"NOTSET")
            if auto_pad not in (b"NOTSET", "NOTSET"):
                raise RuntimeError(f"Conv auto_pad {auto_pad}")
            n = len(strides)
            symmetric = all(pads[d] == pads[d + n] for d in range(n))

            def conv(v):
                x = v[ins[0]]
                bias = v[ins[2]] if len(ins) > 2 and ins[2] else None
                if symmetric:
                    return [F.conv2d(x, v[ins[1]], bias, strides, pads[:n], dilations, group)]
                return [F.conv2d(F.pad(x, torch_pads(pads)), v[ins[1]], bias, strides, 0, dilations, group)]

            return conv
        if op in ("MaxPool", "AveragePool"):
            kernel = attribute(node, "kernel_shape")
            strides = attribute(node, "strides", [1] * len(kernel))
            pads = attribute(node, "pads", [0] * 2 * len(kernel))
            ceil = bool(attribute(node, "ceil_mode", 0))
            include = bool(attribute(node, "count_include_pad", 0))
            n = len(kernel)
            if all(pads[d] == pads[d + n] for d in range(n)):
                if op == "MaxPool":
                    return lambda v: [F.max_pool2d(v[ins[0]], kernel, strides, pads[:n], ceil_mode=ceil)]
                return lambda v: [F.avg_pool2d(v[ins[0]], kernel, strides, pads[:n], ceil, include)]
            # asymmetric pads (SAME padding of an even total): pad first, then pool without pads; an
            # average that leaves the pads out of its count divides by a pooled mask of the real cells
            p = torch_pads(pads)
            if op == "MaxPool":
                return lambda v: [F.max_pool2d(F.pad(v[ins[0]], p, value=-math.inf), kernel, strides, 0, ceil_mode=ceil)]

            def average(v):
                x = v[ins[0]]
                total = F.avg_pool2d(F.pad(x, p), kernel, strides, 0, ceil, True)
                if include:
                    return [total]
                mask = F.pad(torch.ones_like(x[:1, :1]), p)
                return [total / F.avg_pool2d(mask, kernel, strides, 0, ceil, True)]

            return average
        if op == "GlobalAveragePool":
            return lambda v: [v[ins[0]].mean(dim=list(range(2, v[ins[0]].dim())), keepdim=True)]
        if op == "BatchNormalization":
            eps = attribute(node, "epsilon", 1e-5)
            return lambda v: [F.batch_norm(v[ins[0]], v[ins[3]], v[ins[4]], v[ins[1]], v[ins[2]], False, 0.0, eps)]
        if op == "LayerNormalization":
            axis = attribute(node, "axis", -1)
            eps = attribute(node, "epsilon", 1e-5)

            def layer_norm(v):
                x = v[ins[0]]
                a = axis if axis >= 0 else axis + x.dim()
                w = v[ins[1]]
                b = v[ins[2]] if len(ins) > 2 and ins[2] else None
                return [F.layer_norm(x, list(x.shape[a:]), w, b, eps)]

            return layer_norm
        raise RuntimeError(f"no torch form of ONNX op {op}")

    def draw_feeds(self, seed=1):
        """Random inputs, drawn once: floats uniform in [-1, 1], integers 0 or 1."""
        rng = np.random.default_rng(seed)
        feeds = {}
        for name, tt in self.inputs:
            shape = [d.dim_value for d in tt.shape.dim]
            if any(d.dim_param or d.dim_value <= 0 for d in tt.shape.dim):
                raise RuntimeError(f"input '{name}' has a symbolic dimension")
            np_type = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
            if np.issubdtype(np_type, np.floating):
                a = rng.uniform(-1, 1, size=shape).astype(np_type)
            else:
                a = (rng.uniform(0, 1, size=shape) < 0.5).astype(np_type)
            feeds[name] = a
        return feeds

    def run(self, feeds):
        v = dict(self.known)
        v.update(feeds)
        for fn, ins, outs in self.steps:
            results = fn(v)
            for name, t in zip(outs, results):
                if name:
                    v[name] = t
        return [v[o] for o in self.outputs]


# ---------------------------------------------------------------------------------------------
# Timing


class Timed:
    """A model with its inputs on the GPU, ready to be timed `calls` calls at a time."""

    def __init__(self, torch, model, feeds, mode, calls, warmup):
        self.torch, self.model, self.mode, self.calls = torch, model, mode, calls
        self.feeds = {k: torch.from_numpy(a).to(model.device) for k, a in feeds.items()}
        with torch.no_grad():
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(max(1, warmup)):
                    model.run(self.feeds)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            if mode == "graph":
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    for _ in range(calls):
                        model.run(self.feeds)
                self.graph.replay()
                torch.cuda.synchronize()

    def once(self):
        """Seconds per call, over one batch of `calls` calls."""
        torch = self.torch
        if self.mode == "graph":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            self.graph.replay()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0 / self.calls
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            for _ in range(self.calls):
                self.model.run(self.feeds)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / self.calls


def reference_outputs(path, feeds):
    """onnxruntime's (CPU) outputs of the model, or None where onnxruntime is not installed."""
    try:
        import onnxruntime
    except ImportError:
        return None
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def max_rel_diff(ours, theirs):
    worst = 0.0
    for a, b in zip(ours, theirs):
        a = a.detach().float().cpu().numpy().astype(np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return math.inf
        scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-6)
        d = float(np.max(np.abs(a - b))) / scale if b.size else 0.0
        if not math.isfinite(d):
            return math.inf
        worst = max(worst, d)
    return worst


def environment(torch, mode, threads):
    props = torch.cuda.get_device_properties(0)
    return {
        "runtime": f"torch-cuda-{mode}",
        "version": f"{torch.__version__} cuda {torch.version.cuda}",
        "threads": threads,
        "cpu": props.name,
        "cores": props.multi_processor_count,
    }


def summary(times):
    times = sorted(times)
    return {"median_seconds": statistics.median(times), "min_seconds": times[0], "max_seconds": times[-1]}


def measure(torch, manifest_path, mode):
    """The measure_ops.js protocol: every model of the manifest timed in interleaved rounds."""
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{manifest_path}: {e}")
    for key in ("threads", "repetitions", "warmup"):
        if not isinstance(manifest.get(key), int) or manifest[key] < (0 if key == "warmup" else 1):
            fail(f'{manifest_path}: "{key}" is {json.dumps(manifest.get(key))}: expected a count')
    if not isinstance(manifest.get("models"), list):
        fail(f'{manifest_path}: "models" is not an array')
    base = os.path.dirname(os.path.abspath(manifest_path))
    calls = int(os.environ.get("GOOPT_TORCH_CALLS", "20"))
    open_models, results = [], {}
    for m in manifest["models"]:
        path = os.path.join(base, m["file"])
        try:
            model = Model(torch, path)
            feeds = model.draw_feeds()
            reference = reference_outputs(path, feeds)
            if reference is not None:
                with torch.no_grad():
                    d = max_rel_diff(model.run({k: torch.from_numpy(a).cuda() for k, a in feeds.items()}), reference)
                if not d <= 1e-3:
                    raise RuntimeError(f"outputs differ from onnxruntime's by {d:.3g} (relative)")
            open_models.append((m["id"], Timed(torch, model, feeds, mode, calls, manifest["warmup"]), []))
        except Exception as e:  # a model this runtime cannot run is an error result, the rest go on
            results[m["id"]] = {"id": m["id"], "error": str(e).split("\n")[0]}
            torch.cuda.synchronize()
    for _ in range(manifest["repetitions"]):
        for _, timed, times in open_models:
            times.append(timed.once())
    for mid, _, times in open_models:
        results[mid] = {"id": mid, **summary(times)}
    report = environment(torch, mode, manifest["threads"])
    report["results"] = [results[m["id"]] for m in manifest["models"]]
    return report


def time_two(torch, a_path, b_path, repeat, mode):
    """Two whole models in `repeat` interleaved rounds (order alternating), their outputs compared."""
    calls = int(os.environ.get("GOOPT_TORCH_CALLS", "10"))
    a, b = Model(torch, a_path), Model(torch, b_path)
    feeds = a.draw_feeds()
    missing = [n for n, _ in b.inputs if n not in feeds]
    if missing:
        fail(f"{b_path} has inputs {missing} that {a_path} has not")
    with torch.no_grad():
        on_gpu = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
        diff = max_rel_diff(b.run({n: on_gpu[n] for n, _ in b.inputs}), [t.cpu().numpy() for t in a.run(on_gpu)])
    ta = Timed(torch, a, feeds, mode, calls, 5)
    tb = Timed(torch, b, {n: feeds[n] for n, _ in b.inputs}, mode, calls, 5)
    ra, rb = [], []
    for r in range(repeat):
        if r % 2 == 0:
            ra.append(ta.once())
            rb.append(tb.once())
        else:
            rb.append(tb.once())
            ra.append(ta.once())
    report = environment(torch, mode, 1)
    gains = sorted(1 - y / x for x, y in zip(ra, rb))
    report["runs"] = [{
        "reference": a_path, "other": b_path, "reference_ms": [x * 1e3 for x in ra], "other_ms": [y * 1e3 for y in rb],
        "reference_median_ms": statistics.median(ra) * 1e3, "other_median_ms": statistics.median(rb) * 1e3,
        "median_gain": statistics.median(gains), "max_rel_diff": diff if math.isfinite(diff) else None,
        "nodes": [len(a.steps), len(b.steps)],
    }]
    return report


def main(argv):
    mode, out, threads, repeat = "graph", None, 1, 30
    positional, want_environment = [], False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--mode", "--out", "--threads", "--repeat"):
            if i + 1 >= len(argv):
                fail(f"{arg} needs a value")
            value = argv[i + 1]
            i += 2
            if arg == "--mode":
                if value not in ("graph", "eager"):
                    fail(f"--mode {value}: expected graph or eager")
                mode = value
            elif arg == "--out":
                out = value
            else:
                try:
                    n = int(value)
                except ValueError:
                    n = 0
                if n < 1:
                    fail(f"{arg} {value}: expected a count of at least 1")
                threads, repeat = (n, repeat) if arg == "--threads" else (threads, n)
            continue
        if arg == "--environment":
            want_environment = True
        else:
            positional.append(arg)
        i += 1
    torch = torch_module()
    if want_environment:
        report = environment(torch, mode, threads)
    elif positional[:1] == ["time"] and len(positional) == 3:
        report = time_two(torch, positional[1], positional[2], repeat, mode)
    elif len(positional) == 1:
        report = measure(torch, positional[0], mode)
    else:
        fail("usage: torch_runtime.py [--mode graph|eager] (--environment | MANIFEST.json --out RESULT.json | "
             "time A.onnx B.onnx [--repeat R])")
    text = json.dumps(report) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv[1:])
