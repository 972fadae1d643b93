"""The validation loss against seconds trained (see loss_tokens)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.loss_tokens import loss_along
from bench.report.views.view import View

PLACE = 110  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    return loss_along(
        t, "wall_s", "seconds (training plus evaluation)", "loss_time", "Loss against time"
    )
