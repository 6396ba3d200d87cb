"""``edgevoice models list|fetch|verify|remove``: the model registry from the shell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from edgevoice.device.cli.common import EXIT_FAILURE, EXIT_OK, add_common_options, load, print_json
from edgevoice.models import (
    FetchProgress,
    ModelListing,
    TerminalProgress,
    VerifyResult,
    fetch_model,
    list_models,
    remove_model,
    verify_all,
    verify_model,
)
from edgevoice.models.store import models_dir_or_default


def register(sub: Any) -> None:
    parser = sub.add_parser("models", help="list, fetch, verify or remove models")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="installed, bundled by packages, and fetchable models")
    _options(listing)
    listing.set_defaults(func=_list)

    fetch = actions.add_parser("fetch", help="download, check and install a model by name")
    fetch.add_argument("name", metavar="NAME")
    fetch.add_argument("--force", action="store_true", help="fetch again even if installed")
    _options(fetch)
    fetch.set_defaults(func=_fetch)

    verify = actions.add_parser("verify", help="check installed models against their hashes")
    verify.add_argument("name", metavar="NAME", nargs="?", help="one model (default: all)")
    _options(verify)
    verify.set_defaults(func=_verify)

    remove = actions.add_parser("remove", help="delete an installed model")
    remove.add_argument("name", metavar="NAME")
    _options(remove)
    remove.set_defaults(func=_remove)


def _options(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser, json_output=True)
    parser.add_argument("--dir", type=Path, metavar="PATH",
                        help="models folder (default: [models] dir, see docs/models.md)")


def _models_dir(args: argparse.Namespace) -> Path:
    if args.dir is not None:
        return Path(args.dir)
    return models_dir_or_default(load(args).config.models.dir or None)


def _list(args: argparse.Namespace) -> int:
    folder = _models_dir(args)
    rows = list_models(folder)
    if args.json:
        print_json({"models_dir": str(folder), "models": [r.as_dict() for r in rows]})
        return EXIT_OK
    print(f"models folder: {folder}")
    print(_table(rows))
    return EXIT_OK


def _table(rows: list[ModelListing]) -> str:
    header = ("NAME", "KIND", "ENGINE", "LANG", "STATUS", "SIZE")
    cells = [header] + [
        (r.name, r.kind, r.engine, r.language or "-", str(r.status),
         f"{r.size / 1e6:.1f} MB" if r.size else "-")
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in cells)


def _fetch(args: argparse.Namespace) -> int:
    folder = _models_dir(args)
    bar = None if args.json else TerminalProgress(sys.stderr)

    def progress(update: FetchProgress) -> None:
        if bar is not None:
            bar(update)

    try:
        loc = fetch_model(args.name, folder, progress, force=args.force)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print_json(loc.as_dict())
    else:
        print(f"{loc.name}: {loc.source} at {loc.path}")
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    folder = _models_dir(args)
    results = [verify_model(args.name, folder)] if args.name else verify_all(folder)
    ok = all(r.ok for r in results)
    if args.json:
        print_json({"ok": ok, "models": [r.as_dict() for r in results]})
    else:
        for result in results:
            print(_verdict(result))
        if not results:
            print(f"no models installed in {folder} and none bundled by installed packages")
    return EXIT_OK if ok else EXIT_FAILURE


def _verdict(result: VerifyResult) -> str:
    head = f"{result.name} ({result.status}): " + ("ok" if result.ok else "FAILED")
    lines = [head] + [f"  problem: {p}" for p in result.problems] + [f"  note: {n}" for n in result.notes]
    return "\n".join(lines)


def _remove(args: argparse.Namespace) -> int:
    removed = remove_model(args.name, _models_dir(args))
    if args.json:
        print_json({"removed": args.name, "path": str(removed)})
    else:
        print(f"removed {args.name} ({removed})")
    return EXIT_OK
