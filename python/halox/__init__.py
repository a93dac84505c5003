"""halox: sweeps and reports over the results of the halox benchmarks."""
