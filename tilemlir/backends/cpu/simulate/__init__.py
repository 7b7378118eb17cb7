"""Thread-level simulation: phases, per-thread state and run-time checks (see backends/cpu/simulate_threads.py)."""
