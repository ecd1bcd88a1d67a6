"""Seeded k-let shuffle: a random sequence with exactly the k-let counts of the input.

Method: Altschul & Erikson (1985, Mol. Biol. Evol. 2:526) as an Euler path, the form of Kandel et al. (1996,
Discrete Appl. Math. 71:171) and of `ushuffle` (Jiang et al. 2008, BMC Bioinformatics 9:192). The sequence is a
path through the multigraph whose vertices are its (k-1)-mers and whose edges are its k-lets (one per
occurrence). A random spanning arborescence rooted at the last (k-1)-mer is drawn with Wilson's loop-erased random
walk (Wilson 1996, STOC), each vertex's tree edge becomes its last exit, the other exits are put in random order,
and the walk from the first (k-1)-mer that takes the exits in that order is an Euler path: it uses every edge once,
so every k-let count, the first and the last k-1 letters are kept. (By the BEST theorem each Euler path is drawn
with equal probability.) k = 1 is a plain permutation. Torch-free.
"""

from __future__ import annotations

import numpy as np


def klet_shuffle(sequence: str, k: int, rng: np.random.Generator) -> str:
    """A random sequence with the k-let counts of `sequence` (same length, letters, first and last k-1 letters).

    sequence: any letters (N and lower case are letters like the others); k >= 1; rng: the seeded generator every
    draw comes from (the same generator state gives the same shuffle). A sequence shorter than k + 1 letters has
    one arrangement and is returned as it is. Raises ValueError for k < 1.
    """
    if k < 1:
        raise ValueError(f"k-let shuffle needs k >= 1, got {k}")
    if k == 1:
        letters = list(sequence)
        return "".join(letters[i] for i in rng.permutation(len(letters)))
    if len(sequence) <= k:
        return sequence
    # vertex = (k-1)-mer; exits[v] = the target vertices of v's out-edges, one per k-let occurrence
    exits: dict[str, list[str]] = {}
    for i in range(len(sequence) - k + 1):
        exits.setdefault(sequence[i : i + k - 1], []).append(sequence[i + 1 : i + k])
    start, end = sequence[: k - 1], sequence[-(k - 1) :]
    # Wilson's algorithm on the out-edges: a uniform random arborescence pointing to `end`
    in_tree = {end}
    last_exit: dict[str, int] = {}
    for u in sorted(exits):
        v = u
        while v not in in_tree:
            last_exit[v] = int(rng.integers(len(exits[v])))
            v = exits[v][last_exit[v]]
        v = u
        while v not in in_tree:
            in_tree.add(v)
            v = exits[v][last_exit[v]]
    order: dict[str, list[str]] = {}
    for v in sorted(exits):
        targets = exits[v]
        if v in last_exit:
            keep = last_exit[v]
            rest = [t for j, t in enumerate(targets) if j != keep]
            order[v] = [rest[j] for j in rng.permutation(len(rest))] + [targets[keep]]
        else:  # the end vertex: every exit free
            order[v] = [targets[j] for j in rng.permutation(len(targets))]
    out = [start]
    taken = dict.fromkeys(order, 0)
    v = start
    for _ in range(len(sequence) - k + 1):
        nxt = order[v][taken[v]]
        taken[v] += 1
        out.append(nxt[-1])
        v = nxt
    return "".join(out)


def klet_counts(sequence: str, k: int) -> dict[str, int]:
    """{k-let: occurrences} of `sequence` (overlapping), the invariant `klet_shuffle` keeps."""
    counts: dict[str, int] = {}
    for i in range(len(sequence) - k + 1):
        counts[sequence[i : i + k]] = counts.get(sequence[i : i + k], 0) + 1
    return counts
