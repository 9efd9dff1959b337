"""A oneDNN program's buffers placed in one block by when a run uses each (``_arena.py``): buffers
whose spans do not meet share bytes, a buffer a run reads before writing keeps its own, what is
read after the executions lives to the run's end, and programs give the same bits as with a
buffer per value, run after run on changing inputs."""
from __future__ import annotations

import numpy as np
import pytest

import polyeng
from polyeng.backends.onednn import _constants as C
from polyeng.backends.onednn._primitive import aligned_empty
from polyeng.graph import fuse, trace

ONEDNN = {e.name: e for e in polyeng.engines()}["onednn"].available
RNG = np.random.default_rng(5)


class _Program:
    """What ``_arena.share`` reads and changes of a program."""

    def __init__(self, buffers, calls, outputs=(), alias=None):
        self.buffer = dict(buffers)
        self.calls = [(None, template, 1) for template in calls]
        self.outputs = list(outputs)
        self.alias = dict(alias or {})
        self.row_checks, self.subnormal_checks, self.small_checks = [], [], []


def _address(a):
    return a.__array_interface__["data"][0]


def _buf(p, name):
    return ("buf", p.buffer[name])


def test_buffers_whose_spans_do_not_meet_share_bytes_and_the_executions_follow_them():
    from polyeng.backends.onednn import _arena
    size = 4096
    p = _Program({n: aligned_empty(size) for n in "abcd"}, [])
    p.calls = [(None, t, 1) for t in (
        {C.ARG_SRC: ("in", 0), C.ARG_DST: _buf(p, "a")},
        {C.ARG_SRC: _buf(p, "a"), C.ARG_DST: _buf(p, "b")},
        {C.ARG_SRC: _buf(p, "b"), C.ARG_DST: _buf(p, "c")},
        {C.ARG_SRC: _buf(p, "c"), C.ARG_SRC_1: _buf(p, "b"), C.ARG_DST: _buf(p, "d")},
    )]
    p.outputs = ["d"]
    saved = _arena.share(p)
    assert saved == 4 * size - 3 * size   # a's span (0-1) ends before c's (2-3): they share
    assert _address(p.buffer["a"]) == _address(p.buffer["c"])
    assert len({_address(p.buffer[n]) for n in "abd"}) == 3
    block = p.arena
    for n in "abcd":
        assert p.buffer[n].base is block.base and p.buffer[n].nbytes == size
    # each execution reads and writes the new places
    assert _address(p.calls[1][1][C.ARG_SRC][1]) == _address(p.buffer["a"])
    assert _address(p.calls[3][1][C.ARG_DST][1]) == _address(p.buffer["d"])


def test_a_buffer_read_before_it_is_written_keeps_its_bytes():
    from polyeng.backends.onednn import _arena
    constant = np.arange(1024, dtype=np.float32).view(np.uint8).reshape(-1)
    p = _Program({"k": constant, "a": aligned_empty(4096), "b": aligned_empty(4096), "c": aligned_empty(4096)}, [])
    p.calls = [(None, t, 1) for t in (
        {C.ARG_SRC: _buf(p, "k"), C.ARG_DST: _buf(p, "a")},
        {C.ARG_SRC: _buf(p, "a"), C.ARG_DST: _buf(p, "b")},
        {C.ARG_SRC: _buf(p, "b"), C.ARG_SRC_1: _buf(p, "k"), C.ARG_DST: _buf(p, "c")},
        {C.ARG_SRC: _buf(p, "c"), C.ARG_DST: _buf(p, "c")},   # in place
    )]
    p.outputs = ["c"]
    _arena.share(p)
    assert p.buffer["k"] is constant and p.calls[2][1][C.ARG_SRC_1][1] is constant
    assert _address(p.buffer["a"]) == _address(p.buffer["c"])


