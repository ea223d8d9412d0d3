"""Take the README screenshots (docs/screenshots/search.png, analyze.png, and the phone-width
search-phone.png, analyze-phone.png at 390 px) from a real server on a temporary data dir with the
packaged entries, in headless Chromium.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from kb.settings import Settings
from kb.web.devserver import running_server, seed_entries

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "tests" / "fixtures" / "seeds"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]
SEARCH_QUERY = "truss"
ANALYZE_FILES = ("001_mpstat.txt", "001_truss_shmdt.txt")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--phone-width", type=int, default=390)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    evidence = "\n\n".join(
        f"$ {name.split('_', 1)[1].removesuffix('.txt').replace('_', ' ')}\n"
        + (SEEDS / name).read_text()
        for name in ANALYZE_FILES
    )
    with tempfile.TemporaryDirectory() as tmp:
        # signed in through a (pretend) reverse proxy, so the pages show a user and no banner
        settings = Settings(data_dir=Path(tmp), proxy_user_header="X-Forwarded-User")
        seed_entries(settings)
        with running_server(settings) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            for width, suffix in ((args.width, ""), (args.phone_width, "-phone")):
                context = browser.new_context(
                    base_url=url,
                    viewport={"width": width, "height": 900},
                    device_scale_factor=1,
                    extra_http_headers={"X-Forwarded-User": "dana"},
                )
                page = context.new_page()
                page.goto(f"/search?q={SEARCH_QUERY}")
                page.screenshot(path=str(args.out / f"search{suffix}.png"), full_page=False)

                page.goto("/analyze")
                page.fill("textarea[name=text]", evidence)
                page.click("form.analyzeform button[type=submit]")
                page.wait_for_url(re.compile(r"/analyze/[a-z0-9]+$"))
                page.screenshot(path=str(args.out / f"analyze{suffix}.png"), full_page=True)
                context.close()
            browser.close()
    print(f"wrote search and analyze screenshots, desktop and phone, in {args.out}")


if __name__ == "__main__":
    main()
