"""Issue 30's benchmark: the secrets scan of a whole bank, beside the library run directly.

For each size, a generated iii bank (one revision per memory) with real-format secrets planted in
every 1,000th memory: keepgui's scan of every row (``Scanner.scan_bank``: detect-secrets' plugins
behind their gates, the providers' patterns, cold: an empty cache), the same scan again (warm: the
blocks' hashes), and the library run directly on the same text: detect-secrets' own ``scan_line``
with its default settings on every line, measured on the first 5,000 lines and scaled to the bank
(the whole would take minutes). Target: a 100,000-memory bank in under 5 seconds, cold.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time

from tests.bench.common import Result, bank_in_data_dir, bench_sizes, cached_bank

SAMPLE = 5_000


def _library_direct(texts: list[str]) -> tuple[float, int]:
    """detect-secrets' ``scan_line`` over every line of ``texts``: seconds, findings."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    found = 0
    with default_settings():
        start = time.perf_counter()
        for text in texts:
            for line in text.split("\n"):
                found += sum(1 for _ in scan_line(line))
        return time.perf_counter() - start, found


def _one(memories: int) -> list[Result]:
    from keepgui.core import registry
    from keepgui.core.secrets.scan import Scanner
    from tests.secrets_corpus import planted

    work = tempfile.mkdtemp(prefix="keepgui-bench-secrets-")
    try:
        data = os.path.join(work, "data")
        bank_in_data_dir(cached_bank(memories, memories), data, "main")
        log = os.path.join(data, "main", "memories.jsonl")
        with open(log, "rb") as fh:
            lines = fh.read().splitlines(keepends=True)
        secrets = planted()
        for i in range(0, len(lines), 1000):  # a secret in every 1,000th memory, as a person wrote it down
            _n, _secret, line = secrets[(i // 1000) % len(secrets)]
            text = json.dumps(line + " ", ensure_ascii=False)[1:-1].encode()
            lines[i] = lines[i].replace(b'"text":"', b'"text":"' + text, 1)
        with open(log + ".tmp", "wb") as fh:
            fh.writelines(lines)
        os.replace(log + ".tmp", log)
        source = registry.open_source("iii", data, registry.OpenOptions(reload_command=""))
        bank = source.bank("main")
        bank.load()
        texts = [r.text for r in bank.rows()]
        scanner = Scanner(source, data_root=os.path.join(work, "keepgui"), cache_root=os.path.join(work, "cache"))
        start = time.perf_counter()
        found = scanner.scan_bank(bank, preview=False)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        again = scanner.scan_bank(bank, preview=False)
        warm = time.perf_counter() - start
        sample = texts[:SAMPLE]
        direct, _direct_found = _library_direct(sample)
        direct_all = direct * len(texts) / max(1, len(sample))
        planted_n = (len(lines) + 999) // 1000
        return [
            Result(
                f"secrets scan, {memories:,} memories (cold)",
                cold,
                "s",
                direct_all,
                f"detect-secrets scan_line on every line ({SAMPLE:,} measured, scaled)",
                direct_all / cold,
                "× faster",
                "< 5 s" if memories >= 100_000 else "",
                cold < 5 if memories >= 100_000 else None,
                note=f"{len(found)} findings ({planted_n} planted); warm (cached): {warm * 1000:.0f} ms, "
                f"{len(again)} findings",
            )
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(quick: bool = False) -> list[Result]:
    out: list[Result] = []
    for size in bench_sizes(quick):
        out += _one(size)
    return out


if __name__ == "__main__":
    from tests.bench.common import print_table

    print_table(run())
