/*
 * commbench: the plain C MPI side of mn4j's communication benchmark.
 *
 * Measures exactly what io.mn4j.bench.CommBenchmark measures on the Java side, with the
 * same sizes, iteration counts, timing and statistic, so that the two can be compared as ratios:
 *   pingpong   MPI_Send/MPI_Recv between ranks 0 and 1, one-way time = round trip / 2
 *   allgather  MPI_Allgather,  each rank contributes BYTES
 *   alltoall   MPI_Alltoall,   each rank's send buffer is BYTES, split into P equal blocks
 *   allreduce  MPI_Allreduce(MPI_SUM) of BYTES of float, separate send and receive buffers
 *   allgather_alloc, alltoall_alloc
 *              the same data with the work of an operation whose receivers do not know the
 *              sizes and get new memory, as mn4j's allocating allgather/alltoall: the sizes first
 *              (MPI_Allgather / MPI_Alltoall of one long), then malloc of the received total,
 *              MPI_Allgatherv / MPI_Alltoallv into it, free
 * Buffers: one send and one receive buffer per op, at the largest size and a 2 MiB boundary; the
 * smaller sizes use prefixes (the Java side places its tensors the same way).
 * Method: per op, a global warm-up at the smallest size (for collectives a second one at 1 MiB:
 * the Java side receives tensors of 256 KiB and more on a path the smallest size never takes);
 * then per size: barrier, WARMUP untimed
 * ops, then REPEATS times {barrier; time ITERS ops; per-op time = elapsed / ITERS; for
 * collectives the maximum over ranks}. ITERS = clamp(16 MiB / BYTES, 2, 100), so repeats are short
 * and some escape interference from other processes. The reported time is the minimum (default)
 * or median of the REPEATS per-op times. Bandwidth = BYTES / time.
 * Output: CSV lines impl,op,ranks,bytes,seconds_per_op,bandwidth (bytes/s) on rank 0.
 *
 * Build: mpicc -O2 -o commbench commbench.c
 * Usage: mpirun -np N commbench [--ops pingpong,allgather,alltoall,allreduce,allgather_alloc,alltoall_alloc]
 *                               [--quick]
 *                               [--stat median|min] [--repeats R] [--out FILE]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keep these in step with CommBenchmark.java. */
#define PP_MIN ((long) 8)
#define PP_MAX ((long) 64 << 20)
#define COLL_MIN ((long) 64 << 10)
#define COLL_MAX ((long) 16 << 20)
#define BYTES_PER_REPEAT ((long) 16 << 20)
#define MIN_ITERS 2
#define MAX_ITERS 100
/* Untimed operations before the first size (lets the JVM compile the Java side's hot paths). */
#define PP_GLOBAL_WARMUP 5000
#define COLL_GLOBAL_WARMUP 20000
#define COLL_LARGE_WARMUP 1000
#define COLL_LARGE_WARMUP_BYTES ((long) 1 << 20)

static int quick = 0;
static int use_min = 1;
static int repeats = 21;

static long iters_for(long bytes) {
    long n = BYTES_PER_REPEAT / bytes;
    if (n < MIN_ITERS) n = MIN_ITERS;
    if (n > MAX_ITERS) n = MAX_ITERS;
    if (quick) n = n / 8 < 2 ? 2 : n / 8;
    return n;
}

