"""Sample sources and their expected chunk outlines: Python, JavaScript, TypeScript, Ruby, PHP.

Each outline lists (start_line, end_line, kind, symbol, calls) per chunk, 1-based inclusive.
"""

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
