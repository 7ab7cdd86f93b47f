"""One small program per language, with the facts the tests expect about it.

Each sample has a function ``add`` (or the language's closest form) whose range
is known, a line right after it ends, a mid-line cursor inside another scope,
and a broken variant with an unclosed bracket.
"""

from __future__ import annotations

from dataclasses import dataclass

from dg_lsp.context import Scope


@dataclass(frozen=True)
class Sample:
    language_id: str
    source: str
    body_needle: str  # first statement of `add`'s body; the cursor goes before it
    chain: tuple[Scope, ...]  # expected scopes there, outer to inner
    after_line: int  # the line right after `add` ends
    after_chain: tuple[Scope, ...]
    mid_needle: str  # the cursor goes right before this text (mid-line)
    mid_chain: tuple[Scope, ...]
    broken: str
    broken_after: str  # the cursor goes right after this text
    broken_innermost: tuple[str, str]  # (kind, name)


PYTHON = """import os


class Calc:
    def add(self, a, b):
        total = a + b
        return total


def main():
    print(Calc().add(1, 2))
"""

JAVASCRIPT = """import fs from "fs";

function add(a, b) {
  const total = a + b;
  return total;
}

class Calc {
  mul(a, b) {
    return a * b;
  }
}

const square = (x) => {
  return add(x, x);
};
"""

TYPESCRIPT = """interface Point { x: number }

export function add(a: number, b: number): number {
  const total = a + b;
  return total;
}

class Shape {
  area(p: Point): number {
    return p.x * p.x;
  }
}
"""

TSX = """import React from "react";

function add(a: number, b: number) {
  const total = a + b;
  return total;
}

export function App(props: { n: number }) {
  return <div className="x">{props.n}</div>;
}
"""

GO = """package main

import "fmt"

func add(a int, b int) int {
	total := a + b
	return total
}

type Calc struct {
	base int
}

func (c *Calc) Mul(a int) int {
	return c.base * a
}
"""

RUST = """use std::fmt;

fn add(a: i32, b: i32) -> i32 {
    let total = a + b;
    total
}

struct Calc { base: i32 }

impl Calc {
    fn mul(&self, a: i32) -> i32 {
        self.base * a
    }
}
"""

JAVA = """package demo;

public class Calc {
    int add(int a, int b) {
        int total = a + b;
        return total;
    }

    public Calc() {
        this.base = add(1, 2);
    }
}
"""

C = """#include <stdio.h>

int add(int a, int b) {
    int total = a + b;
    return total;
}

struct point {
    int x;
};

static char *name(struct point *p) {
    return p->x > 0 ? "pos" : "neg";
}
"""

CPP = """#include <vector>

int add(int a, int b) {
    int total = a + b;
    return total;
}

class Calc {
 public:
  int mul(int a) const {
    return base * a;
  }
  int base = 2;
};
"""

# Allman braces, a block namespace, a preprocessor line at column 0 inside the class (a region may not start there)
CSHARP = """using System;

namespace Demo
{
    public class Calc
    {
#if DEBUG
        private int _calls;
#endif
        public int Add(int a, int b)
        {
            int total = a + b;
            return total;
        }

        public Calc()
        {
            Base = Add(1, 2);
        }
    }
}
"""


# the opening tag, a namespace, an attribute line at column 0, a closure inside a method
PHP = """<?php

namespace Demo;

#[Service]
final class Calc
{
    public function add(int $a, int $b): int
    {
        $total = $a + $b;
        return $total;
    }

    public function __construct()
    {
        $this->base = array_map(fn($x) => $x * 2, [1, 2]);
    }
}
"""


def _s(kind: str, name: str | None, start: int, end: int) -> Scope:
    return Scope(kind, name, start, end)


