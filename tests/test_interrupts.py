"""A signal-raised exception (Ctrl-C) landing anywhere inside a call leaves no setting behind.

A child process interrupts op calls at random moments with a timer whose handler raises
KeyboardInterrupt, then checks that the engine, the fp math mode, the verbose level and
numpy's error state are back to their defaults. Each attempt runs in a copy of the context,
so one leak cannot hide or cause the next. CPython itself leaves one window no library code
can close: a signal that lands on the very first instruction of an ``__exit__``, before any
of its code runs, skips that ``__exit__``. Such interrupts are told apart by their traceback
(it ends on that instruction) and counted separately; every other leak fails the test.
"""
import json
import os
import subprocess
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import contextvars, dis, json, logging, random, signal, sys, time, traceback
import numpy as np
import polyeng
from polyeng.engine import scopes, verbose
from polyeng.engine.plugins import registry

ATTEMPTS, SEED = int(sys.argv[1]), int(sys.argv[2])
logging.getLogger("polyeng").addHandler(logging.NullHandler())   # level 1 formats its lines, prints none


def interrupt(*_):
    raise KeyboardInterrupt


def state():
    return (polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value, verbose.level(), np.geterr(),
            scopes._open.get())


def first_instruction(fn):   # RESUME (3.11+) starts the body and is where a function start checks signals
    return next((i.offset for i in dis.get_instructions(fn) if i.opname == "RESUME"), 0)


EXIT = scopes.Scoped.__exit__
EXIT_START = first_instruction(EXIT)
PACKAGE = polyeng.__file__.rsplit("/", 1)[0]


def landed_at(exc):   # the traceback entry of the interrupted instruction: the one before the handler's
    tb = exc.__traceback__
    while tb.tb_next is not None and tb.tb_next.tb_frame.f_code is not interrupt.__code__:
        tb = tb.tb_next
    return tb


rng = random.Random(SEED)
shapes = [(2, 5), (3, 7), (4, 9)]
for shape in shapes:   # compile and load outside the timed loop
    with polyeng.compute_eng("numba"), polyeng.fp_math_mode("bf16"):
        polyeng.softmax(np.ones(shape, np.float32))
default = state()
signal.signal(signal.SIGALRM, interrupt)
counts = {"attempts": 0, "inside": 0, "leaks": 0, "exit_window": 0}
examples = []


def attempt(i):
    # every fourth call has a shape not seen before: a plan cache miss, decided by the selector
    shape = (2, 1000 + i) if i % 4 == 0 else shapes[i % 3]
    x = np.ones(shape, np.float32)
    try:
        signal.setitimer(signal.ITIMER_REAL, rng.uniform(1e-6, 1e-4))
        with polyeng.compute_eng("numba"), polyeng.fp_math_mode("bf16"), polyeng.verbose(1):
            polyeng.softmax(x)
        while True:
            pass
    except KeyboardInterrupt as exc:
        tb = landed_at(exc)
        counts["inside"] += any(frame.f_code.co_filename.startswith(PACKAGE)
                                for frame, _ in traceback.walk_tb(exc.__traceback__))
        if state() != default:
            if tb.tb_frame.f_code is EXIT.__code__ and tb.tb_lasti == EXIT_START:
                counts["exit_window"] += 1
            else:
                counts["leaks"] += 1
                if len(examples) < 5:
                    examples.append([repr(state()), f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"])


start = time.perf_counter()
for i in range(ATTEMPTS):
    contextvars.copy_context().run(attempt, i)
    counts["attempts"] += 1
signal.setitimer(signal.ITIMER_REAL, 0)
reg = registry()
locks = [reg.plans._lock] + [record._lock for record in reg.engines.values()]
counts["locks_free"] = all(lock.acquire(blocking=False) for lock in locks)
counts["seconds"] = round(time.perf_counter() - start, 2)
counts["default_kept"] = state() == default
counts["examples"] = examples
print(json.dumps(counts))
"""


def interrupted_calls(attempts: int, seed: int) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("POLYENG_VERBOSE", None)
    out = subprocess.run([sys.executable, "-c", CHILD, str(attempts), str(seed)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_an_interrupt_anywhere_in_a_call_leaves_no_setting_behind():
    counts = interrupted_calls(3000, seed=11)
    assert counts["attempts"] == 3000 and counts["default_kept"] and counts["locks_free"], counts
    assert counts["inside"] >= 300, counts   # the timer does land inside the calls
    assert counts["leaks"] == 0, counts
    # the window CPython leaves (see the top): 0 to 5 per 3000 attempts measured, about one in
    # a thousand; the bound only catches it turning from a window into a rule
    assert counts["exit_window"] <= 30, counts
