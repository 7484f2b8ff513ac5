"""The baselines' tests reuse the policy tests' synthetic graphs (session fixture)."""

from tests.policy.conftest import synthetic_prepared  # noqa: F401  (re-exported as a fixture)
