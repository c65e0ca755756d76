"""Scenario ``gate``: tier 0 + tier 1 decisions per second on one core (pure ``openbot.core.gate``).

A channel of 12 actors with 4 bots (names, handles, aliases); 2,000 messages of 4–30 words drawn
from ordinary words, with a name, a possessive, a typo or a mention in about one in four, from
people and from bots. Each message is read once (``GateMessage``, as delivery builds it per post)
and decided for every bot; the rate counts decisions, message reading included.
"""

from __future__ import annotations

import random
import time
from typing import Any

from openbot.core.gate import GateBot, GateMessage, Shape, decide, matcher

TARGET_PER_SECOND = 100_000
WORDS = (
    "the a we should ship it today tomorrow retry budget looks fine but I think that test is flaky "
    "can you check deploy logs again please what about latency numbers from yesterday"
).split()
BOTS = {
    "engineer": ("Engineer", "engineer", "eng"),
    "reviewer": ("Reviewer", "reviewer"),
    "qa": ("QA", "qa", "tester"),
    "lyra": ("Lyra", "lyra", "the oracle"),
}
INSERTS = ("Lyra", "lyra's", "enginer", "@qa", "Reviewer,", "the oracle", "QA")


def _messages(count: int, rng: random.Random) -> list[tuple[str, bool, str, frozenset[str]]]:
    out = []
    for _ in range(count):
        words = rng.choices(WORDS, k=rng.randint(4, 30))
        if rng.random() < 0.25:
            words.insert(rng.randrange(len(words)), rng.choice(INSERTS))
        text = " ".join(words)
        sender, is_bot = (rng.choice(list(BOTS)), True) if rng.random() < 0.2 else ("ana", False)
        mentions = frozenset(w[1:] for w in words if w.startswith("@"))
        out.append((sender, is_bot, text, mentions))
    return out


def run(seconds: float = 1.0) -> dict[str, Any]:
    rng = random.Random(7)
    bots = [GateBot(h, matcher(names), spoke_last=h == "qa") for h, names in BOTS.items()]
    messages = _messages(2_000, rng)
    decisions = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        for sender, is_bot, text, mentions in messages:
            message = GateMessage(sender, is_bot, text, mentions, shape=Shape.CHANNEL)
            for bot in bots:
                decide(message, bot)
            decisions += len(bots)
    elapsed = time.perf_counter() - started
    rate = decisions / elapsed
    return {
        "note": "tier 0 + tier 1 for 4 bots per message, message reading included, one core",
        "decisions": decisions,
        "seconds": round(elapsed, 3),
        "decisions_per_second": round(rate),
        "target_per_second": TARGET_PER_SECOND,
        "met": rate >= TARGET_PER_SECOND,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
