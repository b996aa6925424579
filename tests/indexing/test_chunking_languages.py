"""Per-language structure of chunks: symbols, kinds, exact line ranges and calls.

Each source below is real-looking code; the expected outline lists, for every chunk,
(start_line, end_line, kind, symbol, calls).  Line numbers are 1-based and inclusive.
"""

from __future__ import annotations

import pytest

from indexing.chunking import ChunkPiece, chunk_file


def outline(pieces: list[ChunkPiece]) -> list[tuple[int, int, str, str | None, tuple[str, ...]]]:
    return [(p.start_line, p.end_line, p.kind, p.symbol, p.calls) for p in pieces]


def lines_of(text: str, piece: ChunkPiece) -> str:
    return "\n".join(text.split("\n")[piece.start_line - 1 : piece.end_line])


PYTHON_SOURCE = r'''
"""Module doc."""
import os

X = 1


# helper comment
@decorator(1)
def top(a):
    """Doc."""
    return helper(a) + os.path.join("a")


class Foo(Base):
    """Foo doc."""

    attr = 1

    def __init__(self):
        self.x = make()

    # about bar
    @property
    def bar(self):
        def inner():
            return 1
        return inner()

    other = 2

    class Inner:
        def deep(self):
            pass

if __name__ == "__main__":
    top(1)
'''[1:]

PYTHON_EXPECTED = [
    (1, 4, "module", None, ()),
    (7, 11, "function", "top", ("decorator", "helper", "join")),
    (14, 17, "class", "Foo", ()),
    (19, 20, "method", "Foo.__init__", ("make",)),
    (22, 27, "method", "Foo.bar", ("inner",)),
    (29, 29, "class", "Foo", ()),
    (31, 31, "class", "Foo.Inner", ()),
    (32, 33, "method", "Foo.Inner.deep", ()),
    (35, 36, "module", None, ("top",)),
]

JAVASCRIPT_SOURCE = r"""
'use strict';
const fs = require('fs');

/**
 * Reads config.
 */
async function readConfig(path) {
  const raw = await fs.promises.readFile(path, 'utf8');
  return JSON.parse(raw);
}

const parse = (s) => s.split(',').map(Number);

export default class Store extends Base {
  static instance = null;

  constructor() {
    super();
    this.items = new Map();
  }

  get(key) {
    return this.items.get(key);
  }
}

module.exports = { readConfig, parse };
"""[1:]

JAVASCRIPT_EXPECTED = [
    (1, 2, "module", None, ("require",)),
    (4, 10, "function", "readConfig", ("parse", "readFile")),
    (12, 12, "function", "parse", ("map", "split")),
    (14, 15, "class", "Store", ()),
    (17, 20, "method", "Store.constructor", ("Map",)),
    (22, 25, "method", "Store.get", ("get",)),
    (27, 27, "module", None, ()),
]

TYPESCRIPT_SOURCE = r"""
import { x } from "y";

/** Adds. */
export function add(a: number, b: number): number {
  return sum([a, b]);
}

export const mul = (a: number) => {
  return a * factor.get();
};

export interface Shape {
  area(): number;
}

type Id = string;

@Component({})
export class Circle implements Shape {
  private r = 1;

  constructor(r: number) {
    this.r = r;
  }

  // area of it
  @memo
  area(): number {
    return Math.PI * this.r;
  }

  handler = () => { this.emit("x"); };
}

namespace NS {
  export function inNs() { return new Circle(2); }
}
"""[1:]

TYPESCRIPT_EXPECTED = [
    (1, 1, "module", None, ()),
    (3, 6, "function", "add", ("sum",)),
    (8, 10, "function", "mul", ("get",)),
    (12, 14, "class", "Shape", ()),
    (16, 16, "module", None, ()),
    (18, 20, "class", "Circle", ("Component",)),
    (22, 24, "method", "Circle.constructor", ()),
    (26, 30, "method", "Circle.area", ()),
    (32, 33, "method", "Circle.handler", ("emit",)),
    (35, 35, "module", None, ()),
    (36, 37, "function", "inNs", ("Circle",)),
]

