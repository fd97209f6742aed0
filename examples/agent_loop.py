"""An agent loop: the store grows every turn, corrections survive a flood.

Each turn the agent retrieves its memory for the user's message, "answers",
and writes new entries back: an episode per turn, tasks as they come up, and
a correction when the user pushes back. On turn 4 the user corrects it;
turns 5 and 6 write 80 urgent alerts, so turns 6 and 7 retrieve from a
flooded store. The correction is injected on every turn after it was
written: it is always-scope, and the flood can only fill the task pool.

    pip install -e .                # in a checkout (or: pip install poolsplit)
    python examples/agent_loop.py   # nothing else: standard library only
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from poolsplit import Pool, retrieve_pools

POOLS = [
    Pool("corrections", 0, 0, types=("correction",)),
    Pool("tasks", 60, 3, types=("task",)),
    Pool("facts", 40, 2, types=("fact",)),
    Pool("episodes", 40, 2, types=("episode",)),
]
START = datetime(2026, 12, 1, 9, tzinfo=timezone.utc)

# (user message, entries the turn writes back). "{n}" is the turn number.
SCRIPT: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "Set up the billing export job.",
        [
            {
                "type": "task",
                "base_priority": 7,
                "content": "Write the billing export job",
            },
            {"type": "fact", "content": "The export job runs nightly at 02:00 UTC"},
        ],
    ),
    (
        "Which database does it read?",
        [
            {"type": "fact", "content": "Billing data lives in Postgres 15 on db-2"},
        ],
    ),
    (
        "Ship it to production.",
        [
            {"type": "task", "base_priority": 8, "content": "Deploy the export job"},
        ],
    ),
    (
        "No: never deploy without a staging run first.",
        [
            {
                "type": "correction",
                "scope": "always",
                "content": "Never deploy to production before a staging run",
            },
        ],
    ),
    (
        "Alerts are firing, help!",
        [
            {
                "type": "task",
                "base_priority": 10,
                "content": f"URGENT: triage alert {k} from the billing pipeline",
            }
            for k in range(40)
        ],
    ),
    (
        "Now deploy the fix.",
        [
            {
                "type": "task",
                "base_priority": 10,
                "content": f"URGENT: page {k} about the export backlog",
            }
            for k in range(40)
        ],
    ),
    ("Is the export healthy again?", []),
]


def run(
    script: list[tuple[str, list[dict[str, Any]]]] = SCRIPT, *, echo: bool = True
) -> list[dict[str, list[str]]]:
    """Play the script; return, per turn, the ids injected per pool."""
    store: list[dict[str, Any]] = []
    injected = []
    for turn, (message, writes) in enumerate(script, 1):
        now = START + timedelta(minutes=10 * turn)
        got = retrieve_pools(store, POOLS, {"message": message}, now=now)
        injected.append({name: [e["id"] for e in got[name]] for name in got})
        if echo:
            print(f"-- turn {turn} ({len(store)} entries stored): {message!r}")
            for name, entries in got.items():
                for entry in entries:
                    print(f"   {name:11} {entry['id']:8} {entry['content']}")
        # Write back after answering: what this turn learns loads from the next.
        for number, entry in enumerate(writes):
            store.append(
                {
                    "id": f"{entry['type'][0]}{turn}.{number}",
                    "created": now.isoformat(),
                    **entry,
                }
            )
        store.append(
            {
                "id": f"e{turn}",
                "type": "episode",
                "created": now.isoformat(),
                "content": f"Turn {turn}: the user said {message!r}",
            }
        )
    return injected


def main(argv: list[str] | None = None) -> int:
    injected = run()
    seen = [
        turn for turn, pools in enumerate(injected, 1) if "c4.0" in pools["corrections"]
    ]
    print(f"\ncorrection c4.0 (written on turn 4) injected on turns {seen}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
