"""The culprits of a finding on the page (see :mod:`kiana.culprits`): the ranked commits
as a short list, each pull request a plain anchor to
``https://github.com/linkedin/Liger-Kernel/pull/N`` (a link the reader may follow; the
page itself fetches nothing), or, when they could not be looked up, the ``git log``
command that would list them.  Everything is escaped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kiana.report.components import Html, esc

PULL_URL = "https://github.com/linkedin/Liger-Kernel/pull/"


def _item(culprit: Mapping[str, Any]) -> Html:
    pr = culprit.get("pr")
    link = (
        f'<a href="{esc(PULL_URL + str(int(pr)))}" rel="noreferrer">#{int(pr)}</a> '
        if isinstance(pr, int)
        else ""
    )
    files = ", ".join(str(f) for f in culprit.get("files") or [])
    title = f"{culprit.get('commit')} · {culprit.get('date')} · {culprit.get('role')}: {files}"
    return Html(
        f'<li title="{esc(title)}">{link}<code>{esc(str(culprit.get("commit"))[:10])}</code> '
        f"{esc(culprit.get('subject'))}</li>"
    )


def culprits_html(row: Mapping[str, Any], top: int | None = None) -> Html:
    """A finding's culprits (the first ``top``, or all) as a list; the ``git log``
    hint when there are none to show; nothing for a finding without either."""
    culprits = row.get("culprits")
    if culprits:
        shown = culprits if top is None else culprits[:top]
        more = len(culprits) - len(shown)
        tail = f'<li class="more">+{more} more</li>' if more > 0 else ""
        return Html(f'<ol class="culprits">{"".join(_item(c).markup for c in shown)}{tail}</ol>')
    if culprits is not None:
        return Html('<span class="note">no commit touches the kernel</span>')
    command = row.get("culprits_command")
    if command:
        return Html(f"<details><summary>git log</summary><code>{esc(command)}</code></details>")
    return Html("")
