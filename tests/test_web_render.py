"""The search page's precomputed links are exactly what the template's urlencode made before."""

from __future__ import annotations

import re

import pytest
from jinja2.utils import url_quote

from kb.web.pages import _facet_groups


def _old_link(q: str, field: str, value: str) -> str:
    token = f'{field}:"{value}"' if re.search(r"[\s,\"]", value) else f"{field}:{value}"
    return url_quote(q if token in q.split() else f"{q} {token}".strip())


@pytest.mark.parametrize(
    "q",
    ["", "shmdt", "log file sync", "platform:linux", 'a/b <x> & "quoted" é', "tag:numa wait"],
)
def test_facet_links_match_the_template_urlencode(q):
    facets = {
        "platform": {"linux": 3, "solaris": 5, "any": 3},
        "tag": {"numa": 1, "with space": 2, 'quo"te': 2, "a,b": 1},
        "source": {},
    }
    groups = _facet_groups(q, facets)
    assert [g["title"] for g in groups] == ["Platform", "Tags"]
    for group, field in zip(groups, ("platform", "tag"), strict=True):
        want = sorted(facets[field].items(), key=lambda kv: kv[1], reverse=True)
        assert [(v, n) for v, n, _ in group["items"]] == want
        for value, _, href in group["items"]:
            assert href == _old_link(q, field, value)