static long warmup_for(long iters) {
    long w = iters / 4;
    return w < 2 ? 2 : w;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double summarize(double *t, int n) {
    qsort(t, n, sizeof(double), cmp_double);
    if (use_min) return t[0];
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Buffers start at a huge-page boundary (2 MiB on x86-64), as the Java side's: where a buffer
 * starts relative to huge pages moved this program's 1 MiB allgather by 28 % between launches. */
#define BUFFER_ALIGNMENT ((size_t) 2 << 20)

static float *alloc_floats(long bytes) {
    long n = bytes / (long) sizeof(float);
    float *p = NULL;
    if (posix_memalign((void **) &p, BUFFER_ALIGNMENT, (size_t) (n > 0 ? n : 1) * sizeof(float)) != 0) {
        fprintf(stderr, "commbench: out of memory (%ld bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < n; i++) p[i] = (float) (i % 1000); /* touch every page before timing */
    return p;
}

static void emit(FILE *out, const char *op, int ranks, long bytes, double sec) {
    fprintf(out, "c,%s,%d,%ld,%.9e,%.6e\n", op, ranks, bytes, sec, (double) bytes / sec);
    fflush(out);
}

static void pingpong(FILE *out, int rank, int size) {
    float *buf = alloc_floats(quick ? PP_MAX / 8 : PP_MAX);
    double *t = malloc(sizeof(double) * repeats);
    long global = quick ? PP_GLOBAL_WARMUP / 10 : PP_GLOBAL_WARMUP;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < global; i++) {
        if (rank == 0) {
            MPI_Send(buf, 2, MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 2, MPI_FLOAT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, 2, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 2, MPI_FLOAT, 0, 0, MPI_COMM_WORLD);
        }
    }
    for (long bytes = PP_MIN; bytes <= PP_MAX; bytes *= 2) {
        if (quick && bytes != 8 && bytes != 1024 && bytes != (1L << 20) && bytes != (8L << 20)) continue;
        int count = (int) (bytes / sizeof(float));
        long iters = iters_for(bytes);
        for (int r = -1; r < repeats; r++) {
            long n = r < 0 ? warmup_for(iters) : iters;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (rank == 0) {
                for (long i = 0; i < n; i++) {
                    MPI_Send(buf, count, MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, count, MPI_FLOAT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
            } else if (rank == 1) {
                for (long i = 0; i < n; i++) {
                    MPI_Recv(buf, count, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, count, MPI_FLOAT, 0, 0, MPI_COMM_WORLD);
                }
            }
            if (r >= 0) t[r] = (MPI_Wtime() - t0) / (2.0 * n);
        }
        if (rank == 0) emit(out, "pingpong", size, bytes, summarize(t, repeats));
    }
    free(t);
    free(buf);
}

enum coll { ALLGATHER, ALLTOALL, ALLREDUCE, ALLGATHER_ALLOC, ALLTOALL_ALLOC };
static const char *const COLL_NAMES[] = {"allgather", "alltoall", "allreduce", "allgather_alloc", "alltoall_alloc"};

/* Sizes first, then a new receive buffer (see the header): one call of the _alloc operations. */
static void exchange_alloc(enum coll which, const float *send, long bytes, int size, long *sizes, int *counts,
                           int *displs, int *sendCounts, int *sendDispls) {
    long block = which == ALLTOALL_ALLOC ? bytes / size : bytes;
    long mine[1] = {block};
    long *got = sizes;
    if (which == ALLGATHER_ALLOC) {
        MPI_Allgather(mine, 1, MPI_LONG, got, 1, MPI_LONG, MPI_COMM_WORLD);
    } else {
        long *blocks = sizes + size; /* the second half of sizes: what this rank sends to each */
        for (int p = 0; p < size; p++) blocks[p] = block;
        MPI_Alltoall(blocks, 1, MPI_LONG, got, 1, MPI_LONG, MPI_COMM_WORLD);
    }
    long total = 0;
    for (int p = 0; p < size; p++) { counts[p] = (int) got[p]; displs[p] = (int) total; total += got[p]; }
    char *recv = malloc(total);
    if (which == ALLGATHER_ALLOC) {
        MPI_Allgatherv(send, (int) block, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    } else {
        for (int p = 0; p < size; p++) { sendCounts[p] = (int) block; sendDispls[p] = (int) (p * block); }
        MPI_Alltoallv(send, sendCounts, sendDispls, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    }
    free(recv);
}

static void collective(FILE *out, enum coll which, int rank, int size) {
    const char *name = COLL_NAMES[which];
    long *sizes = malloc(sizeof(long) * 2 * size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int *sendCounts = malloc(sizeof(int) * size), *sendDispls = malloc(sizeof(int) * size);
    long maxBytes = quick ? (1L << 20) : COLL_MAX;
    float *send = alloc_floats(maxBytes);
    float *recv = alloc_floats(which == ALLGATHER || which == ALLGATHER_ALLOC ? maxBytes * size : maxBytes);
    double *t = malloc(sizeof(double) * repeats);
    long global = quick ? COLL_GLOBAL_WARMUP / 20 : COLL_GLOBAL_WARMUP;
    long large = quick ? COLL_LARGE_WARMUP / 20 : COLL_LARGE_WARMUP;
    for (long bytes = COLL_MIN; bytes <= maxBytes; bytes *= 2) {
        if (quick && bytes != COLL_MIN && bytes != maxBytes) continue;
        int count = (int) (bytes / sizeof(float));
        long iters = iters_for(bytes);
        for (int r = -1; r < repeats; r++) {
            long n = r < 0 ? warmup_for(iters) + global + (bytes == COLL_LARGE_WARMUP_BYTES ? large : 0) : iters;
            global = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (long i = 0; i < n; i++) {
                switch (which) {
                case ALLGATHER:
                    MPI_Allgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD);
                    break;
                case ALLTOALL:
                    MPI_Alltoall(send, count / size, MPI_FLOAT, recv, count / size, MPI_FLOAT, MPI_COMM_WORLD);
                    break;
                case ALLREDUCE:
                    MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                    break;
                case ALLGATHER_ALLOC:
                case ALLTOALL_ALLOC:
                    exchange_alloc(which, send, bytes, size, sizes, counts, displs, sendCounts, sendDispls);
                    break;
                }
            }
            double mine = (MPI_Wtime() - t0) / n, slowest;
            MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (r >= 0) t[r] = slowest;
        }
        if (rank == 0) emit(out, name, size, bytes, summarize(t, repeats));
    }
    free(t);
    free(recv);
    free(send);
    free(sizes);
    free(counts);
    free(displs);
    free(sendCounts);
    free(sendDispls);
}

/* Whether the comma-separated list ops names op exactly. */
static int has_op(const char *ops, const char *op) {
    size_t n = strlen(op);
    for (const char *p = ops; (p = strstr(p, op)) != NULL; p += n) {
        if ((p == ops || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *ops = "pingpong,allgather,alltoall,allreduce";
    const char *outPath = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) ops = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) outPath = argv[++i];
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--stat") && i + 1 < argc) {
            const char *s = argv[++i];
            if (!strcmp(s, "min")) use_min = 1;
            else if (!strcmp(s, "median")) use_min = 0;
            else { if (rank == 0) fprintf(stderr, "commbench: --stat median|min\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
        } else {
            if (rank == 0) fprintf(stderr, "commbench: unknown argument %s\n"
                    "usage: commbench [--ops pingpong,allgather,alltoall,allreduce,allgather_alloc,alltoall_alloc] [--quick] "
                    "[--stat median|min] [--repeats R] [--out FILE]\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (repeats < 1) repeats = 1;
    if (quick && repeats > 3) repeats = 3;
    FILE *out = stdout;
    if (rank == 0 && outPath) {
        out = fopen(outPath, "a");
        if (!out) { perror(outPath); MPI_Abort(MPI_COMM_WORLD, 1); }
    }
    if (has_op(ops, "pingpong")) {
        if (size >= 2) pingpong(out, rank, size);
        else if (rank == 0) fprintf(stderr, "commbench: pingpong needs 2 ranks, skipped\n");
    }
    for (int c = ALLGATHER; c <= ALLTOALL_ALLOC; c++) {
        if (has_op(ops, COLL_NAMES[c])) collective(out, (enum coll) c, rank, size);
    }
    if (out != stdout) fclose(out);
    MPI_Finalize();
    return 0;
}
