"""Small ONNX models, one per op form that ``polyeng.onnx.load`` reads (SPEC §11), with the inputs
to call them on.

``SUPPORTED`` models must run and match the reference; ``UNSUPPORTED`` ones must be refused at
load, naming their bad nodes; ``EITHER`` ones hold forms polyeng may run or refuse, but never
run wrongly. A model with a named dim carries inputs at two (or three) sizes of it, so one
loaded graph is called at several sizes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from onnx import TensorProto, checker, defs, helper, numpy_helper, shape_inference

F16, F32, F64, I32, I64, BOOL = np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_
INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
RNG = np.random.default_rng(20240517)
NEWEST_OPSET = defs.onnx_opset_version()   # polyeng reads opsets 13 up to this one


@dataclass(frozen=True)
class Case:
    """A model and the calls to compare: ``calls`` holds one tuple of inputs (model input order) per call."""
    name: str
    model: object
    calls: tuple
    rtol: float = 1e-5
    atol: float = 1e-6
    bad: tuple = ()                  # (op_type, node name) of each node load must refuse


# ---------------------------------------------------------------- building blocks

def node(op, inputs, outputs, name=None, **attrs):
    return helper.make_node(op, list(inputs), list(outputs), name=name or f"{op.lower()}_{outputs[0] or 'n'}",
                            **attrs)


def value(name, dtype, shape=None):
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)


def tensor(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def constant(name, array):
    """A Constant node holding ``array`` (0-d allowed)."""
    return helper.make_node("Constant", [], [name], name=f"const_{name}", value=tensor(name, array))


def build(nodes, inputs, outputs, inits=None, opset=17, value_info=()):
    """A checked model; ``inputs``/``outputs`` are (name, dtype[, shape]) with str dims named."""
    graph = helper.make_graph(
        list(nodes), "case", [value(*spec) for spec in inputs],
        [value(*spec) for spec in outputs],
        initializer=[tensor(k, v) for k, v in (inits or {}).items()], value_info=list(value_info))
    model = helper.make_model_gen_version(graph, opset_imports=[helper.make_opsetid("", opset)])
    # graph outputs need a shape: take the inferred one, leaving intermediate values undeclared
    inferred = shape_inference.infer_shapes(model)
    for declared, found in zip(model.graph.output, inferred.graph.output):
        if not declared.type.tensor_type.HasField("shape"):
            declared.CopyFrom(found)
    checker.check_model(model, full_check=True)
    return model


def randn(*shape, dtype=F32, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def uniform(low, high, *shape, dtype=F32):
    return RNG.uniform(low, high, shape).astype(dtype)


def ints(high, *shape, dtype=I64, low=0):
    return RNG.integers(low, high, shape).astype(dtype)


def concrete(shape, sizes):
    return tuple(sizes[d] if isinstance(d, str) else d for d in shape)


N23 = ({"N": 2}, {"N": 3})


def calls(shapes_per_call, makers):
    """Inputs for each call: ``shapes_per_call`` is a list of tuples of shapes, ``makers`` one maker per input."""
    return tuple(tuple(make(shape) for make, shape in zip(makers, shapes)) for shapes in shapes_per_call)


def f(dtype=F32, scale=1.0):
    return lambda shape: randn(*shape, dtype=dtype, scale=scale)


def pos(low=0.5, high=2.0, dtype=F32):
    return lambda shape: uniform(low, high, *shape, dtype=dtype)


def away_from_zero(dtype=F32):
    return lambda shape: (uniform(0.5, 2.0, *shape) * np.where(RNG.random(shape) < 0.5, -1, 1)).astype(dtype)


def ids(high, dtype=I64, low=0):
    return lambda shape: ints(high, *shape, dtype=dtype, low=low)


def flags(shape):
    return RNG.random(shape) < 0.5


def case(name, nodes, inputs, outputs, makers, shapes_per_call, inits=None, opset=17, **options):
    model = build(nodes, inputs, outputs, inits=inits, opset=opset)
    return Case(name, model, calls(shapes_per_call, makers), **options)


# ---------------------------------------------------------------- arithmetic and activations

def arithmetic():
    out = []
    for op in ("Add", "Sub", "Mul", "Div", "Pow"):
        lhs = pos() if op == "Pow" else f()
        rhs = (lambda s: uniform(-2, 2, *s)) if op == "Pow" else away_from_zero() if op == "Div" else f()
        k = op.lower()
        out.append(case(f"{k}_broadcast", [node(op, ["a", "b"], ["y"])], [("a", F32, ["N", 3, 4]), ("b", F32, [3, 1])],
                        [("y", F32)], [lhs, rhs], [((2, 3, 4), (3, 1)), ((3, 3, 4), (3, 1))]))
        out.append(case(f"{k}_both_broadcast", [node(op, ["a", "b"], ["y"])],
                        [("a", F32, ["N", 1, 4]), ("b", F32, [3, 1])], [("y", F32)], [lhs, rhs],
                        [((2, 1, 4), (3, 1)), ((1, 1, 4), (3, 1))]))
        scalar = np.float32(2.0 if op == "Pow" else -1.5)
        out.append(case(f"{k}_const0d_left", [constant("c", scalar), node(op, ["c", "a"], ["y"])],
                        [("a", F32, ["N", 3])], [("y", F32)],
                        [pos() if op == "Pow" else away_from_zero()], [((2, 3),), ((4, 3),)]))
        out.append(case(f"{k}_init0d", [node(op, ["a", "s"], ["y"])], [("a", F32, ["N", 3])], [("y", F32)],
                        [lhs], [((2, 3),), ((3, 3),)], inits={"s": np.float32(0.5 if op == "Pow" else 3.0)}))
    out.append(case("pow_square_negative_base", [node("Pow", ["a", "e"], ["y"])], [("a", F32, ["N", 5])],
                    [("y", F32)], [f()], [((2, 5),), ((3, 5),)], inits={"e": np.float32(2.0)}))
    out.append(case("pow_int64_exponent", [node("Pow", ["a", "e"], ["y"])], [("a", F32, ["N", 5])], [("y", F32)],
                    [f()], [((2, 5),), ((3, 5),)], inits={"e": np.int64(3)}))
    for dtype, tol in ((F16, dict(rtol=1e-3, atol=1e-3)), (F64, dict(rtol=1e-12, atol=1e-14))):
        k = np.dtype(dtype).name
        out.append(case(f"add_mul_{k}", [node("Add", ["a", "b"], ["t"]), node("Mul", ["t", "c"], ["y"])],
                        [("a", dtype, ["N", 3, 4]), ("b", dtype, [4])], [("y", dtype)], [f(dtype), f(dtype)],
                        [((2, 3, 4), (4,)), ((3, 3, 4), (4,))], inits={"c": np.asarray(0.25, dtype)}, **tol))
        out.append(case(f"sub_div_{k}", [node("Sub", ["a", "b"], ["t"]), node("Div", ["t", "b"], ["y"])],
                        [("a", dtype, ["N", 4]), ("b", dtype, [4])], [("y", dtype)], [f(dtype), away_from_zero(dtype)],
                        [((2, 4), (4,)), ((3, 4), (4,))], **tol))
        for op, scale in (("Relu", 1.0), ("Tanh", 2.0), ("Sigmoid", 3.0), ("Exp", 1.5)):
            out.append(case(f"{op.lower()}_{k}", [node(op, ["x"], ["y"])], [("x", dtype, ["N", 6])], [("y", dtype)],
                            [f(dtype, scale)], [((2, 6),), ((3, 6),)], **tol))
    return out


def activations():
    out = []
    for op, make in (("Sqrt", pos(0.01, 9.0)), ("Erf", f(scale=2.0)), ("Tanh", f(scale=4.0)),
                     ("Sigmoid", f(scale=8.0)), ("Relu", f()), ("Exp", f(scale=3.0)), ("Abs", f(scale=3.0)),
                     ("Neg", f(scale=3.0)), ("Log", pos(0.01, 9.0)), ("Reciprocal", away_from_zero()),
                     ("HardSwish", f(scale=4.0)), ("LeakyRelu", f(scale=3.0))):
        out.append(case(op.lower(), [node(op, ["x"], ["y"])], [("x", F32, ["N", 3, 5])], [("y", F32)], [make],
                        [((2, 3, 5),), ((3, 3, 5),)]))
    out += hard_activations() + clips()
    for op in ("Softmax", "LogSoftmax"):
        for axis in (None, 1, -2, 0, 2):
            attrs = {} if axis is None else {"axis": axis}
            tag = "default" if axis is None else str(axis).replace("-", "m")
            out.append(case(f"{op.lower()}_axis_{tag}", [node(op, ["x"], ["y"], **attrs)], [("x", F32, ["N", 3, 5])],
                            [("y", F32)], [f(scale=3.0)], [((2, 3, 5),), ((3, 3, 5),)]))
    for approximate in (None, "none", "tanh"):
        attrs = {} if approximate is None else {"approximate": approximate}
        out.append(case(f"gelu_{approximate or 'default'}", [node("Gelu", ["x"], ["y"], **attrs)],
                        [("x", F32, ["N", 7])], [("y", F32)], [f(scale=3.0)], [((2, 7),), ((3, 7),)], opset=20))
    for axis, eps, bias in ((None, None, True), (-1, 1e-3, False), (1, 1e-2, True), (-2, None, False), (2, 1e-5, True)):
        attrs = {k: v for k, v in (("axis", axis), ("epsilon", eps)) if v is not None}
        norm = (3, 6) if axis in (1, -2) else (6,)     # x is (N, 3, 6)
        inits = {"scale": uniform(0.5, 1.5, *norm)}
        if bias:
            inits["bias"] = randn(*norm)
        tag = f"axis{axis}_eps{eps}_{'bias' if bias else 'nobias'}".replace("-", "m")
        out.append(case(f"layernorm_{tag}", [node("LayerNormalization", ["x", *inits], ["y"], **attrs)],
                        [("x", F32, ["N", 3, 6])], [("y", F32)], [f(scale=2.0)], [((2, 3, 6),), ((3, 3, 6),)],
                        inits=inits))
    return out


def hard_activations():
    """HardSigmoid as polyeng's hardsigmoid (alpha 1/6, beta 0.5) or written out (any other), LeakyRelu's
    alpha, and the activations on 16-bit and f64 inputs."""
    out = []
    for tag, attrs in (("default", {}), ("sixth", {"alpha": 1 / 6, "beta": 0.5}), ("other", {"alpha": 0.3, "beta": 0.4}),
                       ("negative_alpha", {"alpha": -0.25, "beta": 0.6})):
        out.append(case(f"hardsigmoid_{tag}", [node("HardSigmoid", ["x"], ["y"], **attrs)], [("x", F32, ["N", 3, 5])],
                        [("y", F32)], [f(scale=4.0)], [((2, 3, 5),), ((3, 3, 5),)]))
    out.append(case("leakyrelu_alpha", [node("LeakyRelu", ["x"], ["y"], alpha=0.2)], [("x", F32, ["N", 7])],
                    [("y", F32)], [f(scale=3.0)], [((2, 7),), ((3, 7),)]))
    for dtype, tol in ((F16, dict(rtol=1e-3, atol=1e-3)), (F64, dict(rtol=1e-12, atol=1e-14))):
        k = np.dtype(dtype).name
        # HardSwish is 1/6 exactly in polyeng (PyTorch's relu6(x + 3) / 6), the float32 alpha of its
        # ONNX function body in the reference: 3e-8 apart, more than f64's tolerance
        sixth = dict(rtol=1e-7, atol=1e-7) if dtype == F64 else tol
        out.append(case(f"hardswish_{k}", [node("HardSwish", ["x"], ["y"])], [("x", dtype, ["N", 6])], [("y", dtype)],
                        [f(dtype, 4.0)], [((2, 6),), ((3, 6),)], **sixth))
        for name, op, make, attrs in (("hardsigmoid", "HardSigmoid", f(dtype, 4.0), {}),
                                      ("leakyrelu", "LeakyRelu", f(dtype, 3.0), {"alpha": 0.1}),
                                      ("log", "Log", pos(0.01, 9.0, dtype), {}),
                                      ("reciprocal", "Reciprocal", away_from_zero(dtype), {})):
            out.append(case(f"{name}_{k}", [node(op, ["x"], ["y"], **attrs)], [("x", dtype, ["N", 6])], [("y", dtype)],
                            [make], [((2, 6),), ((3, 6),)], **tol))
    return out


def scalar(value, dtype=F32):
    return lambda shape: np.asarray(value, dtype)


def clips():
    """Clip's optional min and max: constants (a number each), run-time 0-d tensors, either left out,
    both left out (the identity), min above max, integers folded at load time."""
    out = []
    x = [("x", F32, ["N", 3, 5])]
    sizes = [((2, 3, 5),), ((3, 3, 5),)]
    for tag, inputs, inits in (("min_max", ["x", "lo", "hi"], {"lo": np.float32(-0.5), "hi": np.float32(0.75)}),
                               ("min_only", ["x", "lo"], {"lo": np.float32(-0.25)}),
                               ("max_only", ["x", "", "hi"], {"hi": np.float32(0.5)}),
                               ("none", ["x"], {}),
                               ("min_above_max", ["x", "lo", "hi"], {"lo": np.float32(1.0), "hi": np.float32(-1.0)})):
        out.append(case(f"clip_const_{tag}", [node("Clip", inputs, ["y"])], x, [("y", F32)], [f(scale=2.0)], sizes,
                        inits=inits))
    out.append(case("clip_constant_nodes", [constant("lo", np.float32(-1.0)), constant("hi", np.float32(1.5)),
                                            node("Clip", ["x", "lo", "hi"], ["y"])], x, [("y", F32)], [f(scale=2.0)],
                    sizes))
    out.append(case("clip_runtime_bounds", [node("Clip", ["x", "lo", "hi"], ["y"])],
                    x + [("lo", F32, []), ("hi", F32, [])], [("y", F32)], [f(scale=2.0), scalar(-0.3), scalar(0.8)],
                    [((2, 3, 5), (), ()), ((3, 3, 5), (), ())]))
    out.append(case("clip_runtime_max_const_min", [node("Clip", ["x", "lo", "hi"], ["y"])], x + [("hi", F32, [])],
                    [("y", F32)], [f(scale=2.0), scalar(0.25)], [((2, 3, 5), ()), ((3, 3, 5), ())],
                    inits={"lo": np.float32(-0.75)}))
    out.append(case("clip_computed_bound", [node("ReduceMean", ["x"], ["m"], keepdims=0),
                                           node("Clip", ["x", "m"], ["y"])], x, [("y", F32)], [f(scale=2.0)], sizes))
    for dtype, tol in ((F16, dict(rtol=1e-3, atol=1e-3)), (F64, dict(rtol=1e-12, atol=1e-14))):
        k = np.dtype(dtype).name
        out.append(case(f"clip_const_{k}", [node("Clip", ["x", "lo", "hi"], ["y"])], [("x", dtype, ["N", 6])],
                        [("y", dtype)], [f(dtype, 2.0)], [((2, 6),), ((3, 6),)],
                        inits={"lo": np.asarray(-0.5, dtype), "hi": np.asarray(1.25, dtype)}, **tol))
        out.append(case(f"clip_runtime_{k}", [node("Clip", ["x", "", "hi"], ["y"])], [("x", dtype, ["N", 6]), ("hi", dtype, [])],
                        [("y", dtype)], [f(dtype, 2.0), scalar(0.4, dtype)], [((2, 6), ()), ((3, 6), ())], **tol))
    out.append(case("clip_int64_folded", [node("Clip", ["k", "lo", "hi"], ["c"]), node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT),
                                          node("Add", ["x", "cf"], ["y"])],
                    [("x", F32, ["N", 4])], [("y", F32)], [f()], [((2, 4),), ((3, 4),)],
                    inits={"k": np.array([-5, 1, 3, 10], I64), "lo": np.int64(0), "hi": np.int64(4)}))
    return out


# ---------------------------------------------------------------- matmul and gemm

def matmuls():
    out = []
    w = randn(4, 5)
    out.append(case("matmul_2d_const", [node("MatMul", ["x", "w"], ["y"])], [("x", F32, ["N", 4])], [("y", F32)],
                    [f()], [((2, 4),), ((3, 4),)], inits={"w": w}))
    out.append(case("matmul_3d_const", [node("MatMul", ["x", "w"], ["y"])], [("x", F32, ["N", 3, 4])], [("y", F32)],
                    [f()], [((2, 3, 4),), ((1, 3, 4),)], inits={"w": w}))
    out.append(case("matmul_vector_const", [node("MatMul", ["x", "v"], ["y"])], [("x", F32, ["N", 4])],
                    [("y", F32)], [f()], [((2, 4),), ((3, 4),)], inits={"v": randn(4)}))
    for name, a, b, sizes in (
            ("matmul_3d_dynamic", ["N", 3, 4], ["N", 4, 5], ({"N": 2}, {"N": 3})),
            ("matmul_4d_dynamic", ["N", 2, 3, 4], ["N", 2, 4, 5], ({"N": 2}, {"N": 1})),
            ("matmul_batch_broadcast", ["N", 1, 3, 4], [2, 4, 5], ({"N": 2}, {"N": 3})),
            ("matmul_2d_dynamic", ["M", 4], [4, "K"], ({"M": 2, "K": 3}, {"M": 3, "K": 5}))):
        out.append(case(name, [node("MatMul", ["a", "b"], ["y"])], [("a", F32, a), ("b", F32, b)], [("y", F32)],
                        [f(), f()], [(concrete(a, s), concrete(b, s)) for s in sizes]))
    gemms = (  # name, attrs, A shape, B shape, C or None
        ("gemm_plain", {}, ["N", 4], (4, 5), None),
        ("gemm_c_1d_alpha_beta", {"alpha": 0.5, "beta": 2.0}, ["N", 4], (4, 5), randn(5)),
        ("gemm_c_row_transb", {"transB": 1}, ["N", 4], (5, 4), randn(1, 5)),
        ("gemm_c_scalar", {"beta": 0.5}, ["N", 4], (4, 5), np.float32(1.25)),
        ("gemm_c_one_element", {}, ["N", 4], (4, 5), np.asarray([-0.5], F32)),
        ("gemm_transa", {"transA": 1, "alpha": 2.0}, [4, "N"], (4, 5), randn(5)),
        ("gemm_transa_transb", {"transA": 1, "transB": 1}, [4, "N"], (5, 4), None),
        ("gemm_c_full", {"beta": -1.0}, [3, 4], (4, 5), randn(3, 5)),
        ("gemm_c_column", {}, [3, 4], (4, 5), randn(3, 1)),
    )
    for name, attrs, a_shape, b_shape, c in gemms:
        inits = {"b": randn(*b_shape)}
        if c is not None:
            inits["c"] = c
        out.append(case(name, [node("Gemm", ["a", *inits], ["y"], **attrs)], [("a", F32, a_shape)], [("y", F32)],
                        [f()], [(concrete(a_shape, s),) for s in N23], inits=inits))
    out.append(case("gemm_b_dynamic", [node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=0.5)],
                    [("a", F32, ["N", 4]), ("b", F32, [5, 4])], [("y", F32)], [f(), f()],
                    [((2, 4), (5, 4)), ((3, 4), (5, 4))], inits={"c": randn(5)}))
    return out


# ---------------------------------------------------------------- pooling

def pooling():
    out = []
    maxpools = (  # name, x shape (named N), attrs
        ("maxpool_k3_s2_p1", ["N", 2, 7, 8], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
        ("maxpool_k2_default_strides", ["N", 2, 5, 6], dict(kernel_shape=[2, 2])),
        ("maxpool_dilations", ["N", 2, 7, 8], dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1])),
        ("maxpool_ceil_mode", ["N", 2, 7, 8], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
        ("maxpool_ceil_mode_pads", ["N", 2, 8, 7], dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1],
                                                         ceil_mode=1)),
        ("maxpool_rect_kernel", ["N", 2, 6, 9], dict(kernel_shape=[2, 3], strides=[1, 2], pads=[1, 0, 1, 0])),
        ("maxpool_3d", ["N", 2, 4, 5, 6], dict(kernel_shape=[2, 2, 2], strides=[2, 2, 2])),
        ("maxpool_3d_pads_dilations", ["N", 1, 5, 6, 7], dict(kernel_shape=[3, 2, 3], strides=[1, 2, 2],
                                                              pads=[1, 1, 1, 1, 1, 1], dilations=[1, 2, 1])),
        ("maxpool_3d_ceil_mode", ["N", 1, 5, 6, 7], dict(kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1)),
    )
    for name, shape, attrs in maxpools:
        # onnx shape inference misses the ceil-mode rule the runtimes follow (last window starts inside)
        y = ("y", F32, ["N", 2, 5, None]) if name == "maxpool_ceil_mode_pads" else ("y", F32)
        out.append(case(name, [node("MaxPool", ["x"], ["y"], **attrs)], [("x", F32, shape)], [y], [f()],
                        [(concrete(shape, s),) for s in N23]))
    avgpools = (
        ("avgpool_k3_s2_p1_include_pad", ["N", 2, 7, 8],
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
        ("avgpool_k3_s2_p1_exclude_pad", ["N", 2, 7, 8],
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0)),
        ("avgpool_k2_default", ["N", 2, 6, 7], dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("avgpool_ceil_mode_exclude_pad", ["N", 2, 7, 8],
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
        ("avgpool_ceil_mode_include_pad", ["N", 2, 8, 7],
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)),
        ("avgpool_ceil_mode_no_pads", ["N", 2, 7, 8], dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
        ("avgpool_3d", ["N", 2, 4, 6, 5], dict(kernel_shape=[2, 2, 2], strides=[2, 2, 1])),
        ("avgpool_3d_pads_include", ["N", 1, 5, 6, 7],
         dict(kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1], count_include_pad=1)),
    )
    for name, shape, attrs in avgpools:
        out.append(case(name, [node("AveragePool", ["x"], ["y"], **attrs)], [("x", F32, shape)], [("y", F32)], [f()],
                        [(concrete(shape, s),) for s in N23]))
    x = ["N", 2, 7, 8]
    for op, extra in (("MaxPool", {}), ("AveragePool", {"count_include_pad": 0}),
                      ("AveragePool", {"count_include_pad": 1})):
        name = f"{op.lower()}_asymmetric_pads" + ("_include" if extra.get("count_include_pad") else "")
        out.append(case(name, [node(op, ["x"], ["y"], name=f"{name}_node", kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[0, 1, 1, 2], **extra)],
                        [("x", F32, x)], [("y", F32)], [f()], [((2, 2, 7, 8),), ((3, 2, 7, 8),)]))
        for auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            if op == "MaxPool" and auto_pad == "SAME_LOWER":
                continue   # the reference evaluator gets it wrong: onnx_cases_conv.onnxruntime_only
            name = f"{op.lower()}_{auto_pad.lower()}" + ("_include" if extra.get("count_include_pad") else "")
            out.append(case(name, [node(op, ["x"], ["y"], name=f"{name}_node", kernel_shape=[3, 2], strides=[2, 2],
                                        auto_pad=auto_pad, **extra)],
                            [("x", F32, [2, 2, 7, 8])], [("y", F32)], [f()], [((2, 2, 7, 8),)]))
    for shape in (["N", 3, 5], ["N", 3, 4, 5], ["N", 2, 3, 4, 5]):
        out.append(case(f"globalavgpool_{len(shape) - 2}d", [node("GlobalAveragePool", ["x"], ["y"])],
                        [("x", F32, shape)], [("y", F32)], [f()], [(concrete(shape, s),) for s in N23]))
    return out


def reduce_means():
    out = []
    for opset in (13, 17):
        for axes, keepdims in (([1], 1), ([-1, 1], 0), (None, 1), (None, 0), ([0], 0)):
            attrs = {"keepdims": keepdims} | ({} if axes is None else {"axes": axes})
            tag = "all" if axes is None else "_".join(str(a).replace("-", "m") for a in axes)
            out.append(case(f"reducemean{opset}_axes_{tag}_keep{keepdims}", [node("ReduceMean", ["x"], ["y"], **attrs)],
                            [("x", F32, ["N", 3, 4])], [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], opset=opset))
    for axes, keepdims, noop in (([1], 0, 0), ([-1], 1, 0), ([0, 2], 1, 0), (None, 0, 0), (None, 1, 1),
                                 ([], 0, 1), ([], 1, 0)):
        inits = {} if axes is None else {"axes": np.asarray(axes, I64)}
        attrs = {"keepdims": keepdims} | ({"noop_with_empty_axes": noop} if noop else {})
        tag = "none" if axes is None else "empty" if not axes else "_".join(str(a).replace("-", "m") for a in axes)
        out.append(case(f"reducemean18_axes_{tag}_keep{keepdims}_noop{noop}",
                        [node("ReduceMean", ["x", *inits], ["y"], **attrs)], [("x", F32, ["N", 3, 4])],
                        [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], inits=inits, opset=18))
    out.append(case("reducemean18_axes_from_constant",
                    [constant("axes", np.asarray([2], I64)), node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)],
                    [("x", F32, ["N", 3, 4])], [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], opset=18))
    return out


# ---------------------------------------------------------------- resize

def resize_node(name, scales=None, sizes=None, roi=None, **attrs):
    inputs = ["x", roi or "", "scales" if scales is not None else "", "sizes" if sizes is not None else ""]
    while inputs[-1] == "":
        inputs.pop()
    return node("Resize", inputs, ["y"], name=name, **attrs)


def resize_case(name, shape, sizes_per_call=N23, scales=None, sizes=None, opset=17, roi=None, **attrs):
    inits = {}
    if scales is not None:
        inits["scales"] = np.asarray(scales, F32)
    if sizes is not None:
        inits["sizes"] = np.asarray(sizes, I64)
    if roi is not None:
        inits[roi] = np.zeros(0, F32)
    return case(name, [resize_node(f"{name}_node", scales, sizes, roi, **attrs)], [("x", F32, shape)],
                [("y", F32)], [f()], [(concrete(shape, s),) for s in sizes_per_call], inits=inits, opset=opset)


NEAREST = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")


def resizes():
    x4 = ["N", 2, 4, 5]
    fixed = [2, 2, 4, 5]
    out = [
        resize_case("resize13_nearest_scales2", x4, scales=[1, 1, 2, 2], opset=13, **NEAREST),
        resize_case("resize13_nearest_scales_fractional", x4, scales=[1, 1, 1.5, 2.5], opset=13, **NEAREST),
        resize_case("resize13_nearest_roi_empty_init", x4, scales=[1, 1, 2, 3], opset=13, roi="roi", **NEAREST),
        resize_case("resize13_nearest_sizes", fixed, (None,), sizes=[2, 2, 7, 9], opset=13, **NEAREST),
        resize_case("resize13_nearest_1d", ["N", 2, 5], scales=[1, 1, 3], opset=13, **NEAREST),
        resize_case("resize13_nearest_3d", ["N", 1, 2, 3, 4], scales=[1, 1, 2, 2, 2], opset=13, **NEAREST),
        resize_case("resize18_nearest_scales", x4, scales=[1, 1, 3, 2], opset=18, **NEAREST),
        resize_case("resize18_nearest_sizes", fixed, (None,), sizes=[2, 2, 6, 11], opset=18, **NEAREST),
        resize_case("resize19_nearest_downscale", x4, scales=[1, 1, 0.5, 0.6], opset=19, **NEAREST),
    ]
    for mode in ("half_pixel", "pytorch_half_pixel"):
        out += [
            resize_case(f"resize13_linear_{mode}_scales2", x4, scales=[1, 1, 2, 2], opset=13, mode="linear",
                        coordinate_transformation_mode=mode),
            resize_case(f"resize13_linear_{mode}_scales_fractional", x4, scales=[1, 1, 1.5, 2.5], opset=13,
                        mode="linear", coordinate_transformation_mode=mode),
            resize_case(f"resize18_linear_{mode}_sizes", fixed, (None,), sizes=[2, 2, 7, 8], opset=18,
                        mode="linear", coordinate_transformation_mode=mode),
            resize_case(f"resize18_linear_{mode}_downscale", x4, scales=[1, 1, 0.5, 0.8], opset=18,
                        mode="linear", coordinate_transformation_mode=mode),
        ]
    out += [
        resize_case("resize13_linear_default_mode_is_half_pixel", x4, scales=[1, 1, 2, 1.5], opset=13, mode="linear"),
        resize_case("resize13_linear_align_corners_scales2", x4, scales=[1, 1, 2, 2], opset=13, mode="linear",
                    coordinate_transformation_mode="align_corners"),
        resize_case("resize18_linear_align_corners_sizes", fixed, (None,), sizes=[2, 2, 7, 9], opset=18,
                    mode="linear", coordinate_transformation_mode="align_corners"),
        resize_case("resize13_linear_roi_empty_init", x4, scales=[1, 1, 2, 2], opset=13, roi="roi", mode="linear",
                    coordinate_transformation_mode="pytorch_half_pixel"),
    ]
    # sizes computed from the input's shape (the exporters' form for a dynamic batch)
    for mode, attrs in (("nearest", NEAREST), ("linear", dict(mode="linear"))):
        out.append(case(
            f"resize18_{mode}_sizes_from_shape",
            [node("Shape", ["x"], ["nc"], end=2), node("Concat", ["nc", "hw"], ["sizes"], axis=0),
             resize_node(f"resize_{mode}", sizes=True, **attrs)],
            [("x", F32, x4)], [("y", F32)], [f()], [((2, 2, 4, 5),), ((3, 2, 4, 5),)],
            inits={"hw": np.asarray([7, 9], I64)}, opset=18))
    return out


def resizes_either():
    """Forms outside the mapped ones that polyeng may run (correctly) or refuse."""
    x4 = ["N", 2, 4, 5]
    return [
        # PyTorch does not give output 1 the ONNX source 0: only a loader that handles it may run it
        resize_case("resize18_linear_pytorch_half_pixel_to_size_1", [2, 2, 4, 5], (None,), sizes=[2, 2, 1, 7],
                    opset=18, mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
        # nearest with the ONNX defaults (half_pixel, round_prefer_floor) differs from floor at 1.5x
        resize_case("resize13_nearest_default_attrs", x4, scales=[1, 1, 1.5, 1.5], opset=13, mode="nearest"),
        resize_case("resize13_nearest_round_prefer_ceil", x4, scales=[1, 1, 1.5, 2.5], opset=13, mode="nearest",
                    coordinate_transformation_mode="asymmetric", nearest_mode="round_prefer_ceil"),
        resize_case("resize13_linear_asymmetric", x4, scales=[1, 1, 1.5, 2], opset=13, mode="linear",
                    coordinate_transformation_mode="asymmetric"),
        resize_case("resize13_linear_1d", ["N", 2, 5], scales=[1, 1, 2], opset=13, mode="linear"),
    ]


# ---------------------------------------------------------------- data movement

def movement():
    out = []
    out.append(case("concat_axis_m2", [node("Concat", ["a", "b"], ["y"], axis=-2)],
                    [("a", F32, ["N", 2, 3]), ("b", F32, ["N", 1, 3])], [("y", F32)], [f(), f()],
                    [((2, 2, 3), (2, 1, 3)), ((3, 2, 3), (3, 1, 3))]))
    out.append(case("concat_three_axis_m1", [node("Concat", ["a", "b", "a"], ["y"], axis=-1)],
                    [("a", F32, ["N", 2, 3]), ("b", F32, ["N", 2, 1])], [("y", F32)], [f(), f()],
                    [((2, 2, 3), (2, 2, 1)), ((1, 2, 3), (1, 2, 1))]))
    out.append(case("concat_const_axis_0", [node("Concat", ["a", "c"], ["y"], axis=0)],
                    [("a", F32, ["N", 3])], [("y", F32)], [f()], [((2, 3),), ((4, 3),)], inits={"c": randn(2, 3)}))
    out.append(case("concat_int64", [node("Concat", ["a", "c"], ["y"], axis=0)],
                    [("a", I64, ["N", 2])], [("y", I64)], [ids(100)], [((2, 2),), ((3, 2),)],
                    inits={"c": np.asarray([[7, -8]], I64)}))
    for name, perm, shape in (("transpose_perm_0213", [0, 2, 1, 3], ["N", 2, 3, 4]),
                              ("transpose_perm_201", [2, 0, 1], ["N", 3, 4]),
                              ("transpose_default_perm", None, ["N", 3, 4])):
        attrs = {} if perm is None else {"perm": perm}
        out.append(case(name, [node("Transpose", ["x"], ["y"], **attrs)], [("x", F32, shape)], [("y", F32)], [f()],
                        [(concrete(shape, s),) for s in N23]))
    # moving only axes of size 1 is a reshape (a view): named dims, fixed dims, a named dim that is
    # 1 in a call, and an unsqueeze's axis moved (an LSTM's Y)
    for name, perm, shape, sizes in (
            ("transpose_unit_axes_named", [0, 2, 1, 3], ["N", 1, "M", 4], ({"N": 2, "M": 3}, {"N": 1, "M": 5})),
            ("transpose_unit_axes_fixed", [1, 0, 3, 2], [2, 1, 3, 1], ({}, {})),
            ("transpose_unit_axis_first", [1, 0, 2], ["N", 1, 4], ({"N": 3}, {"N": 1}))):
        out.append(case(name, [node("Transpose", ["x"], ["y"], perm=perm)], [("x", F32, shape)], [("y", F32)], [f()],
                        [(concrete(shape, s),) for s in sizes]))
    out.append(case("transpose_of_an_unsqueeze", [node("Unsqueeze", ["x", "axes"], ["u"]),
                                                  node("Transpose", ["u"], ["y"], perm=[0, 2, 1, 3])],
                    [("x", F32, ["L", "N", 4])], [("y", F32)], [f()], [((3, 2, 4),), ((2, 1, 4),)],
                    inits={"axes": np.asarray([1], I64)}))
    out.append(case("where_cond_broadcasts", [node("Where", ["c", "x", "y0"], ["y"])],
                    [("c", BOOL, ["N", 1, 4]), ("x", F32, ["N", 3, 4])], [("y", F32)], [flags, f()],
                    [((2, 1, 4), (2, 3, 4)), ((3, 1, 4), (3, 3, 4))], inits={"y0": randn(4)}))
    out.append(case("where_cond_largest", [node("Where", ["c", "s", "x"], ["y"])],
                    [("c", BOOL, ["N", 3, 4]), ("x", F32, [1, 4])], [("y", F32)], [flags, f()],
                    [((2, 3, 4), (1, 4)), ((3, 3, 4), (1, 4))], inits={"s": np.float32(-2.5)}))
    out.append(case("where_int64", [node("Where", ["c", "x", "z"], ["y"])],
                    [("c", BOOL, ["N", 3]), ("x", I64, ["N", 3])], [("y", I64)], [flags, ids(50)],
                    [((2, 3), (2, 3)), ((3, 3), (3, 3))], inits={"z": np.int64(-1)}))
    casts = (  # name, from, to, maker
        ("f32_to_f16", F32, F16, f(scale=3.0)), ("f16_to_f32", F16, F32, f(F16)), ("f32_to_f64", F32, F64, f()),
        ("f64_to_f32", F64, F32, f(F64)), ("f32_to_i64", F32, I64, f(scale=5.0)),
        ("f32_to_i32", F32, I32, f(scale=5.0)),
        ("i64_to_f32", I64, F32, ids(1000, low=-1000)), ("i32_to_f32", I32, F32, ids(1000, I32, low=-1000)),
        ("f32_to_bool", F32, BOOL, lambda s: np.where(RNG.random(s) < 0.4, 0.0, randn(*s)).astype(F32)),
        ("i64_to_bool", I64, BOOL, ids(3, low=-1)), ("bool_to_f32", BOOL, F32, flags),
        ("i64_to_i32", I64, I32, ids(99)),
    )
    for name, src, dst, make in casts:
        to = helper.np_dtype_to_tensor_dtype(np.dtype(dst))
        out.append(case(f"cast_{name}", [node("Cast", ["x"], ["y"], to=to)], [("x", src, ["N", 5])], [("y", dst)],
                        [make], [((2, 5),), ((3, 5),)], rtol=0, atol=0))
    out.append(case("cast_f32_bf16_round_trip", [node("Cast", ["x"], ["t"], to=TensorProto.BFLOAT16),
                                                 node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)],
                    [("x", F32, ["N", 5])], [("y", F32)], [f(scale=3.0)], [((2, 5),), ((3, 5),)], rtol=0, atol=0))
    return out


# ---------------------------------------------------------------- lstm

HIDDEN, FEATURES = 3, 4


def lstm_case(name, direction="forward", layout=0, bias=True, initial=False, outputs=("Y", "Y_h", "Y_c"),
              node_name=None, extra_inits=None, **attrs):
    """LSTM over x of (S, N, F) (layout 0) or (N, S, F) (layout 1), S and N named; ``outputs``
    lists the outputs asked for ("" leaves one out)."""
    dirs = 2 if direction == "bidirectional" else 1
    inits = {"W": randn(dirs, 4 * HIDDEN, FEATURES, scale=0.5), "R": randn(dirs, 4 * HIDDEN, HIDDEN, scale=0.5)}
    if bias:
        inits["B"] = randn(dirs, 8 * HIDDEN, scale=0.5)
    inits |= extra_inits or {}
    x_shape = ["S", "N", FEATURES] if layout == 0 else ["N", "S", FEATURES]
    state = [dirs, "N", HIDDEN] if layout == 0 else ["N", dirs, HIDDEN]
    inputs = [("x", F32, x_shape)] + ([("h0", F32, state), ("c0", F32, state)] if initial else [])
    node_inputs = ["x", "W", "R", "B" if bias else "", "", "h0" if initial else "", "c0" if initial else ""]
    node_inputs += ["P"] if "P" in inits else []
    while node_inputs[-1] == "":
        node_inputs.pop()
    lstm = node("LSTM", node_inputs, list(outputs), name=node_name or f"{name}_node", hidden_size=HIDDEN,
                direction=direction, layout=layout, **attrs)
    model = build([lstm], inputs, [(o, F32) for o in outputs if o], inits=inits)
    per_call = []
    for sizes in ({"S": 3, "N": 2}, {"S": 5, "N": 1}):
        arrays = [randn(*concrete(x_shape, sizes))]
        if initial:
            arrays += [randn(*concrete(state, sizes), scale=0.5), randn(*concrete(state, sizes), scale=0.5)]
        per_call.append(tuple(arrays))
    return Case(name, model, tuple(per_call))


def lstms():
    return [
        lstm_case("lstm_forward_y_only", outputs=("Y",)),
        lstm_case("lstm_forward_no_bias_all_outputs", bias=False),
        lstm_case("lstm_reverse_y_yh", direction="reverse", outputs=("Y", "Y_h")),
        lstm_case("lstm_reverse_initial_states", direction="reverse", initial=True),
        lstm_case("lstm_bidirectional_initial_states", direction="bidirectional", initial=True),
        lstm_case("lstm_bidirectional_no_bias", direction="bidirectional", bias=False, outputs=("Y",)),
        lstm_case("lstm_layout1_forward_initial_states", layout=1, initial=True),
        lstm_case("lstm_layout1_bidirectional_y_yc", layout=1, direction="bidirectional", outputs=("Y", "", "Y_c")),
        lstm_case("lstm_layout1_reverse_yh_only", layout=1, direction="reverse", outputs=("", "Y_h")),
        lstm_case("lstm_yh_only", outputs=("", "Y_h")),
        lstm_case("lstm_yc_only", outputs=("", "", "Y_c")),
        lstm_case("lstm_yh_yc", direction="bidirectional", outputs=("", "Y_h", "Y_c"), initial=True),
        lstm_case("lstm_explicit_default_activations", activations=["Sigmoid", "Tanh", "Tanh"]),
    ]


def lstms_unsupported():
    return [
        lstm_case("lstm_clip", clip=1.0, node_name="rnn_clip"),
        lstm_case("lstm_peepholes", extra_inits={"P": randn(1, 3 * HIDDEN)}, node_name="rnn_peep"),
        lstm_case("lstm_input_forget", input_forget=1, node_name="rnn_coupled"),
        lstm_case("lstm_relu_activations", activations=["Sigmoid", "Relu", "Relu"], node_name="rnn_relu"),
    ]


# ---------------------------------------------------------------- gather

def gathers():
    table = randn(10, 4)
    out = [
        case("gather_embedding_int64", [node("Gather", ["table", "ids"], ["y"])], [("ids", I64, ["N", "S"])],
             [("y", F32)], [ids(10)], [((2, 3),), ((3, 5),)], inits={"table": table}, rtol=0, atol=0),
        case("gather_embedding_int32", [node("Gather", ["table", "ids"], ["y"], axis=0)], [("ids", I32, ["N", "S"])],
             [("y", F32)], [ids(10, I32)], [((2, 3),), ((1, 4),)], inits={"table": table}, rtol=0, atol=0),
        case("gather_embedding_negative_ids", [node("Gather", ["table", "ids"], ["y"])], [("ids", I64, ["N", "S"])],
             [("y", F32)], [ids(10, low=-10)], [((2, 3),), ((3, 5),)], inits={"table": table}, rtol=0, atol=0),
        case("gather_axis1_scalar_index", [constant("i", np.int64(2)), node("Gather", ["x", "i"], ["y"], axis=1)],
             [("x", F32, ["N", 3, 4])], [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], rtol=0, atol=0),
        case("gather_axis1_scalar_init", [node("Gather", ["x", "i"], ["y"], axis=1)], [("x", F32, ["N", 3, 4])],
             [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], inits={"i": np.int64(-1)}, rtol=0, atol=0),
        case("gather_axis1_vector", [node("Gather", ["x", "i"], ["y"], axis=1)], [("x", F32, ["N", 3, 4])],
             [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], inits={"i": i64(2, 0, 2)}, rtol=0, atol=0),
        case("gather_axis_m1_scalar", [node("Gather", ["x", "i"], ["y"], axis=-1)], [("x", F32, ["N", 3, 4])],
             [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], inits={"i": np.int64(1)}, rtol=0, atol=0),
    ]
    return out


# ---------------------------------------------------------------- shape plumbing (named dims)

def i64(*values):
    return np.asarray(values, I64)


def dims_of(x, *picks):
    """Nodes giving ``{x}_d{i}`` = x.shape[i] (0-d int64) for each pick, through Shape and Gather."""
    nodes = [node("Shape", [x], [f"{x}_shape"])]
    for i in picks:
        nodes += [constant(f"{x}_i{i}", np.int64(i)), node("Gather", [f"{x}_shape", f"{x}_i{i}"], [f"{x}_d{i}"])]
    return nodes


def unsqueezed(name, axes_name="ax0"):
    return node("Unsqueeze", [name, axes_name], [f"{name}_1d"])


def plumbing():
    x3 = ["N", "S", 4]
    c3 = [((2, 3, 4),), ((3, 5, 4),)]
    ints_out = [("y", I64)]
    exact = dict(rtol=0, atol=0)
    out = [
        case("shape_full", [node("Shape", ["x"], ["y"])], [("x", F32, x3)], ints_out, [f()], c3, **exact),
        case("shape_start_1", [node("Shape", ["x"], ["y"], start=1)], [("x", F32, x3)], ints_out, [f()], c3, **exact),
        case("shape_start_end_negative", [node("Shape", ["x"], ["y"], start=-3, end=-1)], [("x", F32, x3)], ints_out,
             [f()], c3, **exact),
        case("shape_gather_scalar", dims_of("x", 1) + [node("Identity", ["x_d1"], ["y"])], [("x", F32, x3)],
             ints_out, [f()], c3, **exact),
        case("shape_integer_arithmetic",
             dims_of("x", 0, 1) + [node("Add", ["x_d0", "one"], ["a"]), node("Sub", ["x_d1", "one"], ["b"]),
                                   node("Mul", ["x_d0", "x_d1"], ["c"]), node("Div", ["x_d1", "two"], ["d"])]
             + [unsqueezed(v) for v in "abcd"] + [node("Concat", ["a_1d", "b_1d", "c_1d", "d_1d"], ["y"], axis=0)],
             [("x", F32, x3)], ints_out, [f()], c3, inits={"one": np.int64(1), "two": np.int64(2), "ax0": i64(0)},
             **exact),
        case("reshape_from_shape_product",
             dims_of("x", 0, 1) + [node("Mul", ["x_d0", "x_d1"], ["ns"]), unsqueezed("ns"),
                                   node("Concat", ["ns_1d", "four"], ["shape"], axis=0),
                                   node("Reshape", ["x", "shape"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], c3, inits={"ax0": i64(0), "four": i64(4)}, **exact),
        case("reshape_div_on_shape",
             dims_of("x", 0, 1) + [node("Div", ["x_d1", "two"], ["half"]), unsqueezed("x_d0"), unsqueezed("half"),
                                   node("Concat", ["x_d0_1d", "half_1d", "eight"], ["shape"], axis=0),
                                   node("Reshape", ["x", "shape"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], [((2, 4, 4),), ((3, 6, 4),)],
             inits={"ax0": i64(0), "two": np.int64(2), "eight": i64(8)}, **exact),
        case("reshape_zero_copies_then_transpose",
             [node("Reshape", ["x", "shape"], ["h"]), node("Transpose", ["h"], ["y"], perm=[0, 2, 1, 3])],
             [("x", F32, ["N", "S", 8])], [("y", F32)], [f()], [((2, 3, 8),), ((3, 5, 8),)],
             inits={"shape": i64(0, 0, 2, 4)}, **exact),
        case("reshape_minus_one", [node("Reshape", ["x", "shape"], ["y"])], [("x", F32, x3)], [("y", F32)], [f()], c3,
             inits={"shape": i64(-1, 2)}, **exact),
        case("reshape_zero_and_minus_one", [node("Reshape", ["x", "shape"], ["y"])], [("x", F32, x3)], [("y", F32)],
             [f()], c3, inits={"shape": i64(0, -1)}, **exact),
        case("reshape_allowzero_keeps_zero", [node("Reshape", ["x", "shape"], ["y"], allowzero=1)],
             [("x", F32, ["N", 0, 3])], [("y", F32)], [f()], [((2, 0, 3),), ((3, 0, 3),)],
             inits={"shape": i64(3, 0)}, **exact),
        case("reshape_allowzero_without_zero", [node("Reshape", ["x", "shape"], ["y"], allowzero=1)],
             [("x", F32, x3)], [("y", F32)], [f()], c3, inits={"shape": i64(-1, 2, 2)}, **exact),
        case("slice_data_steps", [node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
             [("x", F32, ["N", 6, 5])], [("y", F32)], [f()], [((2, 6, 5),), ((3, 6, 5),)],
             inits={"starts": i64(0, 1), "ends": i64(6, 5), "axes": i64(1, 2), "steps": i64(2, 2)}, **exact),
        case("slice_data_negative_indices", [node("Slice", ["x", "starts", "ends", "axes"], ["y"])],
             [("x", F32, ["N", 6, 5])], [("y", F32)], [f()], [((2, 6, 5),), ((3, 6, 5),)],
             inits={"starts": i64(-3, -5), "ends": i64(-1, 100), "axes": i64(-1, 1)}, **exact),
        case("slice_data_reverse", [node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
             [("x", F32, ["N", 6, 5])], [("y", F32)], [f()], [((2, 6, 5),), ((3, 6, 5),)],
             inits={"starts": i64(-1, 4), "ends": i64(INT64_MIN, 0), "axes": i64(1, 2), "steps": i64(-1, -2)},
             **exact),
        case("slice_axes_omitted_on_batch", [node("Slice", ["x", "starts", "ends"], ["y"])],
             [("x", F32, ["N", 6, 5])], [("y", F32)], [f()], [((2, 6, 5),), ((4, 6, 5),)],
             inits={"starts": i64(1, 2), "ends": i64(INT64_MAX, 4)}, **exact),
        case("slice_end_from_shape",
             dims_of("x", 1) + [node("Sub", ["x_d1", "one"], ["last"]), unsqueezed("last"),
                                node("Slice", ["x", "zero", "last_1d", "axis1"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], c3,
             inits={"one": np.int64(1), "ax0": i64(0), "zero": i64(0), "axis1": i64(1)}, **exact),
        case("slice_on_shape_values",
             [node("Shape", ["x"], ["s"]), node("Slice", ["s", "zero", "two"], ["ns"]),
              node("Concat", ["ns", "minus1"], ["shape"], axis=0), node("Reshape", ["x", "shape"], ["y"])],
             [("x", F32, ["N", "S", 2, 3])], [("y", F32)], [f()], [((2, 3, 2, 3),), ((3, 5, 2, 3),)],
             inits={"zero": i64(0), "two": i64(2), "minus1": i64(-1)}, **exact),
        case("slice_on_shape_reversed",
             [node("Shape", ["x"], ["s"]), node("Slice", ["s", "start", "end", "axis", "step"], ["y"])],
             [("x", F32, x3)], ints_out, [f()], c3,
             inits={"start": i64(-1), "end": i64(INT64_MIN), "axis": i64(0), "step": i64(-1)}, **exact),
        case("squeeze_axes", [node("Squeeze", ["x", "axes"], ["y"])], [("x", F32, ["N", 1, 3, 1])], [("y", F32)],
             [f()], [((2, 1, 3, 1),), ((3, 1, 3, 1),)], inits={"axes": i64(1, -1)}, **exact),
        case("squeeze_no_axes", [node("Squeeze", ["x"], ["y"])], [("x", F32, [1, "S", 1, 2])], [("y", F32, ["S", 2])],
             [f()], [((1, 2, 1, 2),), ((1, 3, 1, 2),)], **exact),
        case("unsqueeze_axes", [node("Unsqueeze", ["x", "axes"], ["y"])], [("x", F32, ["N", 3])], [("y", F32)],
             [f()], [((2, 3),), ((3, 3),)], inits={"axes": i64(0, -1)}, **exact),
        case("expand_data", [node("Expand", ["x", "shape"], ["y"])], [("x", F32, ["N", 1, 4])], [("y", F32)], [f()],
             [((2, 1, 4),), ((3, 1, 4),)], inits={"shape": i64(1, 3, 1)}, **exact),
        case("expand_more_dims", [node("Expand", ["x", "shape"], ["y"])], [("x", F32, ["S", 1])], [("y", F32)], [f()],
             [((3, 1),), ((5, 1),)], inits={"shape": i64(2, 1, 4)}, **exact),
        case("expand_to_shape_of_input", [node("Shape", ["like"], ["s"]), node("Expand", ["x", "s"], ["y"])],
             [("x", F32, [1, 4]), ("like", F32, x3)], [("y", F32)], [f(), f()],
             [((1, 4), (2, 3, 4)), ((1, 4), (3, 5, 4))], **exact),
        case("identity_two_outputs", [node("Identity", ["x"], ["y"]), node("Relu", ["y"], ["z"])],
             [("x", F32, x3)], [("y", F32), ("z", F32)], [f()], c3, **exact),
        case("constantofshape_value_float",
             [node("Shape", ["x"], ["s"]),
              node("ConstantOfShape", ["s"], ["c"], value=tensor("v", np.asarray([1.5], F32))),
              node("Add", ["x", "c"], ["y"])], [("x", F32, x3)], [("y", F32)], [f()], c3),
        case("constantofshape_default_zeros", [node("Shape", ["x"], ["s"]), node("ConstantOfShape", ["s"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], c3, **exact),
        case("constantofshape_int64_from_shape_slice",
             [node("Shape", ["x"], ["s"], end=2),
              node("ConstantOfShape", ["s"], ["y"], value=tensor("v", np.asarray([7], I64)))],
             [("x", F32, x3)], ints_out, [f()], c3, **exact),
        case("range_positions_embedding",
             dims_of("x", 1) + [node("Range", ["zero", "x_d1", "one"], ["pos"]),
                                node("Gather", ["table", "pos"], ["emb"]), node("Add", ["x", "emb"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], c3,
             inits={"zero": np.int64(0), "one": np.int64(1), "table": randn(8, 4)}),
        case("range_int_step_2", dims_of("x", 1) + [node("Range", ["one", "x_d1", "two"], ["y"])],
             [("x", F32, x3)], ints_out, [f()], c3, inits={"one": np.int64(1), "two": np.int64(2)}, **exact),
        case("range_float_constants", [node("Range", ["a", "b", "d"], ["r"]), node("Add", ["x", "r"], ["y"])],
             [("x", F32, ["N", 5])], [("y", F32)], [f()], [((2, 5),), ((3, 5),)],
             inits={"a": np.float32(0.5), "b": np.float32(3.0), "d": np.float32(0.5)}),
        case("constant_value_float", [helper.make_node("Constant", [], ["c"], name="cf", value_float=2.5),
                                      node("Mul", ["x", "c"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], c3),
        case("constant_value_floats",
             [helper.make_node("Constant", [], ["c"], name="cfs", value_floats=[1.0, -2.0, 3.5, 0.25]),
              node("Add", ["x", "c"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], c3),
        case("constant_value_int_as_index", [helper.make_node("Constant", [], ["c"], name="ci", value_int=1),
                                             node("Gather", ["x", "c"], ["y"], axis=2)],
             [("x", F32, x3)], [("y", F32)], [f()], c3, **exact),
        case("constant_value_ints_as_shape", [helper.make_node("Constant", [], ["c"], name="cis", value_ints=[-1, 6]),
                                              node("Reshape", ["x", "c"], ["y"])],
             [("x", F32, ["N", 2, 3])], [("y", F32)], [f()], [((2, 2, 3),), ((3, 2, 3),)], **exact),
        case("constant_value_tensor", [constant("w", randn(4, 5)), node("MatMul", ["x", "w"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], c3),
    ]
    for axis in (0, 1, 2, -1, None, 4, -4, -2):
        attrs = {} if axis is None else {"axis": axis}
        tag = "default" if axis is None else str(axis).replace("-", "m")
        out.append(case(f"flatten_axis_{tag}", [node("Flatten", ["x"], ["y"], **attrs)], [("x", F32, ["N", 2, 3, 4])],
                        [("y", F32)], [f()], [((2, 2, 3, 4),), ((3, 2, 3, 4),)], **exact))
    for name, shape, axis, calls_, dtype in (   # named dims on one side of the axis, both, or none
            ("flatten_named_head", ["N", "S", 3, 4], 2, [((2, 3, 3, 4),), ((1, 5, 3, 4),)], F32),
            ("flatten_named_tail", [2, 3, "S"], 1, [((2, 3, 4),), ((2, 3, 1),)], F32),
            ("flatten_named_both_sides", ["N", 3, "S"], 2, [((2, 3, 4),), ((3, 3, 2),)], F32),
            ("flatten_fixed_int64", [2, 3, 4], -1, [((2, 3, 4),)], I64)):
        out.append(case(name, [node("Flatten", ["x"], ["y"], axis=axis)], [("x", dtype, shape)], [("y", dtype)],
                        [f() if dtype == F32 else ids(50, low=-50)], calls_, **exact))
    # a value_info that fixes a dim the model leaves free must not be trusted
    wrong = [value("h", F32, [2, 4])]
    out.append(Case("value_info_fixes_a_free_dim", build(
        [node("Relu", ["x"], ["h"])] + dims_of("h", 0)
        + [unsqueezed("h_d0"), node("Concat", ["h_d0_1d", "two_two"], ["shape"], axis=0),
           node("Reshape", ["h", "shape"], ["y"])],
        [("x", F32, ["N", 4])], [("y", F32)], inits={"ax0": i64(0), "two_two": i64(2, 2)}, value_info=wrong),
        ((randn(3, 4),), (randn(5, 4),), (randn(2, 4),)), rtol=0, atol=0))
    return out


# ---------------------------------------------------------------- pad and dropout

U8 = np.uint8


def pad_case(name, shape, pads, mode=None, value=None, axes=None, opset=13, dtype=F32, maker=None, calls_=None,
             pads_from_constant=False):
    """Pad of x (``shape``, named dims at sizes 2 and 3) with constant ``pads`` (an initializer, or a
    Constant node), ``value`` (an initializer of x's dtype) and ``axes`` (opset 18 on)."""
    inputs = ["x", "pads", "value" if value is not None else "", "axes" if axes is not None else ""]
    while inputs[-1] == "":
        inputs.pop()
    inits = {"pads": i64(*pads)}
    nodes = []
    if pads_from_constant:
        nodes.append(constant("pads", inits.pop("pads")))
    if value is not None:
        inits["value"] = np.asarray(value, dtype)
    if axes is not None:
        inits["axes"] = i64(*axes)
    nodes.append(node("Pad", inputs, ["y"], name=f"{name}_node", **({} if mode is None else {"mode": mode})))
    maker = maker or (f(dtype) if np.dtype(dtype).kind == "f" else flags if dtype == BOOL else ids(100, dtype))
    return case(name, nodes, [("x", dtype, shape)], [("y", dtype)], [maker],
                calls_ or [(concrete(shape, s),) for s in N23], inits=inits, opset=opset, rtol=0, atol=0)


def pads_and_dropouts():
    """Pad in each mode, over every axis and over ``axes``, on several dtypes; Flatten's cases are
    with the shape plumbing; Dropout in inference (the output is the input, the mask all true).
    Negative pads are in ``PAD_CROPS``: the reference evaluator's numpy.pad refuses them."""
    x4 = ["N", 3, 4, 5]
    out = [
        pad_case("pad13_constant_value", x4, [0, 0, 1, 2, 0, 0, 2, 1], value=1.5),
        pad_case("pad13_constant_default_value", x4, [0, 1, 0, 1, 0, 0, 2, 0]),
        pad_case("pad13_constant_batch_axis", x4, [1, 0, 0, 0, 2, 0, 0, 1], value=-2.0),
        pad_case("pad13_constant_pads_from_constant_node", x4, [0, 0, 0, 3, 0, 0, 0, 1], value=0.5,
                 pads_from_constant=True),
        pad_case("pad13_zero_pads", x4, [0] * 8),
        pad_case("pad13_reflect", x4, [0, 0, 1, 2, 0, 0, 3, 4], mode="reflect"),
        pad_case("pad13_reflect_named_axis", ["N", 6], [1, 0, 1, 2], mode="reflect"),
        pad_case("pad13_edge", x4, [0, 2, 3, 0, 0, 1, 0, 6], mode="edge"),
        pad_case("pad13_edge_batch_axis", x4, [2, 0, 0, 1, 1, 0, 0, 0], mode="edge"),
        pad_case("pad18_constant_axes", x4, [1, 0, 2, 3], value=4.0, axes=[-1, 1], opset=18),
        pad_case("pad18_reflect_axes", x4, [1, 2, 2, 1], mode="reflect", axes=[2, 3], opset=18),
        pad_case("pad19_edge_negative_axes", x4, [3, 1], mode="edge", axes=[-2], opset=19),
        pad_case("pad21_constant_int64", ["N", 5], [0, 2, 0, 1], value=7, dtype=I64, opset=21),
        pad_case("pad13_constant_uint8", ["N", 2, 5], [0, 1, 1, 0, 1, 0], value=200, dtype=U8),
        pad_case("pad13_reflect_int32", ["N", 4, 5], [0, 2, 1, 0, 1, 3], mode="reflect", dtype=I32),
        pad_case("pad13_constant_bool", ["N", 4], [0, 1, 0, 2], value=True, dtype=BOOL),
        pad_case("pad13_edge_bool", ["N", 3, 4], [0, 1, 1, 0, 0, 2], mode="edge", dtype=BOOL),
        pad_case("pad13_reflect_float16", ["N", 3, 5], [0, 2, 4, 0, 0, 1], mode="reflect", dtype=F16),
        pad_case("pad13_constant_float64", ["N", 3], [0, 1, 0, 1], value=-0.25, dtype=F64),
        pad_case("pad13_constant_zero_batch", x4, [0, 0, 1, 1, 0, 0, 1, 1], value=3.0,
                 calls_=[((0, 3, 4, 5),), ((2, 3, 4, 5),)]),
        pad_case("pad13_reflect_zero_batch", x4, [0, 0, 1, 1, 0, 0, 1, 1], mode="reflect",
                 calls_=[((0, 3, 4, 5),), ((2, 3, 4, 5),)]),
        # folded at load: the padded constant joins x
        case("pad13_constant_folded", [node("Pad", ["c", "cpads", "cvalue"], ["p"], mode="constant"),
                                       node("Add", ["x", "p"], ["y"])],
             [("x", F32, ["N", 4, 5])], [("y", F32)], [f()], [((2, 4, 5),), ((3, 4, 5),)],
             inits={"c": randn(2, 3), "cpads": i64(1, 0, 1, 2), "cvalue": np.float32(9.0)}),
        case("pad13_reflect_then_relu", [node("Pad", ["x", "pads"], ["p"], mode="reflect"), node("Relu", ["p"], ["y"])],
             [("x", F32, ["N", 2, 4, 4])], [("y", F32)], [f()], [((2, 2, 4, 4),), ((1, 2, 4, 4),)],
             inits={"pads": i64(0, 0, 1, 1, 0, 0, 1, 1)}),
    ]
    x3 = ["N", 3, 4]
    out += [
        case("dropout13_identity", [node("Dropout", ["x"], ["y"])], [("x", F32, x3)], [("y", F32)], [f()],
             [((2, 3, 4),), ((3, 3, 4),)], opset=13, rtol=0, atol=0),
        case("dropout13_ratio_and_training_false_then_add",
             [node("Dropout", ["x", "ratio", "training"], ["d"]), node("Add", ["d", "b"], ["y"])],
             [("x", F32, x3)], [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], opset=13,
             inits={"ratio": np.float32(0.3), "training": np.bool_(False), "b": randn(4)}),
        case("dropout13_mask_of_fixed_shape", [node("Dropout", ["x", "ratio"], ["y", "mask"])],
             [("x", F32, [2, 3, 4])], [("y", F32), ("mask", BOOL)], [f()], [((2, 3, 4),)], opset=13,
             inits={"ratio": np.float32(0.5)}, rtol=0, atol=0),
        case("dropout13_float64", [node("Dropout", ["x"], ["y"])], [("x", F64, ["N", 3])], [("y", F64)], [f(F64)],
             [((2, 3),), ((3, 3),)], opset=13, rtol=0, atol=0),
    ]
    if NEWEST_OPSET >= 22:   # Dropout-22 adds types only
        out.append(case("dropout22_training_false", [node("Dropout", ["x", "", "training"], ["y"])],
                        [("x", F16, x3)], [("y", F16)], [f(F16)], [((2, 3, 4),), ((3, 3, 4),)], opset=22,
                        inits={"training": np.bool_(False)}, rtol=0, atol=0))
    return out


def pad_crops():
    """Pad with negative pads (a crop), which onnxruntime runs (cropping first) and the reference
    evaluator does not (numpy.pad refuses negative widths): tests/test_op_pad.py checks these
    against onnxruntime on every engine. Each reflect crop leaves more than the pad it reflects."""
    x4 = ["N", 3, 6, 7]
    return [
        pad_case("pad13_constant_crop", x4, [0, 0, -1, 2, 0, 0, 1, -3], value=1.5),
        pad_case("pad13_constant_crop_to_empty", x4, [0, 0, 0, -4, 0, 0, 0, -3]),
        pad_case("pad13_reflect_crop_one_end_pad_the_other", x4, [0, 0, 2, -3, 0, 0, -2, 3], mode="reflect"),
        pad_case("pad13_reflect_crop_both_ends", x4, [0, 0, -1, -2, 0, 0, -2, 1], mode="reflect"),
        pad_case("pad13_edge_crop", x4, [0, 0, -5, 4, 0, 0, 3, -6], mode="edge"),
        pad_case("pad18_constant_crop_axes", x4, [-2, 1, 3, -1], axes=[3, 2], value=-1.0, opset=18),
        pad_case("pad19_edge_crop_batch", x4, [-1, 0, 0, 0, 0, 0, 0, 2], mode="edge", opset=19,
                 calls_=[((2, 3, 6, 7),), ((3, 3, 6, 7),)]),
    ]


def pads_and_dropouts_refused():
    x4 = [("x", F32, ["N", 3, 4, 5])]
    out = []
    if NEWEST_OPSET >= 19:
        out.append(refused("pad19_wrap", [node("Pad", ["x", "pads"], ["y"], name="pad_wrap", mode="wrap")], x4,
                           [("y", F32)], [("Pad", "pad_wrap")], inits={"pads": i64(0, 0, 1, 1, 0, 0, 1, 1)}, opset=19))
    out += [
        refused("pad_pads_at_run_time", [node("Pad", ["x", "pads"], ["y"], name="pad_dynamic")],
                x4 + [("pads", I64, [8])], [("y", F32)], [("Pad", "pad_dynamic")], opset=13),
        refused("pad_value_at_run_time", [node("Pad", ["x", "pads", "v"], ["y"], name="pad_dynamic_value")],
                x4 + [("v", F32, [])], [("y", F32)], [("Pad", "pad_dynamic_value")],
                inits={"pads": i64(0, 0, 1, 1, 0, 0, 1, 1)}, opset=13),
        refused("pad_reflect_as_large_as_the_axis",
                [node("Pad", ["x", "pads"], ["y"], name="pad_reflect_big", mode="reflect")], x4, [("y", F32)],
                [("Pad", "pad_reflect_big")], inits={"pads": i64(0, 0, 4, 0, 0, 0, 0, 0)}, opset=13),
        refused("pad_reflect_into_the_crop",
                [node("Pad", ["x", "pads"], ["y"], name="pad_reflect_crop", mode="reflect")], x4, [("y", F32)],
                [("Pad", "pad_reflect_crop")], inits={"pads": i64(0, 0, 0, 3, 0, 0, 0, -2)}, opset=13),
        refused("pad_reflect_crop_of_a_named_axis",
                [node("Pad", ["x", "pads"], ["y"], name="pad_reflect_named", mode="reflect")], x4, [("y", F32)],
                [("Pad", "pad_reflect_named")], inits={"pads": i64(1, 0, 0, 0, -1, 0, 0, 0)}, opset=13),
        refused("dropout_training", [node("Dropout", ["x", "", "t"], ["y"], name="dropout_train")], x4,
                [("y", F32)], [("Dropout", "dropout_train")], inits={"t": np.bool_(True)}, opset=13),
        refused("dropout_training_at_run_time", [node("Dropout", ["x", "", "t"], ["y"], name="dropout_dynamic")],
                x4 + [("t", BOOL, [])], [("y", F32)], [("Dropout", "dropout_dynamic")], opset=13),
        refused("dropout_mask_of_a_named_shape",
                [node("Dropout", ["x"], ["y", "mask"], name="dropout_mask")], x4, [("y", F32), ("mask", BOOL)],
                [("Dropout", "dropout_mask")], opset=13),
    ]
    return out


# ---------------------------------------------------------------- small whole models

def mlp_model(opset=17):
    nodes = [node("Gemm", ["x", "w1", "b1"], ["h1"], transB=1), node("Relu", ["h1"], ["h2"]),
             node("Gemm", ["h2", "w2", "b2"], ["h3"], alpha=0.5), node("Softmax", ["h3"], ["y"], axis=-1)]
    inits = {"w1": randn(8, 6, scale=0.5), "b1": randn(8), "w2": randn(8, 3, scale=0.5), "b2": randn(3)}
    return build(nodes, [("x", F32, ["batch", 6])], [("y", F32)], inits=inits, opset=opset)


def composites(opset=17):
    """Small models of several ops; at opsets other than 17 their names end in the opset."""
    d, heads = 8, 2
    attention = [node("MatMul", ["x", f"w{k}"], [k]) for k in "qkv"]
    attention += [node("Reshape", [k, "split"], [f"{k}4"]) for k in "qkv"]
    attention += [node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
                  node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
                  node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]), node("MatMul", ["qt", "kt"], ["s"]),
                  node("Div", ["s", "root"], ["sd"]), node("Softmax", ["sd"], ["p"]),
                  node("MatMul", ["p", "vt"], ["o"]),
                  node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]), node("Reshape", ["ot", "merge"], ["om"]),
                  node("Add", ["om", "x"], ["r"]), node("LayerNormalization", ["r", "ln_w", "ln_b"], ["n"]),
                  node("Div", ["n", "sqrt2"], ["g1"]), node("Erf", ["g1"], ["g2"]), node("Add", ["g2", "one"], ["g3"]),
                  node("Mul", ["n", "g3"], ["g4"]), node("Mul", ["g4", "half"], ["y"])]
    attention_inits = {f"w{k}": randn(d, d, scale=0.4) for k in "qkv"} | {
        "split": i64(0, 0, heads, d // heads), "merge": i64(0, 0, d), "root": np.float32(2.0),
        "ln_w": uniform(0.5, 1.5, d), "ln_b": randn(d), "sqrt2": np.float32(np.sqrt(2.0)), "one": np.float32(1.0),
        "half": np.float32(0.5)}
    lm = [node("Gather", ["table", "ids"], ["e"]), node("Transpose", ["e"], ["et"], perm=[1, 0, 2]),
          node("LSTM", ["et", "W", "R", "B"], ["hs"], name="lm_lstm", hidden_size=HIDDEN),
          node("Squeeze", ["hs", "ax1"], ["h"]), node("MatMul", ["h", "out"], ["logits"]),
          node("LogSoftmax", ["logits"], ["y"], axis=-1)]
    lm_inits = {"table": randn(12, FEATURES), "W": randn(1, 4 * HIDDEN, FEATURES, scale=0.5),
                "R": randn(1, 4 * HIDDEN, HIDDEN, scale=0.5), "B": randn(1, 8 * HIDDEN, scale=0.5),
                "ax1": i64(1), "out": randn(HIDDEN, 12)}
    cnn = [node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
           node("Resize", ["p", "", "scales"], ["u"], name="up", **NEAREST), node("Concat", ["x", "u"], ["c"], axis=1),
           node("AveragePool", ["c"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
           node("Sigmoid", ["a"], ["s"]), node("GlobalAveragePool", ["s"], ["g"]), node("Flatten", ["g"], ["fl"]),
           node("Gemm", ["fl", "fc", "fc_b"], ["y"], transB=1)]
    cnn_inits = {"scales": np.asarray([1, 1, 2, 2], F32), "fc": randn(3, 4), "fc_b": randn(3)}
    tag = "" if opset == 17 else f"_opset{opset}"
    out = [
        Case(f"mlp_gemm_relu_softmax{tag}", mlp_model(opset), ((randn(2, 6),), (randn(5, 6),))),
        case(f"lstm_language_model{tag}", lm, [("ids", I64, ["N", "S"])], [("y", F32)], [ids(12)],
             [((2, 3),), ((3, 6),)], inits=lm_inits, opset=opset),
        case(f"pool_resize_concat_head{tag}", cnn, [("x", F32, ["N", 2, 8, 8])], [("y", F32)], [f()],
             [((2, 2, 8, 8),), ((1, 2, 8, 8),)], inits=cnn_inits, opset=opset),
    ]
    if opset >= 17:     # LayerNormalization
        out.append(case(f"attention_block{tag}", attention, [("x", F32, ["N", "S", d])], [("y", F32)], [f()],
                        [((2, 3, d),), ((1, 5, d),)], inits=attention_inits, opset=opset))
    return out


def zero_batch():
    """Calls with an empty batch (then a non-empty one, on the same graph)."""
    x = ["N", 3, 4]
    sizes = [((0, 3, 4),), ((2, 3, 4),)]
    out = []
    for name, nodes, inits in (
            ("relu", [node("Relu", ["x"], ["y"])], None),
            ("add_broadcast", [node("Add", ["x", "b"], ["y"])], {"b": randn(4)}),
            ("matmul_const", [node("MatMul", ["x", "w"], ["y"])], {"w": randn(4, 2)}),
            ("softmax", [node("Softmax", ["x"], ["y"], axis=1)], None),
            ("layernorm", [node("LayerNormalization", ["x", "w"], ["y"])], {"w": randn(4)}),
            ("transpose", [node("Transpose", ["x"], ["y"], perm=[1, 0, 2])], None),
            ("reducemean", [node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)], None),
            ("reshape_zero_copy", [node("Reshape", ["x", "s"], ["y"])], {"s": i64(0, 2, 6)}),
            ("concat_axis1", [node("Concat", ["x", "x"], ["y"], axis=1)], None),
            ("gather_axis1", [node("Gather", ["x", "i"], ["y"], axis=1)], {"i": np.int64(1)}),
            ("shape", [node("Shape", ["x"], ["y"])], None)):
        out_type = I64 if name == "shape" else F32
        out.append(case(f"zero_batch_{name}", nodes, [("x", F32, x)], [("y", out_type)], [f()], sizes, inits=inits))
    out.append(case("zero_batch_gather_embedding", [node("Gather", ["t", "ids"], ["y"])], [("ids", I64, ["N", 3])],
                    [("y", F32)], [ids(5)], [((0, 3),), ((2, 3),)], inits={"t": randn(5, 4)}))
    out.append(case("zero_batch_maxpool", [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])],
                    [("x", F32, ["N", 2, 4, 4])], [("y", F32)], [f()], [((0, 2, 4, 4),), ((2, 2, 4, 4),)]))
    return out