GO_SOURCE = r"""
package main

import "fmt"

// Server serves.
type Server struct {
	addr string
}

// Run runs it.
func (s *Server) Run(ctx context.Context) error {
	fmt.Println(s.addr)
	return s.listen()
}

func main() {
	s := &Server{}
	s.Run(nil)
}
"""[1:]

GO_EXPECTED = [
    (1, 3, "module", None, ()),
    (5, 8, "class", "Server", ()),
    (10, 14, "method", "Server.Run", ("Println", "listen")),
    (16, 19, "function", "main", ("Run",)),
]

RUST_SOURCE = r"""
use std::fmt;

/// A point.
#[derive(Debug)]
pub struct Point {
    x: i32,
}

impl Point {
    /// New.
    pub fn new(x: i32) -> Self {
        Point { x }
    }

    fn dist(&self) -> f64 {
        self.x.abs().into()
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}

fn main() {
    let p = Point::new(1);
    println!("{}", p.dist());
}
"""[1:]

RUST_EXPECTED = [
    (1, 1, "module", None, ()),
    (3, 7, "class", "Point", ()),
    (9, 9, "class", "Point", ()),
    (10, 13, "method", "Point.new", ()),
    (15, 18, "method", "Point.dist", ("abs", "into")),
    (20, 20, "class", "Point", ()),
    (21, 24, "method", "Point.fmt", ()),
    (26, 29, "function", "main", ("new",)),
]

JAVA_SOURCE = r"""
package p;

import java.util.List;

/**
 * Doc.
 */
@Entity
public class A extends B {
    private int x;

    /** Ctor. */
    public A() {
        super();
    }

    @Override
    public String toString() {
        return String.valueOf(x) + helper(new C());
    }

    static class Inner {
        void q() { run(); }
    }
}

enum E {
    X;
    void f() {}
}
"""[1:]

JAVA_EXPECTED = [
    (1, 3, "module", None, ()),
    (5, 10, "class", "A", ()),
    (12, 15, "method", "A.A", ()),
    (17, 20, "method", "A.toString", ("C", "helper", "valueOf")),
    (22, 22, "class", "A.Inner", ()),
    (23, 25, "method", "A.Inner.q", ("run",)),
    (27, 28, "class", "E", ()),
    (29, 30, "method", "E.f", ()),
]

C_SOURCE = r"""
#include <stdio.h>

/* Point. */
typedef struct {
    int x;
} Point;

struct node { struct node *next; };

struct fwd;

/*
 * Main.
 */
int *find(struct node *n, int v)
{
    printf("%d", v);
    return lookup(n->next, v);
}
"""[1:]

C_EXPECTED = [
    (1, 1, "module", None, ()),
    (3, 6, "class", "Point", ()),
    (8, 8, "class", "node", ()),
    (10, 10, "module", None, ()),
    (12, 19, "function", "find", ("lookup", "printf")),
]

CPP_SOURCE = r"""
#include <vector>

namespace geo {

// A shape.
class Shape {
public:
    virtual ~Shape() {}
    double area() const { return compute(); }
    int n;
};

template <typename T>
T Shape::scale(T t) {
    return helper::mul(t, 2);
}

}  // namespace geo

static int main(int argc, char **argv) {
    auto s = new geo::Shape();
    return s->area();
}
"""[1:]

CPP_EXPECTED = [
    (1, 3, "module", None, ()),
    (5, 7, "class", "Shape", ()),
    (8, 8, "method", "Shape.~Shape", ()),
    (9, 9, "method", "Shape.area", ("compute",)),
    (10, 11, "class", "Shape", ()),
    (13, 18, "method", "Shape.scale", ("mul",)),
    (20, 23, "function", "main", ("Shape", "area")),
]

