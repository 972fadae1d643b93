"""Vega through vl-convert, no browser and no network: the script the page inlines
(Vega, Vega-Lite and vega-embed as one), and a Vega-Lite spec rendered to SVG and PNG
for the figures beside the page."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

SCALE = 2.0  # a PNG's pixels per the chart's: sharp in print (matplotlib's was 120 dpi)
# A PNG's longest side, at most: a PNG renderer refuses 65,536 pixels (a chart of 180
# panels is 36,000 tall). A longer chart's PNG is drawn finer; its SVG is whole.
MOST_PIXELS = 30_000
_SIZE = re.compile(r'<svg[^>]*?\swidth="([0-9.]+)"[^>]*?\sheight="([0-9.]+)"')


@cache
def bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (vl-convert ships them): the page
    fetches nothing."""
    import vl_convert

    code = str(vl_convert.javascript_bundle())  # type: ignore[call-arg]
    # Inline, a '</script' in its text would end the element: in JS, '<\\/' reads the same.
    return re.sub("</(script)", r"<\\/\1", code, flags=re.IGNORECASE)


def render(spec: dict[str, Any]) -> tuple[str, bytes]:
    """A Vega-Lite spec with its data inside, as SVG and PNG (the PNG from the SVG: the
    spec is laid out once). The same Vega-Lite the page's bundle holds draws it."""
    import vl_convert

    text = json.dumps(spec, allow_nan=False)  # as the page's data: a NaN is a bug
    svg = str(vl_convert.vegalite_to_svg(text))
    size = _SIZE.match(svg)
    longest = max(float(size.group(1)), float(size.group(2))) if size else 1.0
    scale = min(SCALE, MOST_PIXELS / longest)
    return svg, bytes(vl_convert.svg_to_png(svg, scale=scale))