# ---------------------------------------------------------------- refused, or either

def refused(name, nodes, inputs, outputs, bad, inits=None, opset=17):
    return Case(name, build(nodes, inputs, outputs, inits=inits, opset=opset), (), bad=tuple(bad))


def unsupported():
    x4 = [("x", F32, ["N", 2, 4, 5])]
    out = [
        refused("resize_cubic", [resize_node("up_cubic", scales=True, mode="cubic")], x4, [("y", F32)],
                [("Resize", "up_cubic")], inits={"scales": np.asarray([1, 1, 2, 2], F32)}, opset=13),
        refused("maxpool_storage_order_1",
                [node("MaxPool", ["x"], ["y"], name="pool_so", kernel_shape=[2, 2], storage_order=1)], x4,
                [("y", F32)], [("MaxPool", "pool_so")]),
        refused("unknown_op_hardmax", [node("Hardmax", ["x"], ["y"], name="hardmax1")], x4,
                [("y", F32)], [("Hardmax", "hardmax1")]),
        refused("conv_3d", [node("Conv", ["x", "w"], ["y"], name="conv3d", kernel_shape=[1, 2, 2])],
                [("x", F32, ["N", 2, 3, 4, 5])], [("y", F32)], [("Conv", "conv3d")], inits={"w": randn(3, 2, 1, 2, 2)}),
    ]
    out += pads_and_dropouts_refused()
    out.append(refused("clip_int64_at_run_time", [node("Clip", ["x", "lo"], ["y"], name="clip_ints")],
                       [("x", I64, ["N", 3])], [("y", I64)], [("Clip", "clip_ints")], inits={"lo": np.int64(0)}))
    for c in lstms_unsupported():
        lstm = c.model.graph.node[0]
        out.append(Case(c.name, c.model, (), bad=(("LSTM", lstm.name),)))
    out.append(refused(
        "two_bad_nodes_in_parallel",
        [node("Hardmax", ["x"], ["a"], name="hardmax1"), node("Relu", ["x"], ["b"], name="relu_ok"),
         node("Resize", ["x", "", "scales"], ["c"], name="up1", mode="cubic")],
        x4, [("a", F32), ("b", F32), ("c", F32)], [("Hardmax", "hardmax1"), ("Resize", "up1")],
        inits={"scales": np.asarray([1, 1, 2, 2], F32)}))
    out.append(refused(
        "two_bad_nodes_and_a_good_one",
        [node("Hardmax", ["x"], ["c"], name="hardmax1"), node("Relu", ["c"], ["r"], name="relu_ok"),
         node("Resize", ["r", "", "scales"], ["y"], name="up1", mode="cubic")],
        x4, [("y", F32)], [("Hardmax", "hardmax1"), ("Resize", "up1")],
        inits={"scales": np.asarray([1, 1, 2, 2], F32)}))
    return out


