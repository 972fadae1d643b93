"""NASNet-A Large from timm (pip install timm, or bench[zoo]); nothing is downloaded."""

from bench.util.errors import UsageError
from bench.workloads._torch import loss, make_batch

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point):
    try:
        import timm
    except ImportError:
        raise UsageError(
            "nasnet-large: its model comes from timm, which is not installed; "
            "pip install 'bench[zoo]' (or timm)"
        ) from None
    return timm.create_model("nasnetalarge", pretrained=False, num_classes=spec.num_classes)
