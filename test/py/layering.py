"""layering -- the folders of src/ depend one way, read from the built objects.

Each object src/FOLDER/NAME.o belongs to FOLDER (src/NAME.o to "src", the
module glue).  `nm` gives each object's defined symbols (any type but U)
and undefined ones (U); an undefined symbol another object defines is a
reference from the first object to the second, and so from its folder to
the other's.  The order of the folders, lowest first, is read from
test/layers: a reference from a folder to one later in the list points up
and fails.  Independently of the order, the folders' reference graph must
have no cycle (Tarjan's strongly connected components): a cycle is printed
edge by edge, each with one symbol and both files.

Prints TAP: one test per object (its references to higher folders, each
with the symbol and both files), one saying every object's folder is in
test/layers, one for the cycles between folders; exits 1 when any fails, 2
when there is nothing to read (no objects: build first).
"""

import argparse
import collections
import glob
import os
import subprocess
import sys


def read_layers(path):
    """read_layers returns the folders of the order file, lowest first."""
    layers = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                layers.append(line)
    return layers


def folder_of(src, obj):
    """folder_of returns the folder an object belongs to: its first path
    part under src/, or "src" for an object at the top of src/."""
    rel = os.path.relpath(obj, src)
    parts = rel.split(os.sep)
    return "src" if len(parts) == 1 else parts[0]


def read_symbols(objects):
    """read_symbols returns ({symbol: defining object}, {object: set of
    undefined symbols}) from nm."""
    defined, undefined = {}, {}
    for obj in objects:
        out = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
        undefined[obj] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                undefined[obj].add(parts[1])
            elif len(parts) == 3 and parts[1] != "U" and parts[1].isupper():
                defined[parts[2]] = obj
    return defined, undefined


def strongly_connected(nodes, edges):
    """strongly_connected returns the components of more than one node (or
    one with an edge to itself) of the graph edges ({node: set of nodes})."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def shortest_cycle(comp, edges):
    """shortest_cycle returns the shortest cycle inside the strongly
    connected component comp, as a list of folders whose first and last are
    the same (breadth-first from each folder back to itself)."""
    members = set(comp)
    best = None
    for start in sorted(comp):
        previous = {}
        queue = collections.deque([start])
        found = False
        while queue and not found:
            v = queue.popleft()
            for w in sorted(edges.get(v, ())):
                if w not in members:
                    continue
                if w == start:
                    previous[start] = v
                    found = True
                    break
                if w not in previous:
                    previous[w] = v
                    queue.append(w)
        if not found:
            continue
        path = [start]
        v = previous[start]
        while v != start:
            path.append(v)
            v = previous[v]
        path.append(start)
        path.reverse()
        if best is None or len(path) < len(best):
            best = path
    return best


def main():
    """main runs the check and prints its TAP; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", required=True, help="the order file (test/layers)")
    ap.add_argument("root", help="the checkout (or build copy) whose src/ holds the objects")
    args = ap.parse_args()
    src = os.path.join(args.root, "src")
    layers = read_layers(args.layers)
    rank = {name: i for i, name in enumerate(layers)}
    objects = sorted(glob.glob(os.path.join(src, "*.o")) + glob.glob(os.path.join(src, "*", "*.o")))
    if not objects:
        print("1..0 # SKIP no objects under %s: build first" % src)
        print("layering: no objects under %s (run make first)" % src, file=sys.stderr)
        return 2
    defined, undefined = read_symbols(objects)

    def name(obj):
        return os.path.relpath(obj, args.root)

    # per object: its references to other objects, (symbol, object) pairs
    uses = {obj: sorted((sym, defined[sym]) for sym in undefined[obj]
                        if sym in defined and defined[sym] != obj) for obj in objects}
    folder_edges = collections.defaultdict(dict)  # folder -> folder -> (sym, from, to)
    for obj in objects:
        for sym, other in uses[obj]:
            a, b = folder_of(src, obj), folder_of(src, other)
            if a != b:
                folder_edges[a].setdefault(b, (sym, obj, other))

    print("1..%d" % (len(objects) + 2))
    n, failed = 0, 0
    unknown = sorted({folder_of(src, o) for o in objects} - set(rank))
    n += 1
    if unknown:
        failed += 1
        print("not ok %d - every folder of src/ is in test/layers" % n)
        for f in unknown:
            print("#   folder %s is not in %s" % (f, args.layers))
    else:
        print("ok %d - every folder of src/ is in test/layers" % n)
    for obj in objects:
        n += 1
        a = folder_of(src, obj)
        up = [(sym, other) for sym, other in uses[obj]
              if folder_of(src, other) != a and rank.get(folder_of(src, other), -1) > rank.get(a, len(rank))]
        if up:
            failed += 1
            print("not ok %d - %s uses no higher folder" % (n, name(obj)))
            for sym, other in up:
                print("#   upward reference: %s (%s) uses %s, defined in %s (%s): %s is below %s"
                      % (name(obj), a, sym, name(other), folder_of(src, other), a, folder_of(src, other)))
        else:
            print("ok %d - %s uses no higher folder" % (n, name(obj)))
    n += 1
    cycles = strongly_connected(set(folder_edges) | {b for d in folder_edges.values() for b in d},
                                {a: set(d) for a, d in folder_edges.items()})
    if cycles:
        failed += 1
        print("not ok %d - no cycle between folders" % n)
        for comp in cycles:
            path = shortest_cycle(comp, {a: set(d) for a, d in folder_edges.items()})
            print("#   cycle between folders: %s" % " -> ".join(path))
            for a, b in zip(path, path[1:]):
                sym, x, y = folder_edges[a][b]
                print("#     %s -> %s: %s uses %s, defined in %s" % (a, b, name(x), sym, name(y)))
            if len(comp) > len(path) - 1:
                print("#     (the folders %s all lie on cycles)" % " ".join(comp))
    else:
        print("ok %d - no cycle between folders" % n)
    print("# layering: %d objects in %d folders, %d folder references, %d failed"
          % (len(objects), len({folder_of(src, o) for o in objects}),
             sum(len(d) for d in folder_edges.values()), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
