"""bench report's MoE view in a real browser (Debian's chromium driven by Playwright, as
tests/report/test_page_browser.py): tokens/s per device of each mixture of experts, the
all-to-all's share dark on its bar, the figures on hover, no console warning."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.report import compare as cmp
from tests.report.test_compare import A100, machine, point
from tests.report.test_moe import EPYC, _two_machines
from tests.report.test_page_untrusted import opened

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [
    pytest.mark.full,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="no chromium (apt-get install chromium)"
    ),
]


def test_the_moe_view_draws_each_machines_tokens_and_all_to_all_and_logs_nothing(tmp_path):
    pytest.importorskip("vl_convert")
    from bench.report import page

    dense = (Path("resnet.json"), machine(A100, [point(64, [100, 101, 99])]))
    page.write_report(cmp.compare([*_two_machines(), dense], "xeon"), tmp_path / "report")
    with opened(tmp_path / "report" / "report.html", warnings=True) as (tab, problems):
        assert tab.evaluate("document.body.dataset.ready") == "1", tab.inner_text("#failure")
        view = "#view-experts"
        assert tab.locator(view).is_visible()
        # A bar per machine and configuration, the dense model's none; the dark
        # all-to-all parts are not read aloud as figures.
        labels = tab.evaluate(
            f"[...document.querySelectorAll('{view} .mark-rect path')]"
            ".map((p) => p.getAttribute('aria-label')).filter((l) => l)"
        )
        assert len(labels) == 4 and not any("resnet50" in label for label in labels)
        assert all("undefined" not in label for label in labels)
        parts = tab.locator(f"{view} .mark-rect path[fill='black']")
        assert parts.count() == 4
        widths = sorted(parts.nth(i).bounding_box()["width"] for i in range(4))
        assert widths[:2] == [0, 0] and widths[2] > 0  # one process: no all-to-all
        # Hovering the EPYC's split run: its figures, MFU of the active parameters.
        bar = tab.locator(
            f'{view} .mark-rect path[aria-label*="expert-parallel=2"][aria-label*="{EPYC}"]'
        ).first
        bar.hover()
        tip = tab.locator("#vg-tooltip-element")
        tip.wait_for(state="visible", timeout=5_000)
        text = tip.inner_text()
        assert "all-to-all 20.3% · balance 1.23 · none dropped" in text
        assert "10.0 k tokens/s" in text and "MFU (active parameters)" in text
        tab.mouse.move(0, 0)
        xeon = tab.locator(f'{view} .mark-rect path[aria-label*="Xeon"]').first
        xeon.hover()
        tip.wait_for(state="visible", timeout=5_000)
        assert "n/a" in tab.locator("#vg-tooltip-element").inner_text()  # no peak: no MFU
        # A filter to the dense model's machine hides the view (it draws nothing).
        tab.select_option("#filter-workload", "resnet50")
        tab.wait_for_function(f"document.querySelector('{view}').hidden", timeout=5_000)
        tab.screenshot(path=str(tmp_path / "moe.png"), full_page=True)
    assert problems == [], problems
