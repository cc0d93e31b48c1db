"""``kafkacore cluster tokens``: create, describe, renew and expire delegation tokens
(KIP-48), as Kafka's ``kafka-delegation-tokens`` tool does.

Tokens are issued only over a SASL login that is not itself a token login
(``--command-config`` with SCRAM or PLAIN). A token is named by its HMAC, in
base64 as ``create`` and ``describe`` print it; a client logs in with the
token id as user name and that HMAC as SCRAM password
(``kafkacore.client.sasl.delegation_token_factory``). A refusal exits as
every command's does (``_app.classify``): no such token 3, not allowed 5.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from collections.abc import Iterable
from typing import Any

import click

from kafkacore.admin import DelegationToken

from ._app import App, pass_app
from ._formats import emit_json, table

__all__ = ["tokens"]


def _when(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat(timespec="seconds")


def _row(t: DelegationToken) -> dict[str, Any]:
    return {
        "token_id": t.token_id,
        "hmac": t.password,
        "owner": t.owner,
        "requester": t.requester,
        "renewers": list(t.renewers),
        "issue_timestamp_ms": t.issue_timestamp_ms,
        "expiry_timestamp_ms": t.expiry_timestamp_ms,
        "max_timestamp_ms": t.max_timestamp_ms,
    }


def _print(found: Iterable[DelegationToken], as_json: bool) -> None:
    rows = sorted((_row(t) for t in found), key=lambda r: (r["owner"], r["token_id"]))
    if as_json:
        emit_json(rows)
        return
    table(
        ("TOKEN-ID", "HMAC", "OWNER", "RENEWERS", "ISSUED", "EXPIRES", "MAX"),
        (
            (
                r["token_id"],
                r["hmac"],
                r["owner"],
                ",".join(r["renewers"]) or "-",
                _when(r["issue_timestamp_ms"]),
                _when(r["expiry_timestamp_ms"]),
                _when(r["max_timestamp_ms"]),
            )
            for r in rows
        ),
    )


def _hmac(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise click.BadParameter(
            f"{value!r} is not base64 (the HMAC as create and describe print it)",
            param_hint="--hmac",
        ) from None


def _said_expiry(expiry: int) -> None:
    click.echo(f"expires {_when(expiry)} ({expiry})")


@click.group("tokens")
def tokens() -> None:
    """Create, describe, renew and expire delegation tokens (needs a SASL login)."""


@tokens.command("create")
@click.option("--owner", metavar="TYPE:NAME", help="Whom the token is for [default: you].")
@click.option(
    "--renewer", "renewers", multiple=True, metavar="TYPE:NAME", help="May renew it (repeatable)."
)
@click.option(
    "--max-lifetime-ms",
    type=int,
    default=-1,
    show_default=True,
    help="Its longest life; -1: the broker's delegation.token.max.lifetime.ms.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def create(
    app: App, owner: str | None, renewers: tuple[str, ...], max_lifetime_ms: int, as_json: bool
) -> None:
    """Create a token; prints its id and HMAC (the SCRAM password of a token login)."""
    with app.admin() as admin:
        token = admin.create_delegation_token(
            owner=owner, renewers=renewers, max_lifetime_ms=max_lifetime_ms
        )
    _print([token], as_json)


@tokens.command("describe")
@click.option(
    "--owner",
    "owners",
    multiple=True,
    metavar="TYPE:NAME",
    help="Only the tokens of this owner (repeatable) [default: every token you may see].",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def describe_tokens(app: App, owners: tuple[str, ...], as_json: bool) -> None:
    """The tokens you own, may renew, or may describe."""
    with app.admin() as admin:
        found = admin.describe_delegation_tokens(list(owners) or None)
    _print(found, as_json)


@tokens.command("renew")
@click.option("--hmac", "hmac", required=True, metavar="BASE64", help="The token's HMAC.")
@click.option(
    "--renew-time-period",
    "period",
    type=int,
    default=-1,
    show_default=True,
    metavar="MS",
    help="From now; -1: the broker's delegation.token.expiry.time.ms.",
)
@pass_app
def renew(app: App, hmac: str, period: int) -> None:
    """Push a token's expiry out (the owner and its renewers may); prints the new one."""
    secret = _hmac(hmac)
    with app.admin() as admin:
        _said_expiry(admin.renew_delegation_token(secret, period))


@tokens.command("expire")
@click.option("--hmac", "hmac", required=True, metavar="BASE64", help="The token's HMAC.")
@click.option(
    "--expiry-time-period",
    "period",
    type=int,
    default=-1,
    show_default=True,
    metavar="MS",
    help="From now; -1: at once (the broker forgets the token).",
)
@pass_app
def expire(app: App, hmac: str, period: int) -> None:
    """Make a token expire (the owner and its renewers may); prints when."""
    secret = _hmac(hmac)
    with app.admin() as admin:
        _said_expiry(admin.expire_delegation_token(secret, period))
