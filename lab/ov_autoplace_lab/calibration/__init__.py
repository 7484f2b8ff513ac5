"""Fitting the simulated devices' cost terms to published OpenVINO latencies (writes the runtime's ``costmodel/data/fitted_terms.json``)."""
