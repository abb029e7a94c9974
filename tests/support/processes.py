"""Process texts shared by several test modules (server-rendered pages, the browser, the audit log)."""

PARALLEL_REVIEW = """---
name: parallel-review
description: An agent screens the vendor while finance approves, at the same time.
inputs:
  vendorName: string
steps:
  - id: both
    parallel: [screen, approve]
    next: done
  - id: screen
    agent: Screen the vendor against the sanctions lists.
    output:
      cleared: boolean
      findings: string
    next: join
  - id: approve
    person: finance-approver
    approve: Approve the vendor.
    next: join
  - id: done
    finish: onboarded
---

# Parallel review
"""

SCREEN_AND_APPROVE = """---
name: screen-and-approve
description: An agent screens a vendor; finance approves or sends it back.
inputs:
  vendorName: string
steps:
  - id: screen
    agent: Screen the vendor against the sanctions lists.
    output:
      cleared: boolean
    due: 1h
  - id: approve
    person: finance
    approve: Approve the vendor.
    on_reject: screen
  - id: done
    finish: approved
---
Screen, then approve.
"""
