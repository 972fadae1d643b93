"""AMD GPUs: PyTorch's ROCm builds expose HIP through the torch.cuda API."""

from __future__ import annotations

from typing import Any, ClassVar

from bench.platforms.cuda import CudaPlatform


class RocmPlatform(CudaPlatform):
    name = "rocm"
    precisions = frozenset({"fp32", "tf32", "fp16", "bf16"})
    auto_priority = 20
    energy_counter = "amdsmi_counter"
    xla_device = None  # bench's TensorFlow and JAX images are CUDA's and TPU's
    mlx_device: ClassVar[str | None] = None  # MLX has no ROCm backend
    torch_attention_kernels = ("flash", "efficient", "math")  # AOTriton's; no cuDNN
    torch_decodes_jpeg = False  # torchvision's decode_jpeg on a device is nvJPEG's

    def _runtime_missing(self, torch) -> str | None:
        if getattr(torch.version, "hip", None) is None:
            return "this PyTorch build has no ROCm support"
        return None

    def precision_unsupported(self, precision: str) -> str | None:
        # Capability numbers are CUDA's; on ROCm the GPU architecture decides, and
        # PyTorch reports bf16 support directly.
        if precision not in self.precisions:
            return super(CudaPlatform, self).precision_unsupported(precision)
        import torch

        if precision == "bf16" and not torch.cuda.is_bf16_supported():
            return "bf16 is not supported by this GPU"
        return None

    def describe(self) -> dict[str, Any]:
        import torch

        info = super().describe()
        info.update(
            driver_version=None,
            cuda_runtime=None,
            cudnn=None,
            hip_runtime=torch.version.hip,
            gcn_arch=[
                torch.cuda.get_device_properties(i).gcnArchName
                for i in range(info["accelerator_count"])
            ],
        )
        return info


PLATFORM = RocmPlatform()
