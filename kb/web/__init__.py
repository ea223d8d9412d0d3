"""perfkb's web page and JSON API: server-rendered FastAPI + Jinja2, no external assets."""
