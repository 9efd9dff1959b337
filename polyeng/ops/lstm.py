"""lstm: a multi-layer, optionally bidirectional LSTM over a sequence (torch.nn.LSTM without proj_size).

The shape arithmetic (``LstmShape``, ``param_shapes``) lives here so that
every engine's kernel reads the same geometry from the validated arguments.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend

GATES = 4  # gate order in the stacked weights: input, forget, cell (g), output
PARAM_ROLES = ("w_ih", "w_hh", "b_ih", "b_hh")
DIRECTION_NAMES = ("forward", "reverse")


def lstm(x, params, h0=None, c0=None, *, batch_first=False, bidirectional=False):
    """Run an LSTM over ``x`` and return ``(y, (h_n, c_n))`` as ``torch.nn.LSTM`` does.

    ``x`` is (L, N, in), (N, L, in) with ``batch_first``, or unbatched (L, in). ``params``
    holds one ``(w_ih, w_hh, b_ih, b_hh)`` per layer and direction, layer-major with the
    forward direction before the reverse one: ``w_ih`` (4H, in) (layers after the first
    take in = H * directions), ``w_hh`` (4H, H), biases (4H,) or None; the gates are
    stacked in the order i, f, g, o. ``h0``/``c0`` are (layers * directions, N, H)
    ((layers * directions, H) when unbatched) and default to zeros.

    ``y`` is (L, N, directions * H) ((N, L, ...) with ``batch_first``); for the reverse
    direction, ``y[t]`` is its state after reading ``x[L-1] ... x[t]``. ``h_n``/``c_n``
    have ``h0``'s shape and hold each layer and direction's last state. An empty
    sequence (L = 0) gives an empty ``y`` and returns the initial states.
    """
    return run(SPEC, x=x, params=params, h0=h0, c0=c0, batch_first=batch_first, bidirectional=bidirectional)


@dataclass(frozen=True)
class LstmShape:
    """The sizes of one lstm call, read from its validated arguments."""
    seq_len: int
    batch: int          # 1 for unbatched input
    input_size: int
    hidden_size: int
    num_layers: int
    num_directions: int
    batch_first: bool
    unbatched: bool

    @property
    def state_shape(self) -> tuple:
        """Shape of h0, c0, h_n and c_n."""
        lead = (self.num_layers * self.num_directions,)
        return lead + ((self.hidden_size,) if self.unbatched else (self.batch, self.hidden_size))

    @property
    def time_major_axes(self) -> tuple | None:
        """Axes that turn batched ``x`` into (L, N, in) (and y back), or None when none are needed."""
        return (1, 0, 2) if self.batch_first and not self.unbatched else None

    @property
    def output_shape(self) -> tuple:
        """Shape of y."""
        feat = self.num_directions * self.hidden_size
        if self.unbatched:
            return (self.seq_len, feat)
        if self.batch_first:
            return (self.batch, self.seq_len, feat)
        return (self.seq_len, self.batch, feat)

    @property
    def row_strides(self) -> tuple:
        """``(time, batch)`` strides of the rows of x and y (their last axis apart) in the
        caller's layout: step ``t`` of sequence ``n`` is row ``t * time + n * batch``."""
        if self.batch_first and not self.unbatched:
            return 1, self.seq_len
        return self.batch, 1

    def param_index(self, layer: int, direction: int) -> int:
        return layer * self.num_directions + direction


def num_directions(bidirectional: bool) -> int:
    return 2 if bidirectional else 1


def hidden_size(params) -> int:
    """H, read from the first recurrent weight (w_hh of layer 0, shape (4H, H))."""
    return int(params[0][1].shape[1])


def param_shapes(layer: int, input_size: int, hidden: int, directions: int) -> tuple:
    """Expected shapes of (w_ih, w_hh, b_ih, b_hh) for one direction of ``layer``."""
    layer_in = input_size if layer == 0 else directions * hidden
    return ((GATES * hidden, layer_in), (GATES * hidden, hidden), (GATES * hidden,), (GATES * hidden,))


