"""Thread-level simulation: phases, per-thread state and run-time checks (see passes/cpu_simulate_threads.py)."""
