# SPDX-License-Identifier: MIT
"""The benchmark suite's modules (bench/run_all.py drives them)."""