SAMPLES: dict[str, Sample] = {
    "python": Sample(
        "python",
        PYTHON,
        "total = a + b",
        (_s("class", "Calc", 3, 6), _s("method", "add", 4, 6)),
        7,
        (),
        "1, 2))",
        (_s("function", "main", 9, 10),),
        "def add(a, b):\n    total = sum(a,\n    \n\ndef main():\n    pass\n",
        "total = sum(a,\n    ",
        ("function", "add"),
    ),
    "javascript": Sample(
        "javascript",
        JAVASCRIPT,
        "const total",
        (_s("function", "add", 2, 5),),
        6,
        (),
        "x, x);",
        (_s("function", "square", 13, 15),),
        "function add(a, b) {\n  if (a) {\n    foo(\n  \n",
        "foo(\n  ",
        ("function", "add"),
    ),
    "typescript": Sample(
        "typescript",
        TYPESCRIPT,
        "const total",
        (_s("function", "add", 2, 5),),
        6,
        (),
        "p.x;",
        (_s("class", "Shape", 7, 11), _s("method", "area", 8, 10)),
        "class Shape {\n  area(p: Point): number {\n    let y = (\n  \n",
        "let y = (\n  ",
        ("method", "area"),
    ),
    "tsx": Sample(
        "typescriptreact",
        TSX,
        "const total",
        (_s("function", "add", 2, 5),),
        6,
        (),
        "{props.n}",
        (_s("function", "App", 7, 9),),
        "function add(a: number) {\n  const xs = [a, (\n  \n",
        "[a, (\n  ",
        ("function", "add"),
    ),
    "go": Sample(
        "go",
        GO,
        "total :=",
        (_s("function", "add", 4, 7),),
        8,
        (),
        "base * a",
        (_s("method", "Mul", 13, 15),),
        "package main\n\nfunc add(a int) int {\n\tif a > 0 {\n\t\tx := foo(\n\t\n",
        "foo(\n\t",
        ("function", "add"),
    ),
    "rust": Sample(
        "rust",
        RUST,
        "let total",
        (_s("function", "add", 2, 5),),
        6,
        (),
        "base * a",
        (_s("impl", "Calc", 9, 13), _s("method", "mul", 10, 12)),
        "impl Calc {\n    fn mul(&self) {\n        let x = foo(\n        \n",
        "foo(\n        ",
        ("method", "mul"),
    ),
    "java": Sample(
        "java",
        JAVA,
        "int total",
        (_s("class", "Calc", 2, 11), _s("method", "add", 3, 6)),
        7,
        (_s("class", "Calc", 2, 11),),
        "add(1, 2);",
        (_s("class", "Calc", 2, 11), _s("method", "Calc", 8, 10)),
        "class Calc {\n    int add(int a) {\n        int x = foo(\n        \n    }\n",
        "foo(\n        ",
        ("method", "add"),
    ),
    "c": Sample(
        "c",
        C,
        "int total",
        (_s("function", "add", 2, 5),),
        6,
        (),
        '"pos"',
        (_s("function", "name", 11, 13),),
        "int add(int a) {\n    if (a) {\n        foo(\n    \n",
        "foo(\n    ",
        ("function", "add"),
    ),
    "cpp": Sample(
        "cpp",
        CPP,
        "int total",
        (_s("function", "add", 2, 5),),
        6,
        (),
        "base * a",
        (_s("class", "Calc", 7, 13), _s("method", "mul", 9, 11)),
        "class Calc {\n  int mul(int a) {\n    foo(\n    \n",
        "foo(\n    ",
        ("method", "mul"),
    ),
    "csharp": Sample(
        "csharp",
        CSHARP,
        "int total",
        (_s("class", "Calc", 4, 19), _s("method", "Add", 9, 13)),
        14,
        (_s("class", "Calc", 4, 19),),
        "Add(1, 2);",
        (_s("class", "Calc", 4, 19), _s("method", "Calc", 15, 18)),
        "class Calc\n{\n    int Add(int a)\n    {\n        int x = Foo(\n        \n    }\n",
        "Foo(\n        ",
        ("method", "Add"),
    ),
    "php": Sample(
        "php",
        PHP,
        "$total = ",
        (_s("class", "Calc", 4, 17), _s("method", "add", 7, 11)),
        12,
        (_s("class", "Calc", 4, 17),),
        "$x * 2",
        (_s("class", "Calc", 4, 17), _s("method", "__construct", 13, 16), _s("function", None, 15, 15)),
        "<?php\nclass Calc\n{\n    public function add($a)\n    {\n        $x = foo(\n        \n    }\n",
        "foo(\n        ",
        ("method", "add"),
    ),
}
