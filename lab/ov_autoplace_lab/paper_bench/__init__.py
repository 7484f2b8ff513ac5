"""The paper's benchmark (Table 2 and Table 4 style), every method side by side: ``ov-autoplace bench``.

* :mod:`.methods` - the rows: single devices, OpenVINO's own modes, heuristics, the exact optimum and the
  learned methods (Placeto, the RNN placer, HSDAG paper mode / zero-shot / fine-tuned), one interface;
* :mod:`.runner` - the settings: measured on the testbed (interleaved timing, correctness against an f32
  reference) and simulated (paper and laptop platforms); the results dict;
* :mod:`.report` - validation, Markdown, JSON and PNG figures.

Needs the ``train`` extra (torch) for the learned methods and ``dev`` (matplotlib) for the figures.
"""
