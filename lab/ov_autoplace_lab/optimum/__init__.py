"""Exact placement optima under a CostModel, the reference the heuristics and the learned policy are measured
against ("exact optima as the reference", Tarnawski et al. 2020): the s-t min cut for two devices
(``exact_optimum.py``), the MILP for any number (``milp.py``; scipy), and the ``optimum`` strategy (``strategy.py``).
They live in the lab: an inference app never needs an exact optimum, and the runtime does not depend on scipy."""