def either():
    """Forms polyeng may run (then they must match) or refuse at load (then naming the node)."""
    out = []
    out += resizes_either()
    return [replace(c, bad=tuple((n.op_type, n.name) for n in c.model.graph.node if n.op_type != "Constant"))
            for c in out]


# ---------------------------------------------------------------- the lists the tests read

def _unique(cases):
    names = [c.name for c in cases]
    duplicates = {n for n in names if names.count(n) > 1}
    assert not duplicates, f"duplicate case names: {sorted(duplicates)}"
    return cases


from onnx_cases_conv import convolutions  # noqa: E402  (the conv cases, built with the blocks above)
from onnx_cases_indexing import splits  # noqa: E402
from onnx_cases_logic import logic_cases  # noqa: E402
from onnx_cases_gru import grus, grus_refused  # noqa: E402

SUPPORTED = _unique(arithmetic() + activations() + matmuls() + pooling() + reduce_means() + resizes() + movement()
                    + convolutions() + splits() + pads_and_dropouts() + logic_cases()
                    + lstms() + grus() + gathers() + plumbing() + composites() + composites(13) + composites(21)
                    + zero_batch() + (composites(NEWEST_OPSET) if NEWEST_OPSET > 21 else []))
UNSUPPORTED = _unique(unsupported() + grus_refused())
PAD_CROPS = _unique(pad_crops())
EITHER = _unique(either())
