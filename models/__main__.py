"""CLI: ``python -m ov_autoplace_lab.models [build] [--force] [NAMES...]``.

Builds the zoo (or the named models) into the cache and prints one row per
model: name, nodes, edges, IR path and build seconds (near 0 when reused).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from ov_autoplace_lab.models import ALL_MODELS, FROZEN_HELD_OUT, UNSEEN, ZOO, build, cache_dir, info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ov_autoplace_lab.models", description=__doc__.splitlines()[0])
    # "build" is the only command; it is optional so the bare call builds.
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"models to build (default: all of {', '.join(ZOO)})")
    parser.add_argument("--force", action="store_true", help="rebuild even if a cached IR exists")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    args = parser.parse_args(argv)
    names = args.names[1:] if args.names[:1] == ["build"] else args.names
    names = names or list(ZOO)
    known = ALL_MODELS + UNSEEN + FROZEN_HELD_OUT
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")

    # Every IR path is cache_dir()/<name>.xml, so the column width is known
    # before the first (slow) build and rows can be printed as they finish.
    width = len(str(cache_dir() / "x.xml")) + max(map(len, names))
    print(f"{'name':<19}{'nodes':>6}{'edges':>7}  {'IR path':<{width}}{'seconds':>9}")
    for name in names:
        start = time.perf_counter()
        xml = build(name, force=args.force)
        seconds = time.perf_counter() - start
        meta = info(name)
        print(f"{name:<19}{meta['nodes']:>6}{meta['edges']:>7}  {str(xml):<{width}}{seconds:>9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
