"""Diagnostics beside the suites: the teacher-forced probe, sampling and context timings, foundation figures."""
