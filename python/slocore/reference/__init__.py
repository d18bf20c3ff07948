"""Small pure-Python versions of slocore's C++ hot paths.

They are the oracles of the differential tests (hypothesis checks C++ == reference on
random inputs) and the baseline the benchmarks measure the C++ against. Each module
mirrors one C++ header and keeps its paper citations; clarity wins over speed here.
"""
