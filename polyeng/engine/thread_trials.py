"""Whether a parallel kernel runs faster on its thread budget or on the calling thread alone,
measured on its own first calls instead of guessed from its size.

Waking sleeping workers (polyeng's pools never spin between kernels, ``engine/threads.py``)
costs from a few microseconds on a quiet machine to tens in a virtual machine, and a kernel that
enters several parallel regions per call pays it in each: on a 2-core virtual machine a oneDNN
1x1 convolution of 8x16x32x32 took 390 us on two threads and 91 us on one, and whole CNNs ran
10-25% faster with every kernel on one thread. On another machine the same kernel may be twice
as fast on two. So each kernel and size (a oneDNN primitive, a numba kernel and its output size)
runs its first calls alternately on the budget and on one thread, and then keeps the faster
(one thread on a tie: it leaves the other cores free). The choice is made again after
``RECHECKS`` calls, since the machine's load changes: soon after the first (a first choice made
while another library's threads still held a core, as one process running onnxruntime and then
polyeng has, was kept for 4,096 calls), then less and less often.

``Trials.choose(key, n)`` returns the threads for this call and whether to time it;
``Trials.record`` takes the time. ``enabled = False`` turns the trials off (every call takes
the budget), for measurements of either choice.
"""
from __future__ import annotations

import threading

enabled = True

WARMUP = 1       # first calls not timed: first-touch page faults, caches filling
TRIALS = 3       # timed calls on each of the two choices
RECHECKS = (64, 256, 1024, 4096)   # calls on the kept choice before the trials run again, by choice
RECHECK = RECHECKS[-1]             # from the fourth choice on


class _Trial:
    """One kernel's trials: calls so far, and the fastest time seen on the budget and on one thread."""
    __slots__ = ("calls", "best_budget", "best_one", "chosen", "kept", "made")

    def __init__(self, made: int = 0):
        self.calls = 0
        self.best_budget = self.best_one = float("inf")
        self.chosen = 0   # 0 while trying, else the kept count (1 or the budget)
        self.kept = 0     # calls since the choice
        self.made = made  # choices made before this one


class Trials:
    """The trials of one kind of kernel, by key (the key includes the budget: a budget of 4 and
    one of 2 are separate trials)."""

    def __init__(self, limit: int = 4096, warmup: int = WARMUP):
        """``warmup``: first calls of each key not timed (on the budget); a recheck's, ``WARMUP``."""
        self._trials: dict = {}
        self._limit = limit
        self._warmup = warmup
        self._lock = threading.Lock()

    def choose(self, key, n: int):
        """(threads, timed) for a call of ``key`` with a budget of ``n`` > 1 threads."""
        if not enabled:
            return n, False
        trial = self._trials.get(key)
        if trial is None:
            with self._lock:
                if len(self._trials) >= self._limit:
                    self._trials.clear()
                trial = self._trials.setdefault(key, _Trial())
        if trial.chosen:
            trial.kept += 1
            if trial.kept <= RECHECKS[min(trial.made, len(RECHECKS) - 1)]:
                return trial.chosen, False
            trial.__init__(trial.made + 1)   # try again: the machine's load may have changed
        calls = trial.calls
        trial.calls = calls + 1
        warm = self._warmup_of(trial)
        if calls < warm:
            return n, False
        return (1 if (calls - warm) % 2 else n), True

    def _warmup_of(self, trial) -> int:
        """Untimed first calls of ``trial``: this object's for a first choice, ``WARMUP`` for a
        recheck (the kernel is warm by then)."""
        return self._warmup if not trial.made else WARMUP

    def record(self, key, n: int, threads: int, seconds: float) -> None:
        """A timed call of ``key`` (budget ``n``) ran on ``threads`` threads in ``seconds``."""
        trial = self._trials.get(key)
        if trial is None or trial.chosen:
            return
        if threads == 1:
            trial.best_one = min(trial.best_one, seconds)
        else:
            trial.best_budget = min(trial.best_budget, seconds)
        if trial.calls >= self._warmup_of(trial) + 2 * TRIALS:
            trial.chosen = 1 if trial.best_one <= trial.best_budget else n
            trial.kept = 0

    def chosen(self) -> dict:
        """key -> the kept thread count, for the keys decided (for ``polyeng info`` and tests)."""
        return {key: t.chosen for key, t in list(self._trials.items()) if t.chosen}

    def clear(self) -> None:
        with self._lock:
            self._trials.clear()
