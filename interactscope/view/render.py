"""Render a :class:`PageData` into one self-contained HTML file (jinja2 templates shipped with
the package; CSS, JavaScript, SVG and JPEG thumbnails all inline)."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2

from interactscope.core.files import write_atomic
from interactscope.view.ego_model import EgoPageData
from interactscope.view.model import PageData
from interactscope.view.palette import STATES, states_payload

Page = PageData | EgoPageData

__all__ = ["PAGES", "render_page", "write_page"]

PAGES: dict[str, str] = {"streaming": "streaming.html.j2", "ego": "ego.html.j2"}
"""Page kind -> template (builders: :mod:`.streaming` for ``streaming``, :mod:`.ego` for ``ego``)."""

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("interactscope.view", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    keep_trailing_newline=True,
)


def _payload(data: Page | dict) -> str:
    # JSON inside <script>: "</" and "<!--" must not appear literally.
    doc = data if isinstance(data, dict) else data.model_dump(mode="json")
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(data: Page) -> str:
    """The page as HTML text.

    Raises:
        KeyError: ``data.page`` names no template in :data:`PAGES`.
    """
    template = _ENV.get_template(PAGES[data.page])
    safe = jinja2.utils.markupsafe.Markup
    return template.render(
        data=data,
        payload=safe(_payload(data)),
        states=STATES,
        states_json=safe(_payload(states_payload())),
    )


def write_page(data: Page, out: str | Path) -> Path:
    """Write the page to ``out`` (parent folders created); returns the path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, render_page(data))
    return out
