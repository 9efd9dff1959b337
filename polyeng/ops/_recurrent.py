"""What lstm and gru share: the geometry of a call (``RecurrentShape``) and the checks of
``x``, ``params`` and the initial states, for ``gates`` stacked weight blocks per layer.

``params`` holds one ``(w_ih, w_hh, b_ih, b_hh)`` per layer and direction, layer-major with the
forward direction before the reverse one, in PyTorch's shapes: ``w_ih`` (gates*H, in) (layers
after the first read in = H * directions), ``w_hh`` (gates*H, H), biases (gates*H,) or None.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import _checks as check

PARAM_ROLES = ("w_ih", "w_hh", "b_ih", "b_hh")
DIRECTION_NAMES = ("forward", "reverse")


@dataclass(frozen=True)
class RecurrentShape:
    """The sizes of one lstm or gru call, read from its validated arguments."""
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
        """Shape of each initial and final state (h0, h_n; lstm's c0, c_n too)."""
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


def param_shapes(gates: int, layer: int, input_size: int, hidden: int, directions: int) -> tuple:
    """Expected shapes of (w_ih, w_hh, b_ih, b_hh) for one direction of ``layer``."""
    layer_in = input_size if layer == 0 else directions * hidden
    return ((gates * hidden, layer_in), (gates * hidden, hidden), (gates * hidden,), (gates * hidden,))


def geometry(x_shape, params, batch_first: bool, bidirectional: bool) -> RecurrentShape:
    """The ``RecurrentShape`` of a call whose arguments were validated (H from w_hh of layer 0)."""
    unbatched = len(x_shape) == 2
    directions = num_directions(bidirectional)
    if unbatched:
        seq_len, batch = x_shape[0], 1
    elif batch_first:
        batch, seq_len = x_shape[0], x_shape[1]
    else:
        seq_len, batch = x_shape[0], x_shape[1]
    return RecurrentShape(seq_len=int(seq_len), batch=int(batch), input_size=int(x_shape[-1]),
                          hidden_size=int(params[0][1].shape[1]), num_layers=len(params) // directions,
                          num_directions=directions, batch_first=bool(batch_first), unbatched=unbatched)


def validate(op: str, gates: int, x, params, states: dict, batch_first, bidirectional) -> dict:
    """The validated arguments of an lstm or gru call; ``states`` maps each initial state's name
    (h0, and lstm's c0) to its value or None."""
    batch_first = check.flag(batch_first, "batch_first")
    bidirectional = check.flag(bidirectional, "bidirectional")
    x = check.tensor(x, "x", floats_only=True, op=op)
    if len(x.shape) not in (2, 3):
        raise ValueError(f"x has shape {check.shape_str(x.shape)} ({len(x.shape)}-D); {op} expects (L, N, in), "
                         f"(N, L, in) with batch_first, or unbatched (L, in)")
    params = _validate_params(op, gates, params, x, num_directions(bidirectional))
    shape = geometry(x.shape, params, batch_first, bidirectional)
    out = {"x": x, "params": params}
    out.update((name, _validate_state(op, value, name, x, shape)) for name, value in states.items())
    out.update(batch_first=batch_first, bidirectional=bidirectional)
    return out


def _param_name(index: int, role: int, layer: int, direction: int, directions: int) -> str:
    where = f"layer {layer}" + (f", {DIRECTION_NAMES[direction]}" if directions == 2 else "")
    return f"params[{index}][{role}] ({PARAM_ROLES[role]} of {where})"


def _validate_params(op: str, gates: int, params, x, directions: int) -> list:
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
    hidden = _hidden_from(op, gates, params[0][1], _param_name(0, 1, 0, 0, directions), x.dtype)
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
            value = check.tensor(value, name, floats_only=True, op=op, like=x.dtype)
            check.same_or_f32(value, x.dtype, name)
            expected = param_shapes(gates, layer, input_size, hidden, directions)[role]
            if tuple(value.shape) != expected:
                if role == 0:
                    _check_direction_count(gates, params, i, value.shape, expected, input_size, hidden, directions)
                raise ValueError(f"{name} has shape {check.shape_str(value.shape)}; expected "
                                 f"{check.shape_str(expected)} (hidden size {hidden} from params[0][1], "
                                 f"{_in_note(layer, input_size, directions)})")
            arrays.append(value)
        out.append(tuple(arrays))
    return out


def _check_direction_count(gates: int, params, index: int, shape, expected, input_size: int, hidden: int,
                           directions: int) -> None:
    """A w_ih whose shape is wrong for its layer but right for the same position read with the
    other direction count: the params of a model of the other kind (num_layers comes from the
    count, so a wrong ``bidirectional`` shows up as a shape error in a later layer)."""
    other = 3 - directions
    if len(params) % other:
        return
    layer, direction = divmod(index, other)
    if tuple(shape) != param_shapes(gates, layer, input_size, hidden, other)[0]:
        return
    kind = "bidirectional" if other == 2 else "unidirectional"
    layers = len(params) // directions
    reading = f"{layers} layer{'s' if layers != 1 else ''}" + (" x 2 directions" if directions == 2 else "")
    where = f"layer {layer}" + (f"'s {DIRECTION_NAMES[direction]} direction" if other == 2 else "")
    raise ValueError(f"params has {len(params)} entries; with bidirectional={directions == 2} that is {reading}, "
                     f"but params[{index}][0] has shape {check.shape_str(shape)}, not the "
                     f"{check.shape_str(expected)} that position needs: it is the w_ih of {where} in a {kind} model "
                     f"— a {kind} model's params need bidirectional={other == 2}")


def _hidden_from(op: str, gates: int, w_hh, name: str, x_dtype) -> int:
    """H, from the first recurrent weight; every other shape is checked against it."""
    if w_hh is None:
        raise TypeError(f"{name} is None; expected an array (only the biases may be None)")
    w_hh = check.tensor(w_hh, name, floats_only=True, op=op, like=x_dtype)
    if len(w_hh.shape) != 2 or w_hh.shape[1] < 1:
        raise ValueError(f"{name} has shape {check.shape_str(w_hh.shape)}; expected ({gates}*hidden_size, "
                         f"hidden_size) with hidden_size >= 1")
    return int(w_hh.shape[1])


def _in_note(layer: int, input_size: int, directions: int) -> str:
    if layer == 0:
        return f"input size {input_size} from x"
    return f"layer {layer} reads {directions} * hidden size features"


def _validate_state(op: str, value, name: str, x, shape: RecurrentShape):
    if value is None:
        return None
    value = check.tensor(value, name, floats_only=True, op=op, like=x.dtype)
    check.same_or_f32(value, x.dtype, name)
    expected = shape.state_shape
    if tuple(value.shape) != expected:
        form = "(layers * directions, hidden_size)" if shape.unbatched else \
            "(layers * directions, batch, hidden_size)"
        raise ValueError(f"{name} has shape {check.shape_str(value.shape)}; expected {check.shape_str(expected)} "
                         f"= {form} for x {check.shape_str(x.shape)}"
                         + (" (unbatched)" if shape.unbatched else ""))
    return value
