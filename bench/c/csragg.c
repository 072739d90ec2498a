/*
 * csragg: the plain C side of mn4j's aggregation benchmark (io.mn4j.bench.AggregationBenchmark),
 * which writes the graph and launches this program between its own repetitions.
 *
 * Reads a CSR matrix A and its transpose from DIR (int64 .npy files written by the Java side:
 * rowptr.npy, col.npy, t_rowptr.npy, t_col.npy) and times, with OpenMP threads:
 *   forward   y[i] = sum over entries e of row i of x[col[e]]       (y = A x, x [cols, F])
 *   backward  gx[j] = sum over entries e of row j of Aᵀ of g[tcol[e]]  (gx = Aᵀ g, g [rows, F])
 *   copy      dst = x (cols * F floats), a plain parallel copy, the memory's streaming speed
 * float32, row-major, no weights. x and g are the same deterministic patterns as the Java side's,
 *   x[i][j] = ((31 i + 7 j) mod 1000) / 1000,  g[i][j] = ((17 i + 13 j) mod 1000) / 1000 - 0.5,
 * so that the checksums (sum of all outputs, in double) can be compared with LibTorch's.
 * Each of WARMUP + REPS repetitions runs forward, backward and copy in turn.
 * Output, one line per timed repetition and operation: op,seconds,checksum
 *
 * Build: gcc -O3 -fopenmp -o csragg csragg.c   (mpicc -O3 -fopenmp works as well)
 * Usage: csragg --dir DIR --features F [--threads T] [--reps R] [--warmup W]
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads an int64 .npy vector (format 1.x or 2.x, little-endian '<i8', C order); sets *len. */
static int64_t *read_npy_i64(const char *dir, const char *name, long *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) { fprintf(stderr, "%s: not .npy\n", path); exit(1); }
    long hlen;
    if (pre[6] == 1) {
        hlen = pre[8] | (pre[9] << 8);
    } else {
        if (fread(pre + 10, 1, 2, f) != 2) { fprintf(stderr, "%s: short header\n", path); exit(1); }
        hlen = pre[8] | (pre[9] << 8) | ((long) pre[10] << 16) | ((long) pre[11] << 24);
    }
    char *header = calloc(hlen + 1, 1);
    if (fread(header, 1, hlen, f) != (size_t) hlen) { fprintf(stderr, "%s: short header\n", path); exit(1); }
    if (!strstr(header, "<i8") || strstr(header, "True")) { fprintf(stderr, "%s: want '<i8', C order: %s\n", path, header); exit(1); }
    char *shape = strstr(header, "'shape': (");
    if (!shape) { fprintf(stderr, "%s: no shape: %s\n", path, header); exit(1); }
    *len = strtol(shape + 10, NULL, 10);
    free(header);
    int64_t *a = malloc(sizeof(int64_t) * (*len > 0 ? *len : 1));
    if (fread(a, sizeof(int64_t), *len, f) != (size_t) *len) { fprintf(stderr, "%s: short data\n", path); exit(1); }
    fclose(f);
    return a;
}

/* out[i] = sum over row i's entries of in[col[e]]: one output row at a time, F floats wide. */
static void spmm(long rows, const int64_t *rowptr, const int64_t *col, const float *in, float *out, long f) {
#pragma omp parallel for schedule(dynamic, 256)
    for (long i = 0; i < rows; i++) {
        float *o = out + i * f;
        for (long j = 0; j < f; j++) o[j] = 0;
        for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++) {
            const float *r = in + col[e] * f;
            for (long j = 0; j < f; j++) o[j] += r[j];
        }
    }
}

static void copy(long n, const float *in, float *out) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) out[i] = in[i];
}

static double checksum(const float *a, long n) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (long i = 0; i < n; i++) s += a[i];
    return s;
}

static float *pattern(long rows, long f, long a, long b, float shift) {
    float *p = aligned_alloc(64, ((sizeof(float) * rows * f + 63) / 64) * 64);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < f; j++) p[i * f + j] = (float) ((a * i + b * j) % 1000) / 1000.0f + shift;
    return p;
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    long f = 0, reps = 3, warmup = 1;
    int threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--features")) f = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atol(argv[i + 1]);
        else { fprintf(stderr, "csragg: unknown option %s\n", argv[i]); return 2; }
    }
    if (!dir || f < 1 || reps < 1 || warmup < 0) {
        fprintf(stderr, "usage: csragg --dir DIR --features F [--threads T] [--reps R] [--warmup W]\n");
        return 2;
    }
    if (threads > 0) omp_set_num_threads(threads);
    long nrp, ne, ntrp, nte;
    int64_t *rowptr = read_npy_i64(dir, "rowptr.npy", &nrp), *col = read_npy_i64(dir, "col.npy", &ne);
    int64_t *trowptr = read_npy_i64(dir, "t_rowptr.npy", &ntrp), *tcol = read_npy_i64(dir, "t_col.npy", &nte);
    long rows = nrp - 1, cols = ntrp - 1;
    if (ne != nte || rowptr[rows] != ne || trowptr[cols] != ne) { fprintf(stderr, "csragg: inconsistent CSR files in %s\n", dir); return 1; }
    float *x = pattern(cols, f, 31, 7, 0.0f), *g = pattern(rows, f, 17, 13, -0.5f);
    /* The copy writes into gx (cols x F) after backward is summed: one matrix less in memory. */
    float *y = pattern(rows, f, 0, 0, 0.0f), *gx = pattern(cols, f, 0, 0, 0.0f), *dst = gx;
    for (long r = -warmup; r < reps; r++) {
        double t0 = omp_get_wtime();
        spmm(rows, rowptr, col, x, y, f);
        double t1 = omp_get_wtime();
        spmm(cols, trowptr, tcol, g, gx, f);
        double t2 = omp_get_wtime();
        double gsum = checksum(gx, cols * f);
        double t3 = omp_get_wtime();
        copy(cols * f, x, dst);
        double t4 = omp_get_wtime();
        if (r >= 0) {
            printf("forward,%.9f,%.17g\n", t1 - t0, checksum(y, rows * f));
            printf("backward,%.9f,%.17g\n", t2 - t1, gsum);
            printf("copy,%.9f,%.17g\n", t4 - t3, checksum(dst, cols * f));
        }
    }
    free(x); free(g); free(y); free(gx);
    free(rowptr); free(col); free(trowptr); free(tcol);
    return 0;
}
