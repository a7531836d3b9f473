#!/usr/bin/env python3
"""Sparse test matrices for the spmv_csr family, of very different row-length distributions.

Writes each matrix as Matrix Market (NAME.mtx, coordinate real general, 1-based) and as the CSR arrays the
family reads (NAME_row_ptr.npy int32, NAME_col_idx.npy int32, NAME_values.npy float32), and prints the
`--size ROWSxCOLSxNNZ` and `--input` arguments for each. Pure Python and seeded: the same files every run.

  banded    every row 7 to 9 entries near the diagonal (a stencil-like matrix)
  powerlaw  row lengths from a Zipf-like law: most rows 1 to 3 entries, a few rows with thousands (a graph)
  blocks    dense 64-column blocks on the diagonal (a block-structured FEM-like matrix)

Usage: make_matrices.py OUT_DIR [--rows N] [--only NAME] [--from-mtx FILE]
  --from-mtx converts an existing Matrix Market file (real or integer or pattern, general) instead.
"""
import argparse
import random
import struct
import sys
from pathlib import Path


def npy(path, descr, values, pack):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), pack), *values))


def banded(rows, rng):
    for r in range(rows):
        width = rng.randint(7, 9)
        start = max(0, min(rows - width, r - width // 2))
        yield r, [(c, rng.uniform(-1, 1)) for c in range(start, start + width)]


def powerlaw(rows, rng):
    for r in range(rows):
        length = min(rows // 20 + 1, int((1 - rng.random()) ** -0.9))  # mean near 10, a few rows in thousands
        cols = sorted(rng.sample(range(rows), length))
        yield r, [(c, rng.uniform(-1, 1)) for c in cols]


def blocks(rows, rng):
    for r in range(rows):
        start = (r // 64) * 64
        yield r, [(c, rng.uniform(-1, 1)) for c in range(start, min(rows, start + 64))]


def write(out, name, rows, cols, entries):
    row_ptr, col_idx, values = [0], [], []
    for _, row in entries:
        for c, v in row:
            col_idx.append(c)
            values.append(v)
        row_ptr.append(len(col_idx))
    with open(out / (name + ".mtx"), "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write("%d %d %d\n" % (rows, cols, len(values)))
        r = 0
        for i, (c, v) in enumerate(zip(col_idx, values)):
            while row_ptr[r + 1] <= i:
                r += 1
            f.write("%d %d %.9g\n" % (r + 1, c + 1, v))
    npy(out / (name + "_row_ptr.npy"), "<i4", row_ptr, "i")
    npy(out / (name + "_col_idx.npy"), "<i4", col_idx, "i")
    npy(out / (name + "_values.npy"), "<f4", values, "f")
    lengths = [row_ptr[i + 1] - row_ptr[i] for i in range(rows)]
    print("%s: %d x %d, %d entries, row lengths %d to %d (mean %.1f)" %
          (name, rows, cols, len(values), min(lengths), max(lengths), len(values) / rows), file=sys.stderr)
    print("--size %dx%dx%d --input row_ptr=%s --input col_idx=%s --input values=%s" %
          (rows, cols, len(values), out / (name + "_row_ptr.npy"), out / (name + "_col_idx.npy"),
           out / (name + "_values.npy")))


def read_mtx(path):
    with open(path) as f:
        banner = f.readline().split()
        if len(banner) < 5 or banner[0] != "%%MatrixMarket" or banner[2] != "coordinate" or banner[4] != "general":
            sys.exit("%s: line 1: only 'coordinate ... general' Matrix Market files are read" % path)
        line = f.readline()
        while line.startswith("%"):
            line = f.readline()
        rows, cols, nnz = (int(x) for x in line.split())
        by_row = [[] for _ in range(rows)]
        for n, line in enumerate(f, start=1):
            parts = line.split()
            r, c = int(parts[0]) - 1, int(parts[1]) - 1
            if not (0 <= r < rows and 0 <= c < cols):
                sys.exit("%s: entry %d: (%d, %d) outside %d x %d" % (path, n, r + 1, c + 1, rows, cols))
            by_row[r].append((c, float(parts[2]) if banner[3] != "pattern" else 1.0))
        if sum(len(r) for r in by_row) != nnz:
            sys.exit("%s: the header says %d entries, the file holds %d" % (path, nnz, sum(len(r) for r in by_row)))
    return rows, cols, [(r, sorted(row)) for r, row in enumerate(by_row)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--rows", type=int, default=200000)
    p.add_argument("--only", choices=["banded", "powerlaw", "blocks"])
    p.add_argument("--from-mtx")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.from_mtx:
        rows, cols, entries = read_mtx(a.from_mtx)
        write(out, Path(a.from_mtx).stem, rows, cols, entries)
        return
    for name, make in (("banded", banded), ("powerlaw", powerlaw), ("blocks", blocks)):
        if a.only in (None, name):
            write(out, name, a.rows, a.rows, list(make(a.rows, random.Random(name))))


if __name__ == "__main__":
    main()
