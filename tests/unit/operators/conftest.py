"""Hypothesis profiles for the operator property tests.

``pytest --hypothesis-profile=thorough`` runs ten times as many random logs as the default.
"""

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("default", max_examples=60, **_COMMON)
settings.register_profile("thorough", max_examples=600, **_COMMON)
settings.register_profile("quick", max_examples=15, **_COMMON)
settings.load_profile("default")
