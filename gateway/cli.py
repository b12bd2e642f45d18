"""The ``paygate`` command line (API.md, Command line).

``paygate up``, ``paygate token create``, ``paygate db migrate`` (and its alias ``db init``),
``paygate db check``, ``paygate certificate verify``, ``paygate campaign``. Commands
other than ``up`` use ``DATABASE_URL`` when set; otherwise they find the database of a running
``paygate up`` through ``--data-dir DIR`` or ``PAYGATE_DATA_DIR`` (default ``./.paygate``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gateway.auth.tokens import ROLES, Tokens
from gateway.clock import SystemClock
from gateway.settings import ConfigError
from gateway.store.db import Database
from gateway.store.migrate import MigrationError, Status, migrate, status
from gateway.store.schema import check_schema

DEFAULT_DATA_DIR = ".paygate"
LOCAL_EXTRA_INSTALL = "pip install -e '.[local]'"


class CliError(Exception):
    """A command could not run; the message says why and what to do."""


def _data_dir(args: argparse.Namespace) -> Path:
    return Path(args.data_dir or os.environ.get("PAYGATE_DATA_DIR") or DEFAULT_DATA_DIR)


def _runtime(args: argparse.Namespace) -> dict[str, Any]:
    path = _data_dir(args) / "runtime.json"
    try:
        loaded: dict[str, Any] = json.loads(path.read_text())
    except OSError:
        raise CliError(f"DATABASE_URL is not set and there is no running 'paygate up' in {path.parent} "
                       "(use --data-dir or PAYGATE_DATA_DIR)") from None
    return loaded


def database_url(args: argparse.Namespace) -> str:
    return os.environ.get("DATABASE_URL") or str(_runtime(args)["database_url"])


def token_pepper(args: argparse.Namespace) -> str:
    """The pepper tokens are hashed with: ``PAYGATE_TOKEN_PEPPER``, else the configuration file."""
    if os.environ.get("PAYGATE_TOKEN_PEPPER"):
        return os.environ["PAYGATE_TOKEN_PEPPER"]
    config = os.environ.get("PAYGATE_CONFIG") or (None if os.environ.get("DATABASE_URL") else _runtime(args)["config"])
    if config:
        pepper = json.loads(Path(config).read_text()).get("token_pepper")
        if pepper:
            return str(pepper)
    raise CliError("no token pepper: set PAYGATE_TOKEN_PEPPER (or PAYGATE_CONFIG with token_pepper)")


async def _create_token(args: argparse.Namespace) -> str:
    db = await Database.open(database_url(args), size=1, name="paygate-cli")
    try:
        tokens = Tokens(db, SystemClock(), token_pepper(args))
        return await tokens.create(args.role, args.subject, tenant_id=args.tenant,
                                   approval_limit_minor=args.approval_limit_minor)
    finally:
        await db.close()


def cmd_token_create(args: argparse.Namespace) -> int:
    try:
        token = asyncio.run(_create_token(args))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    print(token)
    return 0


def cmd_db_migrate(args: argparse.Namespace) -> int:
    """Apply the pending migrations (docs/migrations.md); ``db init`` is the same command."""
    outcome = migrate(database_url(args), SystemClock())
    for migration in outcome.adopted:
        print(f"adopted {migration.label} (already in place, recorded without running it)")
    for migration in outcome.applied:
        print(f"applied {migration.label}")
    state = status(database_url(args))
    print(f"the database is at migration {_version(state)}" if outcome.adopted or outcome.applied
          else f"nothing to do: the database is at migration {_version(state)}")
    return 0


def _version(state: Status) -> str:
    return state.records[-1].label if state.records else "none"


def cmd_db_check(args: argparse.Namespace) -> int:
    """Exit 0 when every migration of this build is applied unchanged and the catalog equals
    ``schema.sql``; 1 with every finding otherwise."""
    url = database_url(args)
    state = status(url)
    findings = []
    if state.pending:
        findings.append("pending migrations (run `paygate db migrate`): "
                        + ", ".join(m.label for m in state.pending)
                        + ("" if state.records else " (no migration records yet: migrate adopts the versions "
                           "a database made by an earlier `db init` already has, docs/migrations.md)"))
    findings += [f"changed since applied: {m.label} (recorded sha256 {r.checksum}, the file has {m.checksum})"
                 for m, r in state.changed]
    if state.newer:
        # A newer build migrated the database (expand/contract): this build's schema.sql is older.
        print("applied by a newer paygate: " + ", ".join(r.label for r in state.newer)
              + " (the comparison with this build's schema.sql is skipped)")
    else:
        differences = check_schema(url)
        if differences:
            findings.append("the database does not match schema.sql:\n  " + "\n  ".join(differences))
    if findings:
        print(*findings, sep="\n")
        return 1
    print(f"the database is at migration {_version(state)} and matches schema.sql")
    return 0


def cmd_certificate_verify(args: argparse.Namespace) -> int:
    """Exit 0 for a valid certificate, 1 for any tampering or unknown key (seed 001; API.md)."""
    from gateway.domain.certificates import verify
    from gateway.effects import offline

    try:
        document = offline.read_certificate(Path(args.file))
        if args.key:
            keys = offline.keys_from_file(Path(args.key), document)
        else:
            url = args.key_url or str(_demo(args)["gateway_url"]).rstrip("/") + "/v1/keys/certificates"
            keys = offline.keys_from_url(url)
    except offline.Unverifiable as exc:
        raise CliError(str(exc)) from None
    verdict = verify(document, keys)
    print(f"{args.file}: {'valid' if verdict else 'INVALID'}: {verdict.reason}",
          file=sys.stdout if verdict else sys.stderr)
    return 0 if verdict else 1


def _demo(args: argparse.Namespace) -> dict[str, Any]:
    path = _data_dir(args) / "paygate-demo.json"
    try:
        loaded: dict[str, Any] = json.loads(path.read_text())
    except OSError:
        raise CliError(f"give --key-url or --key (there is no running 'paygate up' in {path.parent})") from None
    return loaded


def missing_local_extra() -> list[str]:
    """The distributions of the extra ``local`` (the harness's embedded servers and helpers) that
    this install lacks, read from paygate's own metadata; none when paygate runs uninstalled."""
    try:
        requirements = importlib.metadata.requires("paygate") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    missing = []
    for requirement in requirements:
        found = re.match(r"""\s*([A-Za-z0-9._-]+)[^;]*;.*\bextra\s*==\s*["']local["']""", requirement)
        if found is None:
            continue
        try:
            importlib.metadata.distribution(found[1])
        except importlib.metadata.PackageNotFoundError:
            missing.append(found[1])
    return missing


def require_local_extra(command: str) -> None:
    """``paygate up`` and ``paygate campaign`` run the local harness (paygate_local), which a
    production install leaves out: say which extra brings it."""
    missing = missing_local_extra()
    if missing:
        raise CliError(f"'paygate {command}' runs the local harness, which needs the extra 'local' "
                       f"(missing: {', '.join(missing)}): install it with {LOCAL_EXTRA_INSTALL}")


def cmd_up(args: argparse.Namespace) -> int:
    require_local_extra("up")
    from paygate_local.up import run  # imported late: the harness is only in the extra `local`

    return run(_data_dir(args), args.web_port, args.provider_port, args.rehearsal)


def cmd_campaign(args: argparse.Namespace) -> int:
    require_local_extra("campaign")
    from paygate_local.campaign.run import Options, run  # imported late: the harness is only in the extra `local`

    return run(Options(seed=args.seed, checkouts=args.checkouts, payouts=args.payouts,
                       data_dir=Path(args.data_dir) if args.data_dir else None,
                       json_path=Path(args.json) if args.json else None))


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="paygate", description=(
        "paygate, the payments webhook-and-reconciliation gateway: run it locally, manage tokens, "
        "apply or check the schema, verify effect certificates."))
    top.add_argument("--data-dir", help="the data directory of 'paygate up' (default ./.paygate)")
    commands = top.add_subparsers(dest="command", required=True)

    up = commands.add_parser("up", help="run the whole system locally")
    up.add_argument("--data-dir", default=argparse.SUPPRESS)
    up.add_argument("--web-port", type=int, default=8000)
    up.add_argument("--provider-port", type=int, default=8100)
    up.add_argument("--rehearsal", action="store_true", help="short timings for rehearsing incidents")
    up.set_defaults(handler=cmd_up)

    campaign = commands.add_parser(
        "campaign", help="a fault campaign against a real fleet; exit 0 iff no invariant was violated")
    campaign.add_argument("--seed", type=int, default=1, help="reproduces the run's choices (default 1)")
    campaign.add_argument("--checkouts", type=int, default=1000)
    campaign.add_argument("--payouts", type=int, default=100)
    campaign.add_argument("--data-dir", default=None, help="a fresh directory for the servers and logs "
                          "(default: a temporary one, removed after a clean run)")
    campaign.add_argument("--json", help="also write the result as JSON to this file")
    campaign.set_defaults(handler=cmd_campaign)

    token = commands.add_parser("token", help="manage API tokens").add_subparsers(dest="action", required=True)
    create = token.add_parser("create", help="create a token and print it")
    create.add_argument("--role", required=True, choices=ROLES)
    create.add_argument("--subject", required=True)
    create.add_argument("--tenant")
    create.add_argument("--approval-limit-minor", type=int)
    create.add_argument("--data-dir", default=argparse.SUPPRESS)
    create.set_defaults(handler=cmd_token_create)

    db = commands.add_parser("db", help="schema management").add_subparsers(dest="action", required=True)
    for name, handler, text in (
            ("migrate", cmd_db_migrate, "apply the pending schema migrations (idempotent, safe concurrently)"),
            ("init", cmd_db_migrate, "the same as migrate"),
            ("check", cmd_db_check, "report pending migrations, changed migrations and drift from schema.sql")):
        sub = db.add_parser(name, help=text)
        sub.add_argument("--data-dir", default=argparse.SUPPRESS)
        sub.set_defaults(handler=handler)

    certificate = commands.add_parser("certificate", help="effect certificates (seed 001)")
    verify = certificate.add_subparsers(dest="action", required=True).add_parser(
        "verify", help="verify a certificate offline; exits 1 if it was altered")
    verify.add_argument("file")
    source = verify.add_mutually_exclusive_group()
    source.add_argument("--key-url", help="a GET /v1/keys/certificates URL")
    source.add_argument("--key", help="a file with that keys document, or one base64 public key")
    verify.add_argument("--data-dir", default=argparse.SUPPRESS)
    verify.set_defaults(handler=cmd_certificate_verify)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except (CliError, ConfigError, MigrationError) as exc:
        print(f"paygate: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
