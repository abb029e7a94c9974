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

# The processes below are the project's own stand-ins for the spec's fixtures where a test only needs
# "a process with feature X": the suite then runs on a fresh clone without ../shared/spec.

CHECKED_VENDOR = """---
name: checked-vendor
description: An agent screens a vendor and a model check reviews the screening before finance approves.
inputs:
  vendorName: string
  amount: { type: number, description: Yearly spend in USD }
steps:
  - id: check_vendor
    agent: |
      Screen the vendor on the OFAC and EU watch lists.
      Attach the screening file. Route to approve when the vendor is clear
      and to decline when a list has a hit.
    output:
      cleared: boolean
      summary: string
    evidence: [file]
    next: [approve, decline]
    check:
      - ask: The cleared flag agrees with the attached screening file.
        pass: 0.9
        fail: 0.5
      - ask: How does the summary read?
        one_of:
          states: Gives the verdict and names the lists searched.
          hedges: Avoids the verdict or qualifies it heavily.
          unclear: Impossible to tell.
        pass: [states]
        unsure: [unclear]
      - ask: How thorough is the screening?
        levels:
          - No list is clearly searched.
          - One list is searched.
          - Both lists are searched and the search terms are given.
        pass: 2
        confidence: 0.8
  - id: approve
    person: finance-approver
    approve: Approve when the screening is clear and the spend has a reason.
    due: 2d
    on_reject: check_vendor
    next: done
  - id: decline
    finish: declined
  - id: done
    finish: onboarded
---

# Checked vendor screening

The model check reads the screening before a person spends time on it.
"""

OUTAGE_RESPONSE = """---
name: outage-response
description: An agent opens a bridge, three leads work the outage at the same time, the commander signs it off.
inputs:
  incidentId: string
  commander: person
steps:
  - id: activate
    agent: Open the bridge call and page the three leads. Give the bridge reference.
    output: { bridge: string }
  - id: respond
    parallel: [operations, security, communications]
    next: close_review
  - id: operations
    person: operations-lead
    task: Bring the service back. Link the recovery record.
    output: { recoverySummary: string }
    evidence: [link]
    due: 1h
    next: join
  - id: security
    person: security-lead
    task: Contain any security exposure and say what remains.
    output: { containmentSummary: string }
    evidence: [link]
    due: 1h
    next: join
  - id: communications
    person: communications-lead
    task: Post the customer notice and keep it current.
    output: { communicationsSummary: string }
    evidence: [link]
    due: 1h
    next: join
  - id: close_review
    person: inputs.commander
    approve: Sign off when all three leads are done with evidence.
    on_reject: respond
  - id: done
    finish: stabilized
---

# Outage response
"""

ACCOUNT_CLOSURE = """---
name: account-closure
description: Close a customer account at a set time, settle the last invoice, then delete the data that may go.
inputs:
  customerId: string
  effectiveAt: datetime
steps:
  - id: authorize
    person: account-owner
    approve: Confirm the customer asked for the closure and the date is agreed.
    due: 2d
  - id: effective_time
    wait_until: inputs.effectiveAt
  - id: cancel_services
    agent: Stop renewals and switch off every billed service. Record each cancellation.
    output:
      cancellationIds: { type: list, items: string }
    evidence: [link]
  - id: final_invoice
    agent: |
      Issue the last invoice. Route to deletion_clearance when nothing is owed,
      otherwise to settlement_event.
    output:
      invoiceId: string
      balance: number
      currency: string
    evidence: [link]
    next: [deletion_clearance, settlement_event]
  - id: settlement_event
    wait_for: final-invoice-settled
    timeout: 30d
    on_timeout: finance_followup
    next: verify_settlement
  - id: verify_settlement
    agent: Confirm the payment in the ledger; the event alone proves nothing.
    output:
      ledgerSummary: string
    evidence: [link]
    next: [deletion_clearance, finance_followup]
  - id: finance_followup
    person: finance-collections
    task: Collect or write off the last invoice.
    output:
      settlementReference: string
    evidence: [link]
    next: deletion_clearance
  - id: deletion_clearance
    person: data-steward
    task: Say what may be deleted and what must be kept.
    output:
      deletionScope: string
      retentionExceptions: string
    evidence: [link]
  - id: delete_data
    agent: Delete the cleared data and return a receipt per system.
    output:
      deletionReceipts: { type: list, items: string }
    evidence: [link]
  - id: verify_deletion
    person: data-steward
    task: Check every receipt and tell the customer what was deleted.
    output:
      completionStatement: string
    evidence: [link]
  - id: done
    finish: offboarded
---

# Account closure
"""

SCHEDULED_POST = """---
name: scheduled-post
description: An agent drafts a post, an editor approves it, and it goes out at the scheduled time.
inputs:
  brief: string
  slug: string
  publishAt: datetime
steps:
  - id: draft
    agent: Write the post from the brief and link a preview of this revision.
    output:
      revision: string
      title: string
      summary: string
    evidence: [link]
  - id: editor_review
    person: editor
    approve: Approve this revision of the draft.
    on_reject: draft
    due: 2d
  - id: publication_time
    wait_until: inputs.publishAt
  - id: publish
    agent: Put the approved revision live under the slug and link the public page.
    output:
      url: string
      publishedRevision: string
    evidence: [link]
  - id: done
    finish: published
---

# Scheduled post
"""

TWO_REVIEWS = """---
name: two-reviews
description: The owner prepares a revision that legal and then finance must both approve.
inputs:
  contractId: string
  document: string
  owner: person
steps:
  - id: prepare
    person: inputs.owner
    task: Prepare the revision, answering any rejection note, and attach it.
    output:
      revision: string
      summary: string
    evidence: [file]
  - id: legal_review
    person: legal-reviewer
    approve: Approve the revision's legal terms.
    on_reject: prepare
  - id: finance_review
    person: finance-reviewer
    approve: Approve the revision's payment terms.
    on_reject: prepare
  - id: done
    finish: signed
---

# Two reviews
"""

OWNER_REVIEW = """---
name: owner-review
description: An agent drafts a report that the person named in the inputs reviews.
inputs:
  incidentId: string
  incidentOwner: person
steps:
  - id: draft
    agent: Draft the report and the actions it proposes.
    output:
      report: string
      proposedActions: { type: list, items: object }
    evidence: [link]
  - id: review
    person: inputs.incidentOwner
    approve: Approve the report.
    on_reject: draft
  - id: done
    finish: closed
---

# Owner review
"""

HANDOVER_TASKS = """---
name: handover-tasks
description: HR records a new hire, then IT prepares their accounts; each task has a single next step.
inputs:
  employeeName: string
steps:
  - id: hr_setup
    person: hr-operations
    task: Create the employee record and link it.
    output:
      hrisRecord: string
      location: string
      jobTitle: string
    evidence: [link]
  - id: it_setup
    person: it-operations
    task: Prepare the accounts.
    output:
      accounts: { type: list, items: string }
  - id: done
    finish: ready
---

# Handover tasks
"""