def geometry(x_shape, params, batch_first: bool, bidirectional: bool) -> LstmShape:
    """The ``LstmShape`` of a call whose arguments were validated."""
    unbatched = len(x_shape) == 2
    directions = num_directions(bidirectional)
    if unbatched:
        seq_len, batch = x_shape[0], 1
    elif batch_first:
        batch, seq_len = x_shape[0], x_shape[1]
    else:
        seq_len, batch = x_shape[0], x_shape[1]
    return LstmShape(seq_len=int(seq_len), batch=int(batch), input_size=int(x_shape[-1]),
                     hidden_size=hidden_size(params), num_layers=len(params) // directions,
                     num_directions=directions, batch_first=bool(batch_first), unbatched=unbatched)


def _param_name(index: int, role: int, layer: int, direction: int, directions: int) -> str:
    where = f"layer {layer}" + (f", {DIRECTION_NAMES[direction]}" if directions == 2 else "")
    return f"params[{index}][{role}] ({PARAM_ROLES[role]} of {where})"


def _validate_params(params, x, directions: int) -> list:
    if isinstance(params, (str, bytes)) or not isinstance(params, (list, tuple)):
        raise TypeError(f"params={type(params).__name__}: expected a list or tuple of "
                        f"(w_ih, w_hh, b_ih, b_hh) tuples, one per layer and direction")
    if len(params) == 0 or len(params) % directions:
        raise ValueError(f"params has {len(params)} entries; expected a positive multiple of {directions} "
                         f"(one (w_ih, w_hh, b_ih, b_hh) tuple per layer and direction, "
                         f"bidirectional={directions == 2})")
    for i, entry in enumerate(params):
        if not isinstance(entry, (list, tuple)) or len(entry) != 4:
            got = f"a {len(entry)}-element {type(entry).__name__}" if isinstance(entry, (list, tuple)) \
                else type(entry).__name__
            one_layer = len(params) == 4 and not any(isinstance(e, (list, tuple)) for e in params)
            raise TypeError(f"params[{i}] is {got}; expected a (w_ih, w_hh, b_ih, b_hh) tuple"
                            + ("; params holds one such tuple per layer and direction, so a single "
                               "layer's is written [(w_ih, w_hh, b_ih, b_hh)]" if one_layer else ""))
    input_size = int(x.shape[-1])
    hidden = _hidden_from(params[0][1], _param_name(0, 1, 0, 0, directions), x.dtype)
    out = []
    for i, entry in enumerate(params):
        layer, direction = divmod(i, directions)
        arrays = []
        for role, value in enumerate(entry):
            name = _param_name(i, role, layer, direction, directions)
            if value is None:
                if role < 2:
                    raise TypeError(f"{name} is None; expected an array (only the biases may be None)")
                arrays.append(None)
                continue
            value = check.tensor(value, name, floats_only=True, op="lstm", like=x.dtype)
            check.same_or_f32(value, x.dtype, name)
            expected = param_shapes(layer, input_size, hidden, directions)[role]
            if tuple(value.shape) != expected:
                if role == 0:
                    _check_direction_count(params, i, value.shape, expected, input_size, hidden, directions)
                raise ValueError(f"{name} has shape {check.shape_str(value.shape)}; expected "
                                 f"{check.shape_str(expected)} (hidden size {hidden} from params[0][1], "
                                 f"{_in_note(layer, input_size, directions)})")
            arrays.append(value)
        out.append(tuple(arrays))
    return out


def _check_direction_count(params, index: int, shape, expected, input_size: int, hidden: int,
                           directions: int) -> None:
    """A w_ih whose shape is wrong for its layer but right for the same position read with the
    other direction count: the params of a model of the other kind (num_layers comes from the
    count, so a wrong ``bidirectional`` shows up as a shape error in a later layer)."""
    other = 3 - directions
    if len(params) % other:
        return
    layer, direction = divmod(index, other)
    if tuple(shape) != param_shapes(layer, input_size, hidden, other)[0]:
        return
    kind = "bidirectional" if other == 2 else "unidirectional"
    layers = len(params) // directions
    reading = f"{layers} layer{'s' if layers != 1 else ''}" + (" x 2 directions" if directions == 2 else "")
    where = f"layer {layer}" + (f"'s {DIRECTION_NAMES[direction]} direction" if other == 2 else "")
    raise ValueError(f"params has {len(params)} entries; with bidirectional={directions == 2} that is {reading}, "
                     f"but params[{index}][0] has shape {check.shape_str(shape)}, not the "
                     f"{check.shape_str(expected)} that position needs: it is the w_ih of {where} in a {kind} model "
                     f"— a {kind} model's params need bidirectional={other == 2}")


