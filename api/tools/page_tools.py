"""Writes only the browser pages make (issue 29): who is on a work item (take, release, assign),
saved views, a person's API tokens, time zone and notice choices, their last look at the inbox,
and the operators' webhooks: subscriptions added, removed, their secret rotated, resumed, and
deliveries sent again (the same services as `manage.py webhooks`).

They are not protocol tools: no JSON Schema, never offered on REST or MCP (`call_tool` answers them
for transport "browser" only). They are here so that a page reaches the domain the way an agent
does, through `call_tool` as the signed-in person: one path, logged and answered in one envelope,
each refusal a ToolError with its code. A handler returns Python objects (the pages render them).
"""

from django.db import transaction

from kernel.identity import issue_personal_token, revoke_personal_token
from kernel.page_settings import set_time_zone
from kernel.errors import Issue, forbidden, invalid, not_found
from runs.services import inbox_visits, notifications, queue, saved_views
from webhooks.services import sending as webhooks
from webhooks.services import subscriptions as webhook_subscriptions
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
        raise forbidden("only the organization's operators manage webhooks")


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


def _refused(refused: Refused):
    """A subscription's refusal as a ToolError: not_found, or invalid with one issue on the field it
    is about (its path) and the service's code and message (the page words it by the code)."""
    if refused.code == "not_found":
        return not_found(refused.message)
    field = {"no_kinds": "kinds", "kinds": "kinds", "secret": "secret", "format": "format", "group": "group"}.get(
        refused.code, "url")  # every other code is about the address
    return invalid(refused.message, [Issue(field, refused.message, refused.code)])


def _subscription_write(identity, write):
    _operator(identity)
    try:
        return {"subscription": write()}
    except Refused as refused:
        raise _refused(refused) from None


@page_tool("webhook_add")
def webhook_add(identity, arguments, now):
    return _subscription_write(identity, lambda: webhook_subscriptions.add(
        organization=identity.organization, url=arguments["url"], kinds=arguments["kinds"],
        process=arguments.get("process", ""), test_runs=bool(arguments.get("testRuns")), now=now))


@page_tool("webhook_remove")
def webhook_remove(identity, arguments, now):
    return _subscription_write(identity, lambda: webhook_subscriptions.remove(
        organization=identity.organization, subscription_id=arguments["subscriptionId"]))


@page_tool("webhook_rotate")
def webhook_rotate(identity, arguments, now):
    return _subscription_write(identity, lambda: webhook_subscriptions.rotate(
        organization=identity.organization, subscription_id=arguments["subscriptionId"], now=now))


@page_tool("webhook_resume")
def webhook_resume(identity, arguments, now):
    return _subscription_write(identity, lambda: webhook_subscriptions.resume(
        organization=identity.organization, subscription_id=arguments["subscriptionId"], now=now))

