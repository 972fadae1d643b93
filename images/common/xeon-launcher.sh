#!/bin/sh
# The launcher of bench:xeon and bench:xeon-ipex, run by their bin/bench (first on PATH,
# so ENTRYPOINT ["bench"] goes through it). It sets the defaults of bench's runtime axes to what
# `python -m torch.backends.xeon.run_cpu` does for one instance (with Debian's library
# paths, where run_cpu does not look):
#   --allocator tcmalloc   TCMalloc preloaded in each point's child,
#   --openmp intel         Intel OpenMP (libiomp5 from the intel-openmp wheel) preloaded,
#                          KMP_AFFINITY=granularity=fine,compact,1,0, KMP_BLOCKTIME=1,
#   --numa auto            each child under numactl, one thread per physical core and
#                          their NUMA nodes, where that helps and the container may: a
#                          machine of several NUMA nodes, run with --cap-add SYS_NICE;
#                          elsewhere unbound, silently, the point recording why ('not
#                          bound (single node)', '(no SYS_NICE)'). --numa on asks for it
#                          (and warns where it cannot), --numa off never binds;
# and one OpenMP thread per physical core. Each is a default: `--allocator system,tcmalloc`
# sweeps it, BENCH_ALLOCATOR=system changes it. bench itself (the parent) runs unbound and
# without preloads; every point records what its child ran with.
set -eu
export BENCH_ALLOCATOR="${BENCH_ALLOCATOR:-tcmalloc}"
export BENCH_OPENMP="${BENCH_OPENMP:-intel}"
export BENCH_NUMA="${BENCH_NUMA:-auto}"
# One thread per physical core: the first logical CPU of each core (no hyper-threads).
cores=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$cores}"
exec /opt/venv/bin/bench "$@"
