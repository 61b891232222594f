"""Write resources/demo/codex: a Codex home with a V2 memory root, and a project over the AGENTS.md budget.

Run from the repository root: ``python tools/make_demo_codex.py``. What cannot be
stored in a repository (the project's ``.git``, a session log naming the copied
project, Codex's git baseline) is made by ``keepgui.backends.codex.demo`` in each
fresh copy. The project's chain ``shop/AGENTS.md`` (about 24 KiB) →
``services/AGENTS.override.md`` (blank: it hides ``services/AGENTS.md``) →
``services/api/AGENTS.md`` (about 12 KiB) crosses Codex's 32 KiB project budget:
the api file is cut mid-way, and nobody is told.
"""

from __future__ import annotations

import os
import shutil

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "resources", "demo", "codex")
ROOT = os.path.join("home", ".codex", "memories_v2")

CONFIG = """model = "gpt-5-codex"
approval_policy = "on-request"

[features]
memories = true

[memories]
use_memories = true
"""

GLOBAL = """# How I work

- Answer in short paragraphs; no headings in chat replies.
- Never run `git push` or open pull requests unless I ask.
- Prefer `uv` for Python environments and `pnpm` for JavaScript.
- When a test fails, show the failing assertion first, then the fix.
"""

SUMMARY = """v1

## User Profile
Maya runs the engineering side of a small online shop (`~/src/shop`): a Python API (FastAPI,
PostgreSQL) behind a TypeScript storefront. She works in short focused sessions, reads diffs
before anything is committed, and cares most about checkout reliability and test speed.

## User preferences
- when a change touches checkout, the user asked: "run the payment tests before you say it works" -> run `pytest tests/payments -q` and paste the summary line
- the user corrected: "no new dependencies without asking" -> propose a dependency and wait for a yes
- keep commit messages in the imperative, one line under 72 characters, body only when asked
- prefers small reviewable diffs over one large change; split refactors from behaviour changes

## General Tips
- The API tests need `DATABASE_URL` pointing at the local `shop_test` database; `make db-test` creates it.
- `pnpm --filter storefront test` is much faster than the whole workspace test run.
- Stripe webhooks are replayed from `fixtures/webhooks/*.json`; never call the live API from tests.
- Alembic migrations must be reversible: write `downgrade()` and run `alembic downgrade -1` once.

## What's in Memory
### ~/src/shop/services/api
#### 2025-06-14
- rollout_summaries/2025-06-14T16-20-00-refund-idempotency.md — made refunds idempotent with a request key; the retry storm from the payment provider is the reason; thread_id=0197a1b2-demo
  - tests: tests/payments/test_refunds.py::test_refund_twice_is_one_refund
- rollout_summaries/2025-06-13T10-05-12-slow-order-listing.md — the order listing was slow because of an N+1 on line items; fixed with selectinload; thread_id=0197a0c4-demo

### ~/src/shop/storefront
#### 2025-06-11
- rollout_summaries/2025-06-11T14-40-51-cart-rounding.md — cart totals rounded per line instead of per order; the fix and the one test that pins it; thread_id=01979e11-demo

### Older Memory Topics
#### ~/src/shop
- deployment: fly.io, `fly deploy --strategy rolling`, health check on /healthz
  - desc: how the shop deploys and what to check first when a deploy hangs
"""

NOTES = {
    "2025-06-12T08-30-00-ci-runs-on-python-3-12.md": "CI runs on Python 3.12 now (the 3.11 job was removed on June 12).",
    "2025-06-14T17-02-41-payment-provider-sandbox.md": (
        "Correction: the payment provider's sandbox key lives in `.env.test`, not in `.env` "
        "(the summary's General Tips had it wrong)."
    ),
    "2025-06-15T09-12-03-prefers-uv.md": "Remember: use `uv run pytest`, never a bare `pytest`, in ~/src/shop.",
}

ROLLOUTS = {
    "2025-06-14T16-20-00-refund-idempotency.md": """thread_id: 0197a1b2-demo
updated_at: 2025-06-14T16:48:10Z
cwd: ~/src/shop/services/api

# Refunds made idempotent

The payment provider retries refund webhooks up to five times. Each retry created a new refund
row, so a customer could be refunded twice. The fix stores the provider's request key on the
refund and returns the existing refund when the key is seen again.

- tests/payments/test_refunds.py::test_refund_twice_is_one_refund pins it
- migration 0042 adds a unique index on refunds.request_key (reversible)
""",
    "2025-06-13T10-05-12-slow-order-listing.md": """thread_id: 0197a0c4-demo
updated_at: 2025-06-13T10:31:44Z
cwd: ~/src/shop/services/api

# Slow order listing

GET /orders took 2.4 s for 50 orders: every order loaded its line items one query at a time.
`selectinload(Order.items)` brought it to 90 ms. The user asked to keep the query count in a
test, so tests/orders/test_listing.py asserts at most 3 queries.
""",
    "2025-06-11T14-40-51-cart-rounding.md": """thread_id: 01979e11-demo
updated_at: 2025-06-11T15:02:09Z
cwd: ~/src/shop/storefront

# Cart rounding

Totals were rounded per line, so three items at 0.335 showed 1.02 instead of 1.01. The cart now
sums exact cents and rounds once. storefront/src/cart/total.test.ts covers the case.
""",
}

