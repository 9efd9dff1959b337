"""The benchmark harness behind ``polyeng bench``, and what ``polyeng run`` shares with it.

``ops`` times the op workload (``workload``, one case at a time by ``measure``) per engine beside
PyTorch and a plain copy, and ``report`` shows it; ``models`` times the bundled ONNX models end to
end against onnxruntime and PyTorch. ``runtimes`` (a graph loaded, an onnxruntime session, torch,
thread counts, output paths), ``inputs`` (random inputs drawn from a model's signature) and
``progress`` (the progress bar) serve the commands that run models too.

Nothing here imports ``polyeng.cli``: the command line checks its options, calls in here, and
shows a ``BenchError`` as its one-line usage error.
"""


class BenchError(Exception):
    """A setting, file or missing package that prevents a run; the message is one line for the user."""
