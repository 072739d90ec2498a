# Sourced (not run) by scripts/mn4j-run and bench/comm.sh, so that programs and the
# benchmark run with the same malloc settings: exports GLIBC_TUNABLES unless it is set.
#
# Received tensors are fresh allocations. glibc hands blocks of 32 MiB and more back to the
# kernel on free, so every such receive page-faults its whole buffer again (half of C's bandwidth
# at 64 MiB). One arena, no mmap and no trimming keep freed memory mapped for the next tensor.
# hugetlb=1 asks the kernel for transparent huge pages on that heap (5-25 % faster transfers of
# 1-64 MiB here; ignored where THP is off or glibc is older than 2.35).
# Set GLIBC_TUNABLES yourself (even empty) to keep glibc's defaults.
export GLIBC_TUNABLES=${GLIBC_TUNABLES-glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1099511627776:glibc.malloc.hugetlb=1}
