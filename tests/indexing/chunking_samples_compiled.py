"""Sample sources and their expected chunk outlines: Go, Rust, Java, C, C++, C#.

Each outline lists (start_line, end_line, kind, symbol, calls) per chunk, 1-based inclusive.
"""

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