CSHARP_SOURCE = r"""
using System;

namespace App.Core
{
    /// <summary>Svc.</summary>
    [Serializable]
    public class Service : IService
    {
        private readonly int _x;

        public Service(int x) { _x = x; }

        /// <summary>Run.</summary>
        public async Task RunAsync()
        {
            await _client.SendAsync(new Request());
            Log("x");
        }

        public int Count { get; set; }
    }

    public interface IService { Task RunAsync(); }
}
"""[1:]

CSHARP_EXPECTED = [
    (1, 4, "module", None, ()),
    (5, 9, "class", "Service", ()),
    (11, 11, "method", "Service.Service", ()),
    (13, 18, "method", "Service.RunAsync", ("Log", "Request", "SendAsync")),
    (20, 21, "class", "Service", ()),
    (23, 24, "class", "IService", ()),
]

RUBY_SOURCE = r"""
require "json"

module Billing
  # An invoice.
  class Invoice < Base
    attr_reader :total

    def initialize(total)
      @total = total
    end

    # Tax.
    def tax
      compute_tax(total).round
    end

    def self.build
      new(0)
    end
  end
end

def top_level
  puts "hi"
end
"""[1:]

RUBY_EXPECTED = [
    (1, 1, "module", None, ("require",)),
    (3, 3, "class", "Billing", ()),
    (4, 6, "class", "Billing.Invoice", ("attr_reader",)),
    (8, 10, "method", "Billing.Invoice.initialize", ()),
    (12, 15, "method", "Billing.Invoice.tax", ("compute_tax", "round")),
    (17, 21, "method", "Billing.Invoice.build", ("new",)),
    (23, 25, "function", "top_level", ("puts",)),
]

PHP_SOURCE = r"""
<?php

namespace App\Models;

use Illuminate\Support\Str;

/**
 * A user.
 */
class User extends Model
{
    protected $fillable = ['name'];

    /** Name. */
    public function name(): string
    {
        return Str::upper($this->format($this->name));
    }
}

function helper($x) {
    return new User(strlen($x));
}
"""[1:]

PHP_EXPECTED = [
    (1, 5, "module", None, ()),
    (7, 12, "class", "User", ()),
    (14, 19, "method", "User.name", ("format", "upper")),
    (21, 23, "function", "helper", ("User", "strlen")),
]


@pytest.mark.parametrize(
    ("language", "path", "source", "expected"),
    [
        ("python", "pkg/a.py", PYTHON_SOURCE, PYTHON_EXPECTED),
        ("javascript", "src/store.js", JAVASCRIPT_SOURCE, JAVASCRIPT_EXPECTED),
        ("typescript", "src/shapes.ts", TYPESCRIPT_SOURCE, TYPESCRIPT_EXPECTED),
        ("go", "cmd/server.go", GO_SOURCE, GO_EXPECTED),
        ("rust", "src/point.rs", RUST_SOURCE, RUST_EXPECTED),
        ("java", "src/main/java/p/A.java", JAVA_SOURCE, JAVA_EXPECTED),
        ("c", "src/find.c", C_SOURCE, C_EXPECTED),
        ("cpp", "src/shape.cpp", CPP_SOURCE, CPP_EXPECTED),
        ("csharp", "App/Service.cs", CSHARP_SOURCE, CSHARP_EXPECTED),
        ("ruby", "lib/billing.rb", RUBY_SOURCE, RUBY_EXPECTED),
        ("php", "app/Models/User.php", PHP_SOURCE, PHP_EXPECTED),
    ],
)
def test_outline_per_language(
    language: str, path: str, source: str, expected: list[tuple[object, ...]]
) -> None:
    pieces = chunk_file(source, language, path)
    assert outline(pieces) == expected
    for piece in pieces:
        assert piece.content == lines_of(source, piece)
