#!/bin/sh
# The bench image for this host, for `make quickstart` / `make run`: cuda where an
# NVIDIA GPU answers, rocm where AMD's GPU driver is present, else xeon (the CPU image:
# any x86-64 CPU, Intel or AMD). On a Mac there is no image: use the native install.
if [ "$(uname -s)" = Darwin ]; then
    echo native
elif nvidia-smi -L > /dev/null 2>&1; then
    echo cuda
elif [ -e /dev/kfd ]; then
    echo rocm
else
    echo xeon
fi
