"""Summarise a py-spy profile in its raw (collapsed) format, as the benchmarks' ``--profile`` write
it: the functions with the most samples on the stack (inclusive) and at the top of it (self).

    python bench/profile_summary.py PROFILE.txt [TOP]
"""

from __future__ import annotations

import sys
from collections import Counter


def main() -> None:
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    with open(path) as lines:
        for line in lines:
            stack, _, count = line.rstrip().rpartition(" ")
            samples = int(count)
            total += samples
            frames = stack.split(";")
            own[frames[-1]] += samples
            for frame in set(frames):
                inclusive[frame] += samples
    print(f"{total} samples")
    for title, counter in (("inclusive", inclusive), ("self", own)):
        print(f"== {title}")
        for frame, samples in counter.most_common(top):
            print(f"{100 * samples / max(total, 1):5.1f}% {frame[:150]}")


if __name__ == "__main__":
    main()
