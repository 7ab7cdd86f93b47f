"""Run configurations over tasks: generate every completion (timed), score, run tests, report.

Generation of all configurations comes first and tests run after it, so test processes never
compete with the model for the CPU while latency is being measured.
"""

from __future__ import annotations

import datetime
import sys
import time
from dataclasses import dataclass, field, replace

from tqdm import tqdm

from dg_lsp.bench.quality import executor, report, scoring
from dg_lsp.bench.quality.runners import (AutoregressiveRunner, EmptyRunner, EngineRunner, NoSuffixRunner,
                                          OracleLengthRunner, RestrictedARRunner, RunSettings, TaskEdit)
from dg_lsp.bench.quality.tasks import Task


@dataclass(frozen=True)
class BenchOptions:
    via: str = "engine"  # engine | lsp
    baselines: tuple[str, ...] = ()  # ar, ar-restricted, nosuffix, empty, oracle-length (diagnostic)
    steps: tuple[int, ...] = (16,)
    settings: RunSettings = field(default_factory=RunSettings)
    model: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    limits: executor.Limits = field(default_factory=executor.Limits)
    exec_workers: int = 2
    progress: bool = True
    lsp_settings: dict = field(default_factory=dict)  # extra server settings for --via lsp


@dataclass
class Config:
    label: str
    mode: str
    via: str
    settings: RunSettings
    max_steps: int | None
    lsp_settings: dict = field(default_factory=dict)

    def describe(self) -> dict:
        s = self.settings
        out = {"label": self.label, "mode": self.mode, "via": self.via, "max_steps": self.max_steps,
               "temperature": s.temperature, "entropy_bound": s.entropy_bound, "verify_weight": s.verify_weight,
               "alternatives": s.alternatives, "start_slots": s.start_slots,
               "length_strategy": s.length_strategy,
               "hole_lengths": list(s.hole_lengths), "canvas": s.canvas, "max_new_tokens": s.max_new_tokens,
               "heal": s.heal}
        if self.via == "lsp":  # the server chooses these itself; say what it was sent instead
            from dg_lsp.bench.quality.lsp_runner import server_settings

            out.update(hole_lengths=None, canvas=None, server_settings=server_settings(s, self.lsp_settings))
        return out


def plan(options: BenchOptions) -> list[Config]:
    configs = [Config(f"diffusion/{options.via} s={n}", "diffusion", options.via,
                      replace(options.settings, steps=n), n, options.lsp_settings) for n in options.steps]
    if "ar" in options.baselines:
        configs.append(Config("ar/engine", "ar", "engine", options.settings, None))
    if "ar-restricted" in options.baselines:
        configs.append(Config("ar-restricted/engine", "ar-restricted", "engine", options.settings, None))
    if "nosuffix" in options.baselines:
        configs += [Config(f"nosuffix/engine s={n}", "nosuffix", "engine", replace(options.settings, steps=n), n)
                    for n in options.steps]
    if "oracle-length" in options.baselines:
        configs += [Config(f"oracle-length/engine s={n}", "oracle-length", "engine", replace(options.settings, steps=n),
                           n) for n in options.steps]
    if "empty" in options.baselines:
        configs.append(Config("empty", "empty", "none", options.settings, None))
    return configs


class _Engines:
    """Loads the engine once, on first need, and closes it at the end."""

    def __init__(self, options: BenchOptions):
        self.options, self.engine = options, None

    def get(self):
        if self.engine is None:
            from dg_lsp.engine import Engine

            self.engine = Engine.load(self.options.model, self.options.device, self.options.dtype)
            self.engine.warmup()
        return self.engine

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()


def make_runner(config: Config, options: BenchOptions, engines: _Engines):
    if config.mode == "empty":
        return EmptyRunner()
    if config.mode == "ar":
        return AutoregressiveRunner(engines.get(), config.settings)
    if config.mode == "ar-restricted":
        return RestrictedARRunner(engines.get(), config.settings)
    if config.mode == "nosuffix":
        return NoSuffixRunner(engines.get(), config.settings)
    if config.mode == "oracle-length":
        return OracleLengthRunner(engines.get(), config.settings)
    if config.via == "lsp":
        from dg_lsp.bench.quality.lsp_runner import LspRunner

        return LspRunner(options.model, config.settings, options.device, options.dtype,
                         extra_settings=options.lsp_settings)
    return EngineRunner(engines.get(), config.settings)


def _complete(runner, task: Task) -> TaskEdit:
    t0 = time.perf_counter()
    try:
        return runner.complete(task)
    except Exception as exc:  # noqa: BLE001 - one failed completion is a failed sample, never a failed run
        hole = len(task.prefix)
        return TaskEdit("", hole, hole, (time.perf_counter() - t0) * 1000.0, error=f"{type(exc).__name__}: {exc}")


def generate(config: Config, tasks: list[Task], options: BenchOptions, engines: _Engines) -> tuple[list[dict], dict]:
    described = config.describe()
    runner = make_runner(config, options, engines)
    try:
        if tasks:
            _complete(runner, tasks[0])  # warm-up (first-call overheads, server model load): not recorded
        t0 = time.perf_counter()
        samples = []
        for task in tqdm(tasks, desc=config.label, unit="task", disable=not options.progress, file=sys.stderr):
            sample = scoring.score(task, _complete(runner, task))
            sample["label"] = config.label
            samples.append(sample)
        described["wall_s"] = time.perf_counter() - t0
        memory = runner.peak_memory()
        described.update(peak_memory_mb=memory["mb"], peak_memory_kind=memory["kind"])
    finally:
        runner.close()
    return samples, described


def run_benchmark(tasks: list[Task], options: BenchOptions, source: dict, command: str = "") -> dict:
    engines = _Engines(options)
    configs, all_samples, sample_tasks = [], [], []
    try:
        for config in plan(options):
            samples, described = generate(config, tasks, options, engines)
            configs.append(described)
            all_samples.extend(samples)
            sample_tasks.extend(tasks)
        loaded = engines.engine.loaded if engines.engine is not None else None
        packing = engines.engine.packing if engines.engine is not None else None
    finally:
        engines.close()
    n_tests = sum(1 for t in sample_tasks if t.test and t.entry_point)
    if n_tests:
        with tqdm(total=n_tests, desc="tests", unit="prog", disable=not options.progress, file=sys.stderr) as bar:
            scoring.run_tests(sample_tasks, all_samples, options.limits, options.exec_workers, bar)
    samples = scoring.strip_private(all_samples)
    return {
        "schema": report.SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "source": {**source, "n_tasks": len(tasks)},
        "model": loaded.path if loaded else options.model,
        "device": loaded.device if loaded else options.device,
        "dtype": loaded.dtype if loaded else options.dtype,
        "packing": packing,
        "configs": configs,
        "rows": report.build_rows(configs, samples),
        "samples": samples,
    }