def test_a_value_checked_after_the_run_or_an_output_by_its_alias_lives_to_the_end():
    from polyeng.backends.onednn import _arena
    p = _Program({n: aligned_empty(4096) for n in "abcd"}, [])
    p.calls = [(None, t, 1) for t in (
        {C.ARG_SRC: ("in", 0), C.ARG_DST: _buf(p, "a")},
        {C.ARG_SRC: _buf(p, "a"), C.ARG_DST: _buf(p, "b")},
        {C.ARG_SRC: _buf(p, "b"), C.ARG_DST: _buf(p, "c")},
        {C.ARG_SRC: _buf(p, "c"), C.ARG_DST: _buf(p, "d")},
    )]
    p.subnormal_checks = [("buf", p.buffer["a"][:100], 25)]
    p.alias = {"out": "b"}
    p.outputs = ["out", "d"]
    assert _arena.share(p) == 0   # a and b are read after the run: no two spans end early enough
    p = _Program({n: aligned_empty(4096) for n in "abc"}, [])
    p.calls = [(None, t, 1) for t in (
        {C.ARG_SRC: ("in", 0), C.ARG_DST: _buf(p, "a")},
        {C.ARG_SRC: _buf(p, "a"), C.ARG_DST: _buf(p, "b")},
        {C.ARG_SRC: _buf(p, "b"), C.ARG_DST: _buf(p, "c")},
    )]
    p.small_checks = [("buf", p.buffer["a"][:64], 32, 0x80)]
    p.outputs = ["c"]
    assert _arena.share(p) == 0
    assert _address(p.small_checks[0][1]) == _address(p.buffer["a"])


def test_the_largest_buffer_is_placed_first_and_smaller_ones_fill_the_gaps():
    from polyeng.backends.onednn import _arena
    regions = []
    for size, first, last in ((64, 0, 1), (256, 1, 2), (128, 2, 3), (64, 3, 4)):
        r = _arena._Region(0, size)
        r.first, r.last = first, last
        regions.append(r)
    total = _arena._place(regions)
    assert regions[1].offset == 0   # the largest
    assert regions[0].offset == 256 and regions[2].offset == 256   # spans 0-1 and 2-3 do not meet
    assert regions[3].offset == 0   # 3-4 meets neither 256's span (1-2)
    assert total == 384


def _conv_net(x, w1, w2, w3):
    y = polyeng.relu(polyeng.conv2d(x, w1, padding=1))
    y = polyeng.relu(polyeng.conv2d(y, w2, padding=1))
    y = polyeng.add(polyeng.conv2d(y, w3, padding=1), y)
    return polyeng.tanh(polyeng.max_pool2d(y, 2))


def _text_net(x, w1, b1, w2, b2, g, b):
    h = polyeng.gelu(polyeng.linear(x, w1, b1))
    y = polyeng.add(polyeng.linear(h, w2, b2), x)
    y = polyeng.layer_norm(y, (x.shape[-1],), g, b)
    s = polyeng.softmax(polyeng.matmul(y, polyeng.permute_contiguous(y, (0, 2, 1))), axis=-1)
    return polyeng.matmul(s, y)


def _w(*shape):
    return (RNG.standard_normal(shape) * 0.2).astype(np.float32)


CASES = {
    "convolutions": (_conv_net, (2, 8, 12, 12), lambda: (_w(16, 8, 3, 3), _w(16, 16, 3, 3), _w(16, 16, 3, 3))),
    "transformer": (_text_net, (3, 10, 32),
                    lambda: (_w(64, 32), _w(64), _w(32, 64), _w(32), 1 + _w(32), _w(32))),
}


@pytest.mark.skipif(not ONEDNN, reason="onednn is unavailable")
@pytest.mark.parametrize("case", sorted(CASES))
def test_programs_in_one_block_give_the_bits_of_a_buffer_per_value(case, monkeypatch):
    from polyeng.backends.onednn import _arena
    from support import programs_taken
    fn, shape, weights = CASES[case]
    params = weights()
    inputs = [RNG.standard_normal(shape).astype(np.float32) for _ in range(3)]

    def model(x):
        return fn(x, *params)

    saved, real = [], _arena.share

    def share(program):
        saved.append(real(program))
        return saved[-1]
    monkeypatch.setattr(_arena, "share", share)
    with polyeng.num_threads(1):
        shared_graph = fuse(trace(model, inputs[0]))
        with programs_taken() as taken:
            got = [shared_graph(x) for x in inputs + inputs]
        assert any(taken) and saved and max(saved) > 0
        monkeypatch.setattr(_arena, "share", lambda program: 0)
        own_graph = fuse(trace(model, inputs[0]))
        want = [own_graph(x) for x in inputs + inputs]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert not np.array_equal(got[0], got[1])
