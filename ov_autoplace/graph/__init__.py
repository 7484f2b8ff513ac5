"""The graph: ``extract_graph`` (C++) turns a prepared model into ``GraphArrays``, the arrays every strategy, the legalizer and the cost model read."""
