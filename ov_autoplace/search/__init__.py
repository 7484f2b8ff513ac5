"""Searching: placements found on a CostModel. List scheduling (HEFT, critical path: ``list_scheduling.py``), the
exact optimum (min cut and MILP: ``optimum.py``, ``milp.py``), the local search that refines a proposal
(``local_search.py`` with ``search_moves.py`` and ``search_pricing.py``), and the memory fit that moves an
overflowing placement's windows off a device and prices the legalizer's merges (``memory_fit.py``).
"""
