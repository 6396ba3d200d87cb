"""``edgevoice knowledge add|list|search|rebuild|stats``: the knowledge base from the shell."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from edgevoice.device.cli.common import EXIT_FAILURE, EXIT_OK, add_common_options, load, print_json
from edgevoice.device.config import LoadedConfig
from edgevoice.device.config.loader import default_paths
from edgevoice.device.knowledge import KnowledgeBase
from edgevoice.device.knowledge.errors import KnowledgePathError
from edgevoice.device.knowledge.index import BuildReport, discover


def register(sub: Any) -> None:
    parser = sub.add_parser("knowledge", help="the on-device knowledge base: add, list, search, "
                                              "rebuild, stats")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    add = actions.add_parser("add", help="add a file or folder to [knowledge] paths and index it")
    add.add_argument("path", type=Path, metavar="PATH")
    add_common_options(add, json_output=True)
    add.set_defaults(func=_add)

    listing = actions.add_parser("list", help="the indexed files, their titles and chunk counts")
    add_common_options(listing, json_output=True)
    listing.set_defaults(func=_list)

    search = actions.add_parser("search", help="the chunks a question finds, with scores and sources")
    search.add_argument("question", metavar="QUESTION")
    search.add_argument("--limit", type=int, default=5, metavar="N", help="chunks to show (default 5)")
    add_common_options(search, json_output=True)
    search.set_defaults(func=_search)

    rebuild = actions.add_parser("rebuild", help="bring the index up to date (only changed files)")
    rebuild.add_argument("--full", action="store_true", help="re-chunk every file")
    add_common_options(rebuild, json_output=True)
    rebuild.set_defaults(func=_rebuild)

    stats = actions.add_parser("stats", help="files, chunks, size and the synced bundle")
    add_common_options(stats, json_output=True)
    stats.set_defaults(func=_stats)


def _base(loaded: LoadedConfig) -> KnowledgeBase:
    return KnowledgeBase(loaded.config.knowledge, state_dir=Path(loaded.config.device.state_dir))


def _up_to_date(knowledge: KnowledgeBase, *, full: bool = False) -> BuildReport:
    report, reader = knowledge.build(full=full)
    knowledge.swap_reader(reader, report)
    return report


def _print_report(report: BuildReport) -> None:
    print(f"index {report.index}: {report.files} files, {report.chunks} chunks "
          f"({len(report.rechunked)} files re-chunked, {len(report.removed)} removed"
          f"{', rebuilt from scratch' if report.from_scratch else ''}) in {report.seconds:.2f} s")
    for warning in report.warnings:
        print(f"warning: {warning}")


def _writable_config(args: argparse.Namespace) -> Path:
    if args.config is not None:
        return Path(args.config)
    system, user = default_paths()
    return system if os.geteuid() == 0 else user


def _add(args: argparse.Namespace) -> int:
    from edgevoice.device.config.persist import persist_patch

    path = Path(args.path).expanduser().resolve()
    files, warnings = discover([path])
    if warnings:
        raise KnowledgePathError(f"{path} does not exist; give a knowledge file or folder")
    if not files:
        raise KnowledgePathError(
            f"{path} holds no knowledge files (.md, .txt or Q/A .toml); nothing was added"
        )
    loaded = load(args)
    paths = list(loaded.config.knowledge.paths)
    added = str(path) not in paths
    target = _writable_config(args)
    if added:
        paths.append(str(path))
        persist_patch(target, {"knowledge": {"paths": paths}})
        loaded = load(args)
    knowledge = _base(loaded)
    report, reader = knowledge.build(strict=True)
    knowledge.swap_reader(reader, report)
    knowledge.close()
    if args.json:
        print_json({"added": added, "path": str(path), "config": str(target), "build": report.as_dict()})
        return EXIT_OK
    print(f"{'added' if added else 'already in [knowledge] paths:'} {path} ({len(files)} files)"
          + (f"; saved in {target}" if added else ""))
    _print_report(report)
    if not loaded.config.knowledge.enabled:
        print("note: [knowledge] enabled is false; set it to true for the device to use it")
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    knowledge = _base(load(args))
    _up_to_date(knowledge)
    files = knowledge.reader().files()
    knowledge.close()
    if args.json:
        print_json({"files": files})
        return EXIT_OK
    if not files:
        print("no knowledge files; add some with: edgevoice knowledge add PATH")
    for item in files:
        print(f"{item['chunks']:>5}  {item['title']}  ({item['path']})")
    return EXIT_OK


def _search(args: argparse.Namespace) -> int:
    loaded = load(args)
    settings = loaded.config.knowledge
    knowledge = _base(loaded)
    _up_to_date(knowledge)
    found = knowledge.search(args.question, max(1, args.limit))
    knowledge.close()
    if args.json:
        print_json({"question": args.question, "min_score": settings.min_score,
                    "answer_score": settings.answer_score,
                    "chunks": [p.as_dict() | {"context": p.confidence >= settings.min_score,
                                              "local_answer": p.confidence >= settings.answer_score}
                               for p in found]})
        return EXIT_OK
    if not found:
        print("nothing in the knowledge base matches")
        return EXIT_FAILURE
    for rank, passage in enumerate(found, 1):
        tag = ("answer" if passage.confidence >= settings.answer_score and rank == 1
               else "context" if passage.confidence >= settings.min_score else "below")
        print(f"{rank}. {passage.confidence:.2f} [{tag}] bm25 {passage.bm25:.2f}  {passage.key}  "
              f"({passage.source})")
        print(f"   {passage.as_context()[:300]}")
    print(f"\nconfidence >= {settings.min_score:g} goes to the agent as context; the local agent "
          f"answers from the first at >= {settings.answer_score:g}")
    return EXIT_OK


def _rebuild(args: argparse.Namespace) -> int:
    knowledge = _base(load(args))
    report = _up_to_date(knowledge, full=args.full)
    knowledge.close()
    if args.json:
        print_json(report.as_dict())
    else:
        _print_report(report)
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    knowledge = _base(load(args))
    _up_to_date(knowledge)
    data = knowledge.stats()
    knowledge.close()
    if args.json:
        print_json(data)
        return EXIT_OK
    print(f"index:   {data['index']} ({data['bytes'] / 1e6:.2f} MB)")
    print(f"files:   {data['files']}  chunks: {data['chunks']} ({data['qa_entries']} Q/A entries, "
          f"{data['prose_chunks']} prose)")
    print(f"topics:  {', '.join(data['titles']) or '-'}")
    bundle = data.get("bundle")
    print(f"bundle:  {bundle['sha256'][:12] + ' from ' + bundle['url'] if bundle else 'none'}")
    return EXIT_OK