def _hidden_from(w_hh, name: str, x_dtype) -> int:
    """H, from the first recurrent weight; every other shape is checked against it."""
    if w_hh is None:
        raise TypeError(f"{name} is None; expected an array (only the biases may be None)")
    w_hh = check.tensor(w_hh, name, floats_only=True, op="lstm", like=x_dtype)
    if len(w_hh.shape) != 2 or w_hh.shape[1] < 1:
        raise ValueError(f"{name} has shape {check.shape_str(w_hh.shape)}; expected (4*hidden_size, hidden_size) "
                         f"with hidden_size >= 1")
    return int(w_hh.shape[1])


def _in_note(layer: int, input_size: int, directions: int) -> str:
    if layer == 0:
        return f"input size {input_size} from x"
    return f"layer {layer} reads {directions} * hidden size features"


def _validate_state(value, name: str, x, shape: LstmShape):
    if value is None:
        return None
    value = check.tensor(value, name, floats_only=True, op="lstm", like=x.dtype)
    check.same_or_f32(value, x.dtype, name)
    expected = shape.state_shape
    if tuple(value.shape) != expected:
        form = "(layers * directions, hidden_size)" if shape.unbatched else \
            "(layers * directions, batch, hidden_size)"
        raise ValueError(f"{name} has shape {check.shape_str(value.shape)}; expected {check.shape_str(expected)} "
                         f"= {form} for x {check.shape_str(x.shape)}"
                         + (" (unbatched)" if shape.unbatched else ""))
    return value


def _validate(x, params, h0, c0, batch_first, bidirectional):
    batch_first = check.flag(batch_first, "batch_first")
    bidirectional = check.flag(bidirectional, "bidirectional")
    x = check.tensor(x, "x", floats_only=True, op="lstm")
    if len(x.shape) not in (2, 3):
        raise ValueError(f"x has shape {check.shape_str(x.shape)} ({len(x.shape)}-D); lstm expects (L, N, in), "
                         f"(N, L, in) with batch_first, or unbatched (L, in)")
    params = _validate_params(params, x, num_directions(bidirectional))
    shape = geometry(x.shape, params, batch_first, bidirectional)
    return {"x": x, "params": params,
            "h0": _validate_state(h0, "h0", x, shape), "c0": _validate_state(c0, "c0", x, shape),
            "batch_first": batch_first, "bidirectional": bidirectional}


def _prepare(args) -> Prepared:
    """y's shape, the input's dtype, and ``geometry``: the call's :class:`LstmShape`."""
    shape = geometry(args["x"].shape, args["params"], args["batch_first"], args["bidirectional"])
    return Prepared(shape.output_shape, args["x"].dtype, geometry=shape)


def _example(t, rng):
    hidden, inp = 16, 12
    params = [(t(4 * hidden, inp), t(4 * hidden, hidden), t(4 * hidden), t(4 * hidden)) for _ in range(2)]
    return (t(7, 3, inp), params), {"bidirectional": True}


def _zero_size(z):
    return (z(5, 0, 4), [(z(8, 4), z(8, 2), z(8), z(8))]), {}, [(5, 0, 2), [(1, 0, 2), (1, 0, 2)]]


SPEC = OpSpec(
    name="lstm",
    function=lstm,
    validate=_validate,
    category=Category.ALLOW,
    prepare=_prepare,
    recommend=_recommend.jit_from(0), preference=_recommend.PREFERENCE,   # the fused step wins at every size measured
    chunking="lstm", example=_example, zero_size=_zero_size, tolerance=64,
)
SPECS = [SPEC]
