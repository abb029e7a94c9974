"""Writes only the browser pages make (issue 29): who is on a work item (take, release, assign),
saved views, a person's API tokens, time zone and notice choices, their last look at the inbox,
and the operators' webhook deliveries sent again.

They are not protocol tools: no JSON Schema, never offered on REST or MCP (`call_tool` answers them
for transport "browser" only). They are here so that a page reaches the domain the way an agent
does, through `call_tool` as the signed-in person: one path, logged and answered in one envelope,
each refusal a ToolError with its code. A handler returns Python objects (the pages render them).
"""

from django.db import transaction

from kernel.identity import issue_personal_token, revoke_personal_token
from kernel.page_settings import set_time_zone
from kernel.errors import forbidden, not_found
from runs.services import inbox_visits, notifications, queue, saved_views
from webhooks.services import sending as webhooks
from webhooks.services.addresses import Refused

PAGE_TOOLS = {}


def page_tool(name: str, *, atomic: bool = True):
    """Register a page's write; `atomic=False` for a write of one statement, which needs no
    transaction of its own (a page read that writes one row should not pay for a savepoint)."""
    def register(handler):
        PAGE_TOOLS[name] = transaction.atomic(handler) if atomic else handler
        return handler

    return register


@page_tool("take")
def take(identity, arguments, now):
    return {"item": queue.take(identity=identity, work_item_id=arguments["workItemId"], now=now)}


@page_tool("release")
def release(identity, arguments, now):
    return {"item": queue.release(identity=identity, work_item_id=arguments["workItemId"], now=now)}


@page_tool("assign")
def assign(identity, arguments, now):
    return {"item": queue.assign(identity=identity, work_item_id=arguments["workItemId"], to=arguments["to"], now=now)}


@page_tool("save_view")
def save_view(identity, arguments, now):
    return {"view": saved_views.save(identity=identity, name=arguments["name"], query=arguments["query"], now=now)}


@page_tool("delete_view")
def delete_view(identity, arguments, now):
    return {"view": saved_views.delete(identity=identity, view_id=arguments["viewId"])}


@page_tool("create_token")
def create_token(identity, arguments, now):
    row, plaintext = issue_personal_token(identity, label=arguments["label"])
    return {"row": row, "plaintext": plaintext}


@page_tool("revoke_token")
def revoke_token(identity, arguments, now):
    return {"row": revoke_personal_token(identity, arguments["tokenId"])}


@page_tool("set_time_zone")
def time_zone(identity, arguments, now):
    return {"name": set_time_zone(user=identity.user, name=arguments["name"])}


@page_tool("save_notice_choices")
def save_notice_choices(identity, arguments, now):
    return {"choices": notifications.save_choices(identity=identity, chosen=arguments["chosen"], now=now)}


@page_tool("mark_inbox_seen", atomic=False)
def mark_inbox_seen(identity, arguments, now):
    inbox_visits.mark_seen(identity, now, known=arguments["known"])
    return {}


def _operator(identity) -> None:
    if not identity.is_operator:
        raise forbidden("only the organization's operators send webhooks again")


@page_tool("webhook_send_again")
def webhook_send_again(identity, arguments, now):
    _operator(identity)
    try:
        return {"delivery": webhooks.send_again(organization=identity.organization,
                                                delivery_id=arguments["deliveryId"], now=now)}
    except Refused as refused:
        raise not_found(refused.message) from None


@page_tool("webhook_replay_since")
def webhook_replay_since(identity, arguments, now):
    _operator(identity)
    try:
        return {"count": webhooks.replay_since(organization=identity.organization,
                                               subscription_id=arguments["subscriptionId"],
                                               since=arguments["since"], now=now)}
    except Refused as refused:
        raise not_found(refused.message) from None
