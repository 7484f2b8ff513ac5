"""The HSDAG strategy's tests reuse the policy tests' graphs (session fixtures of tests/policy/conftest.py)."""

from tests.policy.conftest import bert_prepared, synthetic_prepared  # noqa: F401  (re-exported as fixtures)
