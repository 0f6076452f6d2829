"""The clock of kemu.client's time-dependent loops: kemu.component.clock, re-exported so that
client code and its tests name one Clock (SystemClock is the real one)."""

from __future__ import annotations

from kemu.component.clock import Clock, FakeClock, RealClock

SystemClock = RealClock

__all__ = ["Clock", "FakeClock", "RealClock", "SystemClock"]
