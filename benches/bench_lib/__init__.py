"""What the benchmark scripts share (benches/compare.py, benches/sweep.py and
the smaller ones).

* ``threads``: ``--threads`` read from argv and the BLAS/OpenMP variables set
  before numpy or torch is imported (imports nothing heavy itself).
* ``workloads``: compare.py's workloads (``Case``, ``Workload``, ``WORKLOADS``),
  each written once against the torch API.
* ``harness``: timing (``bench_workload``), the physical-limit probes, the
  machine description and the libraries under test.
* ``sweep_case``, ``sweep_ops`` and ``sweep_ops_nn``, ``sweep_models``,
  ``sweep_report``: sweep.py's operator case model, its case tables, its
  model cases, and its summary math and tables.
* ``interleaved``: the options, thread setup and ``per_call`` of pow.py and
  vmath.py.

This package's ``__init__`` imports nothing, so that a script can set the
thread variables from ``threads`` before numpy is loaded.
"""
