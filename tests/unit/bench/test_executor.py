"""The sandboxed executor: every way a program can end is a result, never an exception in the harness."""

from __future__ import annotations

import os

from dg_lsp.bench.quality.executor import Limits, humaneval_program, run_many, run_program

FAST = Limits(timeout_s=2.0, memory_mb=512)


def test_passing_and_failing_programs():
    assert run_program("assert 1 + 1 == 2\n", FAST).status == "passed"
    failed = run_program("assert 1 + 1 == 3\n", FAST)
    assert failed.status == "failed" and not failed.passed and "AssertionError" in failed.detail


def test_timeout_is_a_failure_and_kills_the_program():
    result = run_program("import time\nwhile True:\n    time.sleep(0.01)\n", Limits(timeout_s=1.0))
    assert result.status == "timeout" and not result.passed
    assert result.duration_ms < 8000


def test_syntax_error_is_a_failure():
    result = run_program("def f(:\n    return 1\n", FAST)
    assert result.status == "syntax_error" and not result.passed


def test_crash_is_a_failure():
    result = run_program("import os\nos.abort()\n", FAST)
    assert result.status == "crashed" and not result.passed


def test_memory_limit_holds():
    result = run_program("x = bytearray(2 * 1024 ** 3)\n", FAST)
    assert result.status == "failed" and "MemoryError" in result.detail


def test_program_runs_in_a_temp_dir_not_the_harness_cwd(tmp_path):
    result = run_program("import os\nassert os.getcwd() != %r\nopen('f', 'w').write('x')\n" % os.getcwd(), FAST)
    assert result.passed
    assert not os.path.exists("f")


def test_harness_survives_a_program_that_kills_its_parent_group():
    # The program runs in its own session: signalling "its" group cannot reach the harness.
    result = run_program("import os, signal\nos.killpg(0, signal.SIGKILL)\n", FAST)
    assert result.status == "crashed"


def test_humaneval_program_and_run_many_keep_order():
    test = "def check(candidate):\n    assert candidate(2) == 4\n"
    good = humaneval_program("def double(x):\n    return x * 2\n", test, "double")
    bad = humaneval_program("def double(x):\n    return x + 3\n", test, "double")
    results = run_many([good, bad, "def f(:\n"], FAST, workers=2)
    assert [r.status for r in results] == ["passed", "failed", "syntax_error"]
