#!/usr/bin/env python3
"""Every metric name the dashboard and the alerts mention is one the server
exports: each `warden_[a-z_]+` in the given files, less a histogram's
`_bucket`, `_sum` or `_count`, must be a line of deploy/metrics.txt.

Usage: check_metric_names.py METRICS_TXT FILE...   (exit 1 naming each
unknown name and the file it is in)."""

import re
import sys

NAME = re.compile(r"\bwarden_[a-z_]+")
SUFFIX = re.compile(r"_(bucket|sum|count)$")
VALID = re.compile(r"^warden_[a-z][a-z_]*[a-z]$")


def known_names(path):
    names = []
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not VALID.match(line):
            sys.exit(f"{path}:{number}: not a metric name: {line!r}")
        names.append(line)
    if len(set(names)) != len(names):
        sys.exit(f"{path}: a name is listed twice")
    return set(names)


def mentioned(path, known):
    found = set()
    for name in NAME.findall(open(path, encoding="utf-8").read()):
        # A histogram's series (`_bucket`, `_sum`, `_count`) name the histogram.
        base = SUFFIX.sub("", name)
        found.add(base if base in known else name)
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    known = known_names(sys.argv[1])
    unknown = []
    used = set()
    for path in sys.argv[2:]:
        names = mentioned(path, known)
        if not names:
            unknown.append(f"{path}: mentions no warden_ metric at all")
        used |= names
        unknown += [f"{path}: {n} is not in {sys.argv[1]}" for n in sorted(names - known)]
    if unknown:
        print("\n".join(unknown), file=sys.stderr)
        sys.exit(1)
    print(f"   {len(used)} names used, all in {sys.argv[1]} ({len(known)} listed)")
    unused = sorted(known - used)
    if unused:
        print(f"   listed but shown nowhere: {', '.join(unused)}")


if __name__ == "__main__":
    main()
