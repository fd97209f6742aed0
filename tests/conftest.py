"""Shared test configuration: hypothesis profiles and a fixed clock."""

import os
from datetime import datetime, timezone

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# The other interpreters in CI check compatibility, not the properties again.
settings.register_profile(
    "quick",
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
