from __future__ import annotations

from controllermanager import names
from controllermanager.app import CONTROLLERS


def test_the_names_are_the_controllers() -> None:
    # --controllers is checked against names.py without loading a controller; CONTROLLERS,
    # keyed by each controller's own NAME, must say the same, in the same order.
    assert tuple(CONTROLLERS) == names.CONTROLLER_NAMES
