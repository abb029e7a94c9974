"""Process texts shared by the inbox tests (server-rendered pages and the browser)."""

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
