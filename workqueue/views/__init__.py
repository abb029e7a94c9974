"""The browser pages: server-rendered, over the same tool layer as REST and MCP (issue 29).

A page parses its form, calls a tool through `call_tool` (in process, as the signed-in person,
transport "browser") and renders the envelope; a refusal is worded by its code (workqueue/refusals.py).
Rules live in the services; reads no tool offers (the due-sorted inbox with counts, the operators'
queues) live in `workqueue.selectors`. One module per page family; urls.py names the views below.
"""

from .bulk_pages import bulk_cancel, bulk_decide
from .inbox import delete_view, inbox, save_view
from .notifications import notification_settings
from .operators import audit_download, operators
from .page_settings import time_zone
from .runs import cancel_run, run_detail, run_list, start_run
from .tokens import revoke, tokens
from .webhooks import (webhook_add, webhook_log, webhook_remove, webhook_replay, webhook_resume, webhook_rotate,
                       webhook_send_again, webhooks)
from .work_item import assign_item, release_item, take_item, work_item

__all__ = ["assign_item", "audit_download", "bulk_cancel", "bulk_decide", "cancel_run", "delete_view", "inbox",
           "notification_settings", "operators", "release_item", "revoke", "run_detail", "run_list", "save_view",
           "start_run", "take_item", "time_zone", "tokens", "webhook_add", "webhook_log", "webhook_remove",
           "webhook_replay", "webhook_resume", "webhook_rotate", "webhook_send_again", "webhooks", "work_item"]
