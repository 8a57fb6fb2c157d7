"""Documents of a re-benchmark under one label: layer_norm forward on an H100 at 0.7.0,
then twice at 0.8.0 (a development tree re-measured under the last release), Liger 15%
slower at the second 0.8.0 session on every workload, huggingface flat."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kiana.documents import Gpu, RunSpec, build_document

H100 = Gpu("nvidia", "NVIDIA H100", "80GB HBM3", "sm_90", "NVIDIA H100 80GB HBM3")
#: (version, day, Liger's factor): the sessions, oldest first.
SESSIONS = (("0.7.0", 0, 1.0), ("0.8.0", 20, 1.0), ("0.8.0", 40, 1.15))
START = datetime(2025, 3, 1)


def session_documents() -> list[dict[str, Any]]:
    docs = []
    for w in range(4):
        for version, day, factor in SESSIONS:
            for provider, base in (("liger", 1e5), ("huggingface", 1.7e5)):
                median = base * (w + 1) * (factor if provider == "liger" else 1.0)
                docs.append(build_document(RunSpec(
                    kernel="layer_norm", kernel_title="LayerNorm", pass_="forward",
                    provider=provider, gpu=H100, workload=f"hidden{1024 << w}-fp32",
                    observed_at=START + timedelta(days=day, minutes=w + len(provider)),
                    version=version, median=median, p20=median * 0.995,
                    p80=median * 1.005,
                )))  # fmt: skip
    return docs


def session_database(directory: Path) -> Any:
    """An in-memory kiana database of :func:`session_documents`."""
    from kiana import load

    path = directory / "sessions.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in session_documents()))
    con = load.connect(None)
    load.load(con, [path])
    return con
