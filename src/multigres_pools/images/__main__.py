"""`make images`: build the images the install bundle and the pool pods name, from Debian packages
and pinned sources only, and print each one's reference, digest and size.

    python -m multigres_pools.images [build] [NAME ...]   # every image, or the named ones
    python -m multigres_pools.images list                 # what would be built, nothing runs
    python -m multigres_pools.images lock                 # regenerate images/pools/requirements.txt
"""

from __future__ import annotations

import argparse
import sys

from multigres_pools.images import catalog
from multigres_pools.images.build import build
from multigres_pools.images.lock import resolve
from multigres_pools.images.steps import ImageBuildError
from multigres_pools.paths import collection_root
from multigres_pools.playground.toolchain import ToolchainError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multigres_pools.images", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="build", choices=("build", "list", "lock"))
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of {', '.join(catalog.BY_NAME)}")
    args = parser.parse_args(argv)
    repo = collection_root()
    if args.command == "list":
        for recipe in catalog.RECIPES:
            print(f"{recipe.name:<26} {recipe.ref:<53} uid {recipe.user}  {recipe.containerfile(repo)}")
        return 0
    if args.command == "lock":
        target = repo / catalog.POOLS_LOCK
        target.write_text(resolve(repo))
        print(target)
        return 0
    try:
        built = build(tuple(args.names) or tuple(catalog.BY_NAME), repo,
                      progress=lambda line: print(line, flush=True))
    except (ImageBuildError, ToolchainError) as exc:
        print(f"images: FAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("images: interrupted; nothing half-built was kept", file=sys.stderr)
        return 130
    print(f"{'IMAGE':<26} {'REFERENCE':<53} {'DIGEST':<19}  {'SIZE':>10}  {'BUILD':<14} ARCHIVE")
    for item in built:
        print(item.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
