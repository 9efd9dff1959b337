"""``engine.environment.variables``: variables set or unset for a block, then put back as they were."""
import os

import pytest

from polyeng.engine.environment import variables


def test_variables_are_set_unset_and_put_back_even_when_the_block_raises(monkeypatch):
    monkeypatch.setenv("POLYENG_TEST_KEPT", "user")
    monkeypatch.setenv("POLYENG_TEST_EMPTY", "")
    monkeypatch.delenv("POLYENG_TEST_NEW", raising=False)
    with pytest.raises(RuntimeError):
        with variables({"POLYENG_TEST_KEPT": None, "POLYENG_TEST_EMPTY": "1", "POLYENG_TEST_NEW": "2"}):
            assert "POLYENG_TEST_KEPT" not in os.environ
            assert os.environ["POLYENG_TEST_EMPTY"] == "1" and os.environ["POLYENG_TEST_NEW"] == "2"
            raise RuntimeError("inside")
    assert os.environ["POLYENG_TEST_KEPT"] == "user" and os.environ["POLYENG_TEST_EMPTY"] == ""
    assert "POLYENG_TEST_NEW" not in os.environ
    with variables({}):   # nothing to set: nothing changes
        assert os.environ["POLYENG_TEST_KEPT"] == "user"