RAW = """# Raw Memories

Merged stage-1 raw memories (stable ascending thread-id order):

## 01979e11-demo
- cart totals: round once per order, not per line (storefront)

## 0197a0c4-demo
- order listing N+1 fixed with selectinload; keep a query-count test

## 0197a1b2-demo
- refunds: store the provider's request key; a retried webhook returns the existing refund
"""

TOPICS = [
    ("Repository layout", "services/api holds the FastAPI service, storefront the TypeScript shop"),
    ("Python style", "type hints on every public function; mypy --strict must pass"),
    ("Database", "every schema change is an Alembic migration with a working downgrade"),
    ("Testing", "tests run against a real PostgreSQL, never SQLite; fixtures live in tests/fixtures"),
    ("Payments", "the payment provider is only ever called through services/api/payments/client.py"),
    ("Logging", "structured logs with structlog; never log card data, emails or addresses"),
    ("Errors", "raise domain errors from services/api/errors.py; the API layer maps them to HTTP codes"),
    ("Performance", "a new endpoint gets a query-count test; N+1 queries are bugs"),
    ("Security", "secrets come from the environment; .env files are never committed"),
    ("Reviews", "small diffs; refactors in their own commit; behaviour changes with a test"),
    ("Releases", "fly deploy --strategy rolling; watch /healthz until every machine is green"),
    ("Frontend", "pnpm workspaces; components in storefront/src/components with a test beside each"),
]


ADVICE = (
    "follow the nearest existing example in the code and say which one you followed.",
    "ask before you change the convention itself.",
    "keep the change small enough to review in one sitting.",
    "write the test first when the rule is about behaviour.",
)


def _section(title: str, rule: str, n: int) -> str:
    lines = [f"## {title}", "", f"{rule[0].upper()}{rule[1:]}.", ""]
    for k in range(1, n + 1):
        lines.append(f"- {title}, point {k}: {rule}; when in doubt, {ADVICE[k % len(ADVICE)]}")
    lines.append("")
    return "\n".join(lines)


def project_root_agents() -> str:
    """About 24 KiB of project conventions."""
    head = "# shop: conventions for agents\n\nRead this before changing anything in the repository.\n\n"
    body = "".join(_section(title, rule, 12) for title, rule in TOPICS)
    return head + body


def api_agents() -> str:
    """About 12 KiB for the API service: the tail is past the budget (payments rules last)."""
    parts = ["# services/api\n\nThe FastAPI service. Commands: `uv run pytest -q`, `uv run alembic upgrade head`.\n\n"]
    for title, rule in TOPICS[2:8]:
        parts.append(_section(f"API {title.lower()}", rule, 7))
    parts.append(
        "## Payments: the rules that matter most\n\n"
        "- Refunds are idempotent: always pass the provider's request key.\n"
        "- Never retry a capture yourself; the provider retries webhooks.\n"
        "- Amounts are integer cents everywhere; never floats.\n"
    )
    return "".join(parts)


SERVICES_AGENTS = """# services

Shared rules for every service: each service has its own pyproject.toml and its own tests.
Run `make check` in a service folder before saying a change works.
"""


def put(rel: str, text: str) -> None:
    """Write one file of the demo (a tool, not keepgui: the demo source files)."""
    path = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def main() -> None:
    """Write the demo afresh."""
    shutil.rmtree(OUT, ignore_errors=True)
    put(os.path.join("home", ".codex", "config.toml"), CONFIG)
    put(os.path.join("home", ".codex", "AGENTS.md"), GLOBAL)
    put(os.path.join(ROOT, "memory_summary.md"), SUMMARY)
    put(os.path.join(ROOT, "raw_memories.md"), RAW)
    for name, text in NOTES.items():
        put(os.path.join(ROOT, "extensions", "ad_hoc", "notes", name), text)
    for name, text in ROLLOUTS.items():
        put(os.path.join(ROOT, "rollout_summaries", name), text)
    put(os.path.join("project", "shop", "AGENTS.md"), project_root_agents())
    put(os.path.join("project", "shop", "services", "AGENTS.override.md"), "\n")
    put(os.path.join("project", "shop", "services", "AGENTS.md"), SERVICES_AGENTS)
    put(os.path.join("project", "shop", "services", "api", "AGENTS.md"), api_agents())
    put(os.path.join("project", "shop", "services", "api", "app.py"), '"""The shop API (demo)."""\n')
    sizes = {
        rel: os.path.getsize(os.path.join(OUT, "project", "shop", rel))
        for rel in ("AGENTS.md", os.path.join("services", "api", "AGENTS.md"))
    }
    print(f"wrote {OUT}: {sizes}")


if __name__ == "__main__":
    main()
