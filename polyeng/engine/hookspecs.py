"""Hook specifications for polyeng plugins (pluggy project name ``polyeng``).

Built-in engines register through these hooks exactly like third-party ones.
"""
import pluggy

hookspec = pluggy.HookspecMarker("polyeng")
hookimpl = pluggy.HookimplMarker("polyeng")


@hookspec
def polyeng_register(registry):
    """Add engines and kernels to ``registry``.

    Call ``registry.add_engine(name, available=True, reason="", native_type=None, to_host=None,
    to_device=None, details=None, call_note=None)`` once per engine the plugin provides (``available`` may be a
    callable returning ``(bool, reason)``, evaluated lazily when the selection first reaches the
    engine; ``native_type`` is the device tensor type the engine owns, ``to_host``/``to_device``
    copy such tensors to and from numpy for ``polyeng.to_numpy``/``polyeng.to_device``;
    ``details()`` returns lines for ``polyeng info``; ``call_note()`` a short text on the call the
    engine just ran on this thread, for verbose level 2), then
    ``registry.add_kernel(op, engine, fn, accepts=None, compute_types=None, native_storage=False)``
    per kernel (``compute_types``: the fp math compute types it supports, e.g. ``("f32", "bf16")``;
    ``native_storage=True``: the kernel reads float16/bfloat16 arrays as stored and returns
    results in the input's storage dtype, instead of receiving them widened to f32). ``fn`` receives the
    public op's keyword arguments after validation and returns what the op returns;
    ``accepts(call)`` returns None to accept a call or a reason string to reject it
    (``call.op``, ``call.args``); any other value rejects the call with a PluginWarning.
    An exception here (a bad argument to ``add_engine``/``add_kernel`` included) leaves an
    entry-point plugin's engines unavailable with the exception as the reason;
    ``register_backend`` raises PluginError instead and registers nothing.
    """
