/* collect/calibrate.c: measures this host as an envelope, the way kerncraft
 * builds its machine files from measured bandwidths and loop rates. Every value
 * is the median of several timed samples (CLOCK_MONOTONIC, ns) with its spread
 * (interquartile range / median); bandwidths in GB/s (bytes/ns), rates in TOPS
 * (1e12 ops/s, one FMA or MAC = 2 ops), setup in ns, launch cost in us. */
#include "calibrate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 16

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}


/* Time this thread ran, ns (CLOCK_THREAD_CPUTIME_ID): beside the wall clock,
 * it says whether a sample was descheduled. */
static int64_t thread_cpu_ns(void)
{
	struct timespec t;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t))
		return -1;
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A sample is taken again when the thread ran less than RUN_SHARE of its
 * wall time (another process had the CPU: four engineers' builds on a
 * 2-vCPU VM took the fp32 peak to 0.117 TOPS for 0.20 quiet, and every rate
 * of one calibration to 55-60%), up to RETRIES times; the last try stands
 * when none ran alone. calibrate measures the machine, not its neighbours. */
#define RUN_SHARE 0.95
#define RETRIES 8

/* Adds one calibrated value: median of x[0..n) and spread = IQR / median. */
void col_cal_record(struct col_calibration *cal, const char *key, double *x, int n,
		    const char *method)
{
	if (cal->nv >= COL_CAL_MAX_VALUES || n < 1)
		return;
	struct col_cal_value *v = &cal->v[cal->nv++];
	qsort(x, (size_t)n, sizeof *x, cmp_d);
	size_t m = (size_t)n;
	v->median = opr_quantile_type7(x, m, 0.5);
	v->spread = v->median > 0
			    ? (opr_quantile_type7(x, m, 0.75) - opr_quantile_type7(x, m, 0.25)) / v->median
			    : 0;
	v->samples = n;
	snprintf(v->key, sizeof v->key, "%s", key);
	snprintf(v->method, sizeof v->method, "%s", method);
}

const struct col_cal_value *col_cal_find(const struct col_calibration *cal, const char *key)
{
	for (int i = 0; cal && i < cal->nv; i++)
		if (!strcmp(cal->v[i].key, key))
			return &cal->v[i];
	return NULL;
}

/* The median recorded under key, or an error: record() drops a value when
 * the table is full or nothing was timed, and a rate must never be read
 * through a missing row. */
static int measured(const struct col_calibration *cal, const char *key, double *out,
		    struct opr_error *err)
{
	const struct col_cal_value *v = col_cal_find(cal, key);
	if (!v)
		return opr_error_set(err, OPR_EINTERNAL, "calibration recorded no '%s'", key);
	*out = v->median;
	return 0;
}

/* ---- host facts from sysfs and procfs ---------------------------------------- */

/* Size in KiB of cpu0's cache at level with a type other than Instruction;
 * 0 when sysfs does not say. */
static double cache_kib(int level)
{
	char path[128], buf[64];
	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		int lv = 0;
		if (fscanf(f, "%d", &lv) != 1)
			lv = 0;
		fclose(f);
		if (lv != level)
			continue;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if ((f = fopen(path, "r"))) {
			int instr = fgets(buf, sizeof buf, f) && !strncmp(buf, "Instruction", 11);
			fclose(f);
			if (instr)
				continue;
		}
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (!(f = fopen(path, "r")))
			continue;
		double kib = 0;
		char unit = 'K';
		if (fscanf(f, "%lf%c", &kib, &unit) < 1)
			kib = 0;
		fclose(f);
		return unit == 'M' ? kib * 1024 : kib;
	}
	return 0;
}

static double clock_ghz(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	double mhz = 0;
	if (!f)
		return 1.0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "cpu MHz", 7)) {
			char *c = strchr(line, ':');
			if (c)
				mhz = strtod(c + 1, NULL);
			break;
		}
	fclose(f);
	return mhz > 0 ? mhz / 1000.0 : 1.0;
}

/* ---- the loops ----------------------------------------------------------------- */

static volatile float sink_f;
static volatile int sink_i;

/* The peak loops of each kernel path (ops_isa_active: calibration measures
 * the path that will run). fp32: 12 independent FMA chains (more than
 * latency x throughput = 4 x 2 in flight on current x86 cores), no memory
 * traffic, ops/ns at 2 ops per lane per FMA. Exact int8: the instruction of
 * the path's qgemm kernel (AVX2 vpmaddwd on int16-widened bytes, 16 MACs a
 * 256-bit instruction; AVX-512 vpdpbusd, 64 MACs a 512-bit instruction;
 * scalar an int32 multiply-add), 12 chains each feeding its own result
 * back so that nothing is loop-invariant, ops/ns at 2 ops per MAC. Each is
 * spelt out: an array of chains was kept in memory, at a third of the rate.
 * Only the chosen path's function runs, on a host that has its ISA. */
#define CHAINS12(op)                                                            \
	do {                                                                    \
		a0 = op(a0); a1 = op(a1); a2 = op(a2); a3 = op(a3);             \
		a4 = op(a4); a5 = op(a5); a6 = op(a6); a7 = op(a7);             \
		a8 = op(a8); a9 = op(a9); a10 = op(a10); a11 = op(a11);         \
	} while (0)

/* the twelve chains summed with add, so that none is dead code */
#define SUM12(add)                                                              \
	add(add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7))),  \
	    add(add(a8, a9), add(a10, a11)))

static double per_ns(int64_t iters, int64_t t0, int64_t t1, double ops_per_iter)
{
	double ns = (double)(t1 - t0);
	return ns > 0 ? (double)iters * ops_per_iter / ns : 0;
}

static double fma_rate_scalar(int64_t iters)
{
	float a0 = 1.000f, a1 = 1.001f, a2 = 1.002f, a3 = 1.003f, a4 = 1.004f, a5 = 1.005f;
	float a6 = 1.006f, a7 = 1.007f, a8 = 1.008f, a9 = 1.009f, a10 = 1.010f, a11 = 1.011f;
	volatile float vm = 0.9999999f, vc = 1e-7f;
	const float m = vm, c = vc;
#define SC_FMA(x) ((x) * m + c)
	int64_t t0 = opr_now_ns();
	for (int64_t i = 0; i < iters; i++)
		CHAINS12(SC_FMA);
	int64_t t1 = opr_now_ns();
#undef SC_FMA
	sink_f = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
	return per_ns(iters, t0, t1, 12 * 2);
}

__attribute__((target("avx2,fma"))) static double fma_rate_avx2(int64_t iters)
{
	const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
	__m256 a0 = _mm256_set1_ps(1.000f), a1 = _mm256_set1_ps(1.001f), a2 = _mm256_set1_ps(1.002f);
	__m256 a3 = _mm256_set1_ps(1.003f), a4 = _mm256_set1_ps(1.004f), a5 = _mm256_set1_ps(1.005f);
	__m256 a6 = _mm256_set1_ps(1.006f), a7 = _mm256_set1_ps(1.007f), a8 = _mm256_set1_ps(1.008f);
	__m256 a9 = _mm256_set1_ps(1.009f), a10 = _mm256_set1_ps(1.010f), a11 = _mm256_set1_ps(1.011f);
#define Y_FMA(x) _mm256_fmadd_ps((x), m, c)
	int64_t t0 = opr_now_ns();
	for (int64_t i = 0; i < iters; i++)
		CHAINS12(Y_FMA);
	int64_t t1 = opr_now_ns();
#undef Y_FMA
	__m256 s = SUM12(_mm256_add_ps);
	sink_f = _mm256_cvtss_f32(s);
	return per_ns(iters, t0, t1, 12 * 8 * 2);
}

__attribute__((target("avx512f"))) static double fma_rate_avx512(int64_t iters)
{
	const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
	__m512 a0 = _mm512_set1_ps(1.000f), a1 = _mm512_set1_ps(1.001f), a2 = _mm512_set1_ps(1.002f);
	__m512 a3 = _mm512_set1_ps(1.003f), a4 = _mm512_set1_ps(1.004f), a5 = _mm512_set1_ps(1.005f);
	__m512 a6 = _mm512_set1_ps(1.006f), a7 = _mm512_set1_ps(1.007f), a8 = _mm512_set1_ps(1.008f);
	__m512 a9 = _mm512_set1_ps(1.009f), a10 = _mm512_set1_ps(1.010f), a11 = _mm512_set1_ps(1.011f);
#define Z_FMA(x) _mm512_fmadd_ps((x), m, c)
	int64_t t0 = opr_now_ns();
	for (int64_t i = 0; i < iters; i++)
		CHAINS12(Z_FMA);
	int64_t t1 = opr_now_ns();
#undef Z_FMA
	__m512 s = SUM12(_mm512_add_ps);
	sink_f = _mm512_reduce_add_ps(s);
	return per_ns(iters, t0, t1, 12 * 16 * 2);
}

static double fma_rate(int64_t iters)
{
	switch (ops_isa_active()) {
	case OPS_ISA_AVX512:
		return fma_rate_avx512(iters);
	case OPS_ISA_AVX2:
		return fma_rate_avx2(iters);
	default:
		return fma_rate_scalar(iters);
	}
}

static double int8_rate_scalar(int64_t iters)
{
	int32_t a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8, a8 = 9;
	int32_t a9 = 10, a10 = 11, a11 = 12;
	volatile int32_t vw = 1;
	const int32_t w = vw;
	/* (x & 0x7f) keeps the chain a product of bytes, as the kernel's */
#define SC_MAC(x) ((int32_t)((x) & 0x7f) * w + 3)
	int64_t t0 = opr_now_ns();
	for (int64_t i = 0; i < iters; i++)
		CHAINS12(SC_MAC);
	int64_t t1 = opr_now_ns();
#undef SC_MAC
	sink_i = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
	return per_ns(iters, t0, t1, 12 * 2);
}

__attribute__((target("avx2"))) static double int8_rate_avx2(int64_t iters)
{
	const __m256i w = _mm256_set1_epi16(1);
	__m256i a0 = _mm256_set1_epi16(1), a1 = _mm256_set1_epi16(2), a2 = _mm256_set1_epi16(3);
	__m256i a3 = _mm256_set1_epi16(4), a4 = _mm256_set1_epi16(5), a5 = _mm256_set1_epi16(6);
	__m256i a6 = _mm256_set1_epi16(7), a7 = _mm256_set1_epi16(8), a8 = _mm256_set1_epi16(9);
	__m256i a9 = _mm256_set1_epi16(10), a10 = _mm256_set1_epi16(11), a11 = _mm256_set1_epi16(12);
#define Y_MAC(x) _mm256_madd_epi16((x), w)
	int64_t t0 = opr_now_ns();
	for (int64_t i = 0; i < iters; i++)
		CHAINS12(Y_MAC);
	int64_t t1 = opr_now_ns();
#undef Y_MAC
	__m256i s = SUM12(_mm256_add_epi32);
	sink_i = _mm256_extract_epi32(s, 0);
	return per_ns(iters, t0, t1, 12 * 16 * 2);
}

__attribute__((target("avx512f,avx512vnni"))) static double int8_rate_avx512(int64_t iters)
{
	const __m512i w = _mm512_set1_epi8(1), u = _mm512_set1_epi8(3);
	__m512i a0 = _mm512_set1_epi32(1), a1 = _mm512_set1_epi32(2), a2 = _mm512_set1_epi32(3);
	__m512i a3 = _mm512_set1_epi32(4), a4 = _mm512_set1_epi32(5), a5 = _mm512_set1_epi32(6);
	__m512i a6 = _mm512_set1_epi32(7), a7 = _mm512_set1_epi32(8), a8 = _mm512_set1_epi32(9);
	__m512i a9 = _mm512_set1_epi32(10), a10 = _mm512_set1_epi32(11), a11 = _mm512_set1_epi32(12);
	/* the accumulator is the chain: vpdpbusd's latency and throughput, as
	 * in the kernel, where each accumulator takes one per 64 bytes of K */
#define Z_MAC(x) _mm512_dpbusd_epi32((x), u, w)
	int64_t t0 = opr_now_ns();
	for (int64_t i = 0; i < iters; i++)
		CHAINS12(Z_MAC);
	int64_t t1 = opr_now_ns();
#undef Z_MAC
	__m512i s = SUM12(_mm512_add_epi32);
	sink_i = _mm512_reduce_add_epi32(s);
	return per_ns(iters, t0, t1, 12 * 64 * 2);
}

/* The AVX2 path's kernel on a CPU with AVX-VNNI (ops/kern_avx2_vnni.c):
 * vpdpbusd on ymm, 32 products an instruction into one accumulator. */
__attribute__((target("avx2,avxvnni"))) static double int8_rate_avxvnni(int64_t iters)
{
	const __m256i w = _mm256_set1_epi8(1), u = _mm256_set1_epi8(3);
	__m256i a0 = _mm256_set1_epi32(1), a1 = _mm256_set1_epi32(2), a2 = _mm256_set1_epi32(3);
	__m256i a3 = _mm256_set1_epi32(4), a4 = _mm256_set1_epi32(5), a5 = _mm256_set1_epi32(6);
	__m256i a6 = _mm256_set1_epi32(7), a7 = _mm256_set1_epi32(8), a8 = _mm256_set1_epi32(9);
	__m256i a9 = _mm256_set1_epi32(10), a10 = _mm256_set1_epi32(11), a11 = _mm256_set1_epi32(12);
#define V_MAC(x) _mm256_dpbusd_avx_epi32((x), u, w)
	int64_t t0 = opr_now_ns();
	for (int64_t i = 0; i < iters; i++)
		CHAINS12(V_MAC);
	int64_t t1 = opr_now_ns();
#undef V_MAC
	__m256i s = SUM12(_mm256_add_epi32);
	sink_i = _mm256_extract_epi32(s, 0);
	return per_ns(iters, t0, t1, 12 * 32 * 2);
}

static double int8_rate(int64_t iters)
{
	switch (ops_kfam_isa(OPS_KF_QGEMM)) {
	case OPS_ISA_AVX512:
		return int8_rate_avx512(iters);
	case OPS_ISA_AVX2:
		if (ops_qgemm_avx_vnni())
			return int8_rate_avxvnni(iters);
		return int8_rate_avx2(iters);
	default:
		return int8_rate_scalar(iters);
	}
}

/* GLOBAL read in place: the loads of the chosen path (AVX-512 or AVX2
 * vectors, else 64-bit words) over an array far larger than the last-level
 * cache, four independent sums so that the loop is bound by the loads, not
 * by an add chain; bytes/ns. This is how the one-pass kernels read GLOBAL
 * (the qgemm reads its K tiles of A and B in place; an element-wise launch
 * its input): no copy into SHARED beside each load, which the staged round
 * trip below pays. bytes is a multiple of 256. */
static uint64_t read_scalar(const unsigned char *p, size_t bytes)
{
	const uint64_t *q = (const uint64_t *)(const void *)p;
	uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
	for (size_t i = 0; i < bytes / 8; i += 4) {
		a0 += q[i];
		a1 += q[i + 1];
		a2 += q[i + 2];
		a3 += q[i + 3];
	}
	return a0 + a1 + a2 + a3;
}

__attribute__((target("avx2"))) static uint64_t read_avx2(const unsigned char *p, size_t bytes)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	for (size_t i = 0; i < bytes; i += 128) {
		a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(const void *)(p + i)));
		a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(const void *)(p + i + 32)));
		a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(const void *)(p + i + 64)));
		a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(const void *)(p + i + 96)));
	}
	__m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
	return (uint64_t)_mm256_extract_epi64(s, 0) + (uint64_t)_mm256_extract_epi64(s, 3);
}

__attribute__((target("avx512f"))) static uint64_t read_avx512(const unsigned char *p, size_t bytes)
{
	__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
	for (size_t i = 0; i < bytes; i += 256) {
		a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)(p + i)));
		a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(p + i + 64)));
		a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(p + i + 128)));
		a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(p + i + 192)));
	}
	/* the lanes summed unsigned: _mm512_reduce_add_epi64 adds them as
	 * signed long long, which wraps (undefined) over a 256 MiB array */
	uint64_t lane[8], sum = 0;
	_mm512_storeu_si512((void *)lane,
			    _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
	for (int i = 0; i < 8; i++)
		sum += lane[i];
	return sum;
}

static volatile uint64_t sink_u;

static double read_rate(const unsigned char *p, size_t bytes)
{
	bytes &= ~(size_t)255;
	int64_t t0 = opr_now_ns();
	switch (ops_isa_active()) {
	case OPS_ISA_AVX512:
		sink_u = read_avx512(p, bytes);
		break;
	case OPS_ISA_AVX2:
		sink_u = read_avx2(p, bytes);
		break;
	default:
		sink_u = read_scalar(p, bytes);
		break;
	}
	double ns = (double)(opr_now_ns() - t0);
	return ns > 0 ? (double)bytes / ns : 0;
}

/* A provisional device for the device-level loops: one core, SHARED as
 * large as asked, no other cost. */
static void base_envelope(struct ops_envelope *e, double shared_kib)
{
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "host");
	snprintf(e->power_mode, sizeof e->power_mode, "nominal");
	e->clock_ghz = 1;
	e->clock_scale = 1;
	e->cores = 1;
	e->global_bw_gbps = 10;
	e->global_capacity_gib = 1;
	e->shared_capacity_kib = shared_kib;
	e->shared_bw_gbps = 100;
	e->local_capacity_kib = 32;
	e->dma_max_last_dim = 65535;
	e->dma_setup_ns = 0;
	e->dma_engines = 1;
	e->dma_serial = 1; /* ops_dma copies on the calling thread */
	for (int t = 0; t < OPS_NDTYPES; t++)
		e->tops[t] = 1;
	e->launch_overhead_us = 0;
}

/* Launch cost: ns of ops_launch_begin + ops_tile_begin + ops_launch_end with
 * an empty body on a real device, per launch over a batch of n. */
static int launch_cost(struct ops_device *dev, int n, double *ns, struct opr_error *err)
{
	ops_device_reset(dev);
	int64_t t0 = opr_now_ns();
	for (int i = 0; i < n; i++) {
		int rc = ops_launch_begin(dev, "calibrate", 0, err);
		if (rc)
			return rc;
		ops_tile_begin(dev, 0);
		if ((rc = ops_launch_end(dev, err)))
			return rc;
	}
	*ns = (double)(opr_now_ns() - t0) / n;
	ops_device_reset(dev);
	return 0;
}

/* DMA setup: per-transfer time of ops_dma GLOBAL -> SHARED for small
 * contiguous transfers of several sizes, regressed on bytes by least squares
 * (t = setup + bytes / bw): the intercept is the per-descriptor cost. */
/* A timed launch that failed part-way: close it (its own error is
 * secondary to rc) so the device is usable for the next measurement. */
static int abandon(struct ops_device *dev, int rc)
{
	struct opr_error ignored;
	ops_launch_end(dev, &ignored);
	ops_device_reset(dev);
	return rc;
}

/* The device-level loops time one launch with one tile on a clean device:
 * timed_begin opens it, timed_end closes it and clears the counters again. */
static int timed_begin(struct ops_device *dev, const char *name, struct opr_error *err)
{
	ops_device_reset(dev);
	int rc = ops_launch_begin(dev, name, 0, err);
	if (!rc)
		ops_tile_begin(dev, 0);
	return rc;
}

static int timed_end(struct ops_device *dev, struct opr_error *err)
{
	int rc = ops_launch_end(dev, err);
	if (!rc)
		ops_device_reset(dev);
	return rc;
}

static const int DMA_SIZES[] = {64, 256, 1024, 2048, 4096};
#define NDMA_SIZES (int)(sizeof DMA_SIZES / sizeof DMA_SIZES[0])

static int dma_setup(struct ops_device *dev, unsigned char *g, unsigned char *s, int reps,
		     double *setup, struct opr_error *err)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, first = 0;
	int rc = timed_begin(dev, "calibrate-dma", err);
	if (rc)
		return rc;
	for (int k = 0; k < NDMA_SIZES; k++) {
		/* a strided copy: 4 rows of the source, every other row */
		const int64_t cols = DMA_SIZES[k] / 16;
		struct ops_dma_desc d = {2, {4, cols}, {2 * cols, 1}, {cols, 1}, 4};
		int64_t t0 = opr_now_ns();
		for (int i = 0; i < reps; i++) {
			size_t off = (size_t)(i & 63) * 4096;
			if ((rc = ops_dma(dev, OPS_SHARED, s, OPS_GLOBAL, g + off, &d, err)))
				return abandon(dev, rc);
		}
		double y = (double)(opr_now_ns() - t0) / reps, x = DMA_SIZES[k];
		if (!k)
			first = y;
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	if ((rc = timed_end(dev, err)))
		return rc;
	double n = NDMA_SIZES, den = n * sxx - sx * sx;
	double slope = den != 0 ? (n * sxy - sx * sy) / den : 0;
	double icpt = (sy - slope * sx) / n;
	/* a non-positive intercept (noise on a tiny setup) falls back to the
	 * smallest transfer's whole time, an upper bound of the setup */
	*setup = icpt > 0 ? icpt : first;
	return 0;
}

/* GLOBAL: ops_dma round trips of 64 KiB chunks through a SHARED buffer over
 * arrays far larger than the last-level cache, GLOBAL -> SHARED -> GLOBAL.
 * The device model counts both directions as GLOBAL bytes, so bw = 2 x
 * array bytes / time. */
static int global_bw(struct ops_device *dev, unsigned char *src, unsigned char *dst, size_t bytes,
		     unsigned char *buf, double *gbps, struct opr_error *err)
{
	const int64_t chunk = 65536;
	struct ops_dma_desc d = {2, {2, chunk / 2}, {chunk / 2, 1}, {chunk / 2, 1}, 1};
	int rc = timed_begin(dev, "calibrate-global", err);
	if (rc)
		return rc;
	int64_t t0 = opr_now_ns();
	for (size_t off = 0; off + (size_t)chunk <= bytes; off += (size_t)chunk) {
		if ((rc = ops_dma(dev, OPS_SHARED, buf, OPS_GLOBAL, src + off, &d, err)) ||
		    (rc = ops_dma(dev, OPS_GLOBAL, dst + off, OPS_SHARED, buf, &d, err)))
			return abandon(dev, rc);
	}
	double ns = (double)(opr_now_ns() - t0);
	if ((rc = timed_end(dev, err)))
		return rc;
	*gbps = ns > 0 ? 2.0 * (double)bytes / ns : 0;
	return 0;
}

/* SHARED: ops_dma SHARED -> SHARED copies between two halves of a buffer of
 * about half the cache level that plays SHARED; each byte is read and written
 * in SHARED (2 x bytes, as the model counts it). */
static int shared_bw(struct ops_device *dev, unsigned char *a, unsigned char *b, size_t half,
		     int reps, double *gbps, struct opr_error *err)
{
	struct ops_dma_desc d = {2, {(int64_t)(half / 32768), 32768}, {32768, 1}, {32768, 1}, 1};
	int rc = timed_begin(dev, "calibrate-shared", err);
	if (rc)
		return rc;
	int64_t t0 = opr_now_ns();
	for (int i = 0; i < reps; i++)
		if ((rc = ops_dma(dev, OPS_SHARED, (i & 1) ? a : b, OPS_SHARED, (i & 1) ? b : a, &d, err)))
			return abandon(dev, rc);
	double ns = (double)(opr_now_ns() - t0);
	if ((rc = timed_end(dev, err)))
		return rc;
	*gbps = ns > 0 ? 2.0 * (double)(half / 32768 * 32768) * reps / ns : 0;
	return 0;
}

/* The kernels' sustained in-cache rates: the project's own operators, run
 * for real on a device with the envelope measured so far, on workloads that
 * stay in L2 (the kernel's in-core time, as ECM takes it from in-L1 loops).
 * The launch overhead and DMA setup of each launch are subtracted from the
 * measured time; the transfer terms are not, since the workloads' copies run
 * at cache speed, not at the DRAM bandwidth G is priced at (subtracting G
 * overstated the rates 1.5x). The model adds the transfer phase back for
 * data that streams from GLOBAL:
 *   rate = reps (2 MACs + element ops) / (T_measured - reps sum_launches (overhead + D))
 * (at least half of T_measured is left to compute, so noise cannot make the
 * rate absurd).
 * The kernels are timed in interleaved rounds (a new rotation each round),
 * each sample repeating its kernel for at least KERN_SAMPLE_NS, until every
 * kernel has min_samples samples and the rounds span span_ns: on a shared
 * VM the kernels' speed shifted by up to 40% between back-to-back calibrations
 * (a state that lasts seconds), so each median must span as much of that as
 * the others, and the spread says how much there is. */
#define KERN_MAX 5
#define KERN_MAX_SAMPLES 64
#define KERN_SAMPLE_NS 20000000LL
struct kern_cal {
	struct ops_workload w;
	struct ops_instance *inst;
	struct ops_device *dev;
	int reps;                  /* runs per sample */
	int retried;               /* samples taken again (descheduled) */
	double x[KERN_MAX_SAMPLES]; /* ops/ns */
	int n;
};

static int kern_prepare(const struct ops_envelope *env, struct kern_cal *k,
			struct opr_error *err)
{
	struct ops_plan plan;
	int fell;
	char why[160];
	int rc = ops_plan_resolve(env, &k->w, NULL, 0, &plan, &fell, why, sizeof why, err);
	if (!rc)
		rc = ops_instance_new(&k->w, &plan, 7, "calibrate", &k->inst, err);
	if (!rc)
		rc = ops_device_new(env, 0, &k->dev, err);
	int64_t t0 = opr_now_ns();
	for (int i = 0; !rc && i < 2; i++) /* warm-up, and the time of one run */
		rc = ops_instance_run_timed(k->dev, k->inst, err);
	int64_t one = (opr_now_ns() - t0) / 2;
	k->reps = one > 0 && one < KERN_SAMPLE_NS ? (int)(KERN_SAMPLE_NS / one) + 1 : 1;
	return rc;
}

static int kern_sample(struct kern_cal *k, struct opr_error *err)
{
	double ops = 0, other = 0, t = 0;
	int rc = 0;
	for (int tries = 0; tries < RETRIES; tries++) {
		int64_t t0 = opr_now_ns(), c0 = thread_cpu_ns();
		for (int r = 0; !rc && r < k->reps; r++) {
			ops_device_reset(k->dev);
			rc = ops_instance_run_timed(k->dev, k->inst, err);
		}
		t = (double)(opr_now_ns() - t0);
		if (rc)
			return rc;
		if (c0 < 0 || (double)(thread_cpu_ns() - c0) >= RUN_SHARE * t)
			break;
		k->retried++;
	}
	/* every run is the same: the counters and launches of the last one */
	const struct ops_counters *c = ops_device_counters(k->dev);
	ops = (double)c->elem_ops;
	for (int d = 0; d < OPS_NDTYPES; d++)
		ops += 2.0 * (double)c->macs[d];
	size_t nl;
	const struct ops_launch_rec *l = ops_device_launches(k->dev, &nl);
	for (size_t i = 0; i < nl; i++)
		other += l[i].overhead_ns + l[i].dma_ns;
	ops *= k->reps;
	other *= k->reps;
	double comp = t - other > 0.5 * t ? t - other : 0.5 * t;
	if (k->n < KERN_MAX_SAMPLES)
		k->x[k->n++] = comp > 0 ? ops / comp : 0;
	return 0;
}

static int kernel_rates(const struct ops_envelope *env, struct kern_cal *k, int nk,
			int min_samples, int64_t span_ns, struct opr_error *err)
{
	int rc = 0;
	for (int i = 0; !rc && i < nk; i++)
		rc = kern_prepare(env, &k[i], err);
	int64_t start = opr_now_ns();
	for (int round = 0; !rc && round < KERN_MAX_SAMPLES; round++) {
		if (round >= min_samples && opr_now_ns() - start >= span_ns)
			break;
		for (int j = 0; !rc && j < nk; j++)
			rc = kern_sample(&k[(j + round) % nk], err);
	}
	for (int i = 0; i < nk; i++) {
		ops_device_free(k[i].dev);
		ops_instance_free(k[i].inst);
		k[i].dev = NULL;
		k[i].inst = NULL;
	}
	return rc;
}

static void conv_workload(struct ops_workload *w, enum ops_dtype t)
{
	memset(w, 0, sizeof *w);
	w->group = OPS_G_CONV;
	w->act = OPS_ACT_NONE;
	w->dtype = t;
	struct ops_conv_shape c = {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1};
	w->conv = c;
}

/* SiLU over 8 x 4096 elements of t (in L2): the vectorised exp path of the
 * activations, the element-wise rate the fused epilogues also run at; on
 * fp16/bf16 data with the widening and narrowing around it. */
static void vector_workload(struct ops_workload *w, enum ops_dtype t)
{
	memset(w, 0, sizeof *w);
	w->group = OPS_G_ACTIVATION;
	w->act = OPS_ACT_SILU;
	w->dtype = t;
	w->tensor.rank = 2;
	w->tensor.dims[0] = 8;
	w->tensor.dims[1] = 4096;
}

static void qgemm_workload(struct ops_workload *w, int64_t k)
{
	memset(w, 0, sizeof *w);
	w->group = OPS_G_QGEMM;
	w->act = OPS_ACT_NONE;
	w->dtype = OPS_S8;
	w->gemm.m = 8;
	w->gemm.n = 64;
	w->gemm.k = k;
	w->quant.a = OPS_U8;
	w->quant.a_zero_point = 3;
	w->quant.a_scale = 0.02f;
	w->quant.b_per_channel = 1;
	w->quant.out = OPS_F32;
}

static void utc_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- the measurements, in the order they are taken ------------------------------ */

/* What the host measurements share: the device they run on, the arrays they
 * move and the mode (quick: fewer repetitions and smaller arrays). */
struct host_rig {
	struct ops_device *dev;
	unsigned char *src, *dst, *buf;
	size_t gbytes; /* each of src and dst */
	size_t half;   /* each of the two SHARED buffers in buf */
	int quick;
	double trip[MAX_SAMPLES]; /* the round trip's samples, GB/s, for the write rate */
	int ntrip;
	double rd[MAX_SAMPLES];   /* the read stream's, in the same rounds */
	int retried;              /* samples taken again (descheduled) */
};

static int s_launch(struct host_rig *r, double *x, struct opr_error *err)
{
	return launch_cost(r->dev, r->quick ? 2000 : 10000, x, err);
}

static int s_dma(struct host_rig *r, double *x, struct opr_error *err)
{
	return dma_setup(r->dev, r->src, r->buf, r->quick ? 2000 : 8000, x, err);
}

static int s_global(struct host_rig *r, double *x, struct opr_error *err)
{
	return global_bw(r->dev, r->src, r->dst, r->gbytes, r->buf, x, err);
}

static int s_read(struct host_rig *r, double *x, struct opr_error *err)
{
	(void)err;
	*x = read_rate(r->src, r->gbytes);
	return 0;
}

static int s_shared(struct host_rig *r, double *x, struct opr_error *err)
{
	return shared_bw(r->dev, r->buf, r->buf + r->half, r->half, r->quick ? 100 : 400, x, err);
}

static int s_fma(struct host_rig *r, double *x, struct opr_error *err)
{
	(void)err;
	*x = fma_rate(r->quick ? 300000 : 3000000) / 1000.0;
	return 0;
}

static int s_int8_peak(struct host_rig *r, double *x, struct opr_error *err)
{
	(void)err;
	*x = int8_rate(r->quick ? 300000 : 3000000) / 1000.0;
	return 0;
}

static void set_launch(struct ops_envelope *e, double v)
{
	e->launch_overhead_us = v;
}

static void set_dma(struct ops_envelope *e, double v)
{
	e->dma_setup_ns = v;
}

static void set_global(struct ops_envelope *e, double v)
{
	e->global_bw_gbps = v;
}

static void set_read(struct ops_envelope *e, double v)
{
	e->global_read_bw_gbps = v;
}

static void set_shared(struct ops_envelope *e, double v)
{
	e->shared_bw_gbps = v;
}

static void set_fp32(struct ops_envelope *e, double v)
{
	e->tops[OPS_F32] = v;
}

/* The host's measurements, as kern[] below is the kernels': each value is the
 * median of its samples, divided by div (launch cost is timed in ns and kept
 * in us), recorded with its method and set in the envelope by apply (NULL:
 * recorded only). */
static const struct host_meas {
	const char *key;
	int (*sample)(struct host_rig *r, double *x, struct opr_error *err);
	double div;
	const char *method, *method_quick; /* method_quick NULL: method */
	void (*apply)(struct ops_envelope *e, double v);
	int rounds; /* 1: sampled in rounds with its neighbours marked so (one
		     * sample of each per round), so that they see the same
		     * drift of a shared host: the GLOBAL streams, whose write
		     * rate pairs a round trip with the read of its round */
} HOST_MEAS[] = {
	{"launch_overhead_us", s_launch, 1000.0,
	 "ops_launch_begin + ops_tile_begin + ops_launch_end, empty body, real device", NULL, set_launch, 0},
	{"dma_setup_ns", s_dma, 1,
	 "strided ops_dma GLOBAL->SHARED (4 rows, every other source row) of 64..4096 "
	 "bytes, intercept of time vs bytes", NULL, set_dma, 0},
	{"global_bandwidth_gbps", s_global, 1,
	 "ops_dma GLOBAL->SHARED->GLOBAL over 256 MiB arrays, 64 KiB chunks",
	 "ops_dma GLOBAL->SHARED->GLOBAL over 64 MiB arrays, 64 KiB chunks", set_global, 1},
	/* what the one-pass kernels' reads in place cost (the write rate
	 * follows from it and the round trip: host_write_rate) */
	{"global_read_gbps", s_read, 1,
	 "loads of the kernel path over a 256 MiB array in place (4 independent sums), as "
	 "the one-pass kernels read GLOBAL",
	 "loads of the kernel path over a 64 MiB array in place (4 independent sums), as "
	 "the one-pass kernels read GLOBAL", set_read, 1},
	/* two buffers of a quarter of the capacity each */
	{"shared_bandwidth_gbps", s_shared, 1,
	 "ops_dma SHARED->SHARED between two quarter-capacity buffers (half the L2)", NULL, set_shared, 0},
	{"fp32_tops", s_fma, 1,
	 "12 independent FMA chains in registers at the active path's width (16 lanes on "
	 "AVX-512, 8 on AVX2, 1 on the portable path): the FMA peak", NULL, set_fp32, 0},
	/* the exact int8 dot-product peak: recorded beside the qgemm kernel's
	 * sustained rate, which is what the envelope's int8 carries (the model
	 * prices a kernel, not an instruction) */
	{"int8_peak_tops", s_int8_peak, 1,
	 "12 independent chains in registers of the qgemm path's dot product (vpdpbusd "
	 "on AVX512-VNNI or on AVX-VNNI's ymm, vpmaddwd on AVX2, integer MACs otherwise): "
	 "the exact int8 "
	 "peak; not used by the model", NULL, NULL, 0},
};
#define NHOST_MEAS (int)(sizeof HOST_MEAS / sizeof HOST_MEAS[0])

/* Takes the host measurements in order: each one sees the envelope the
 * ones before it set. */
static int host_values(struct host_rig *r, int ns, struct ops_envelope *env, struct col_calibration *cal,
		       struct opr_error *err)
{
	double x[NHOST_MEAS][MAX_SAMPLES];
	for (int m = 0; m < NHOST_MEAS;) {
		/* m alone, or m and the neighbours sampled in rounds with it */
		int end = m + 1, rc = 0;
		while (HOST_MEAS[m].rounds && end < NHOST_MEAS && HOST_MEAS[end].rounds)
			end++;
		for (int s = 0; !rc && s < ns; s++)
			for (int j = m; !rc && j < end; j++)
				for (int k = 0; k < RETRIES; k++) {
					int64_t w0 = opr_now_ns(), c0 = thread_cpu_ns();
					if ((rc = HOST_MEAS[j].sample(r, &x[j][s], err)))
						break;
					int64_t w = opr_now_ns() - w0, c = thread_cpu_ns() - c0;
					if (c0 < 0 || (double)c >= RUN_SHARE * (double)w)
						break;
					r->retried++;
				}
		if (rc)
			return rc;
		for (; m < end; m++) {
			const struct host_meas *h = &HOST_MEAS[m];
			/* the rounds' pairs, before the sort */
			if (!strcmp(h->key, "global_read_gbps"))
				memcpy(r->rd, x[m], sizeof r->rd);
			if (!strcmp(h->key, "global_bandwidth_gbps")) {
				memcpy(r->trip, x[m], sizeof r->trip);
				r->ntrip = ns;
			}
			col_cal_record(cal, h->key, x[m], ns,
				       r->quick && h->method_quick ? h->method_quick : h->method);
			double v = cal->v[cal->nv - 1].median / h->div;
			if (h->apply)
				h->apply(env, v);
			if (h->div != 1)
				cal->v[cal->nv - 1].median /= h->div;
		}
	}
	return 0;
}

/* The cost of a byte written to GLOBAL: what a staged round trip (a byte
 * read and a byte written, T) costs beyond its read at the in-place read
 * rate R:  1/W = 2/T - 1/R,  one value per round, each round trip with the
 * read of its own round (a drift of the host's memory bandwidth falls on
 * both: a round trip measured alone at 5.7 GB/s beside a read at 12.8 gave
 * a write rate of 3.8, 0.6x the others that day). So the round
 * trips the permutes and the staged kernels make cost what they were
 * measured to cost, and a
 * launch that mostly reads, the qgemm streaming B, costs its reads at R.
 * Not a write-only stream: priced from a read stream and a write-only
 * ops_dma stream (8.3 GB/s), the round trip came out 14% faster than it
 * measured, and a write stream sampled in the rounds left 64-256 MiB of
 * dirty lines for the next round trip to write back (it fell to 6.2 GB/s,
 * spread 0.67).
 * A round whose read came out at or below half its round trip (the read
 * alone contended) gives no write sample; with none left, W stays unset
 * (the round trip's rate). */
static void host_write_rate(struct host_rig *r, struct ops_envelope *env, struct col_calibration *cal)
{
	double x[MAX_SAMPLES];
	int n = 0;
	for (int i = 0; i < r->ntrip; i++) {
		double inv = 2.0 / r->trip[i] - 1.0 / r->rd[i];
		if (r->rd[i] > 0 && inv > 0)
			x[n++] = 1.0 / inv;
	}
	if (!n)
		return;
	col_cal_record(cal, "global_write_gbps", x, n,
		       r->quick ? "1 / (2 / round trip - 1 / read) per round, round trip and read "
				  "(64 MiB) of the same round: the cost of a written byte beyond the staged copy's read"
				: "1 / (2 / round trip - 1 / read) per round, round trip and read "
				  "(256 MiB) of the same round: the cost of a written byte beyond the staged copy's read");
	env->global_write_bw_gbps = cal->v[cal->nv - 1].median;
}

/* The kernels' sustained rates, with the memory terms measured before, all
 * on the provisional envelope (every rate the fp32 peak), then set in it. */
static int kernel_values(int ns, int quick, struct ops_envelope *env, struct col_calibration *cal,
			 struct opr_error *err)
{
	static const struct {
		const char *key, *method;
	} kern[KERN_MAX] = {
		/* 56 x 56: at 28 x 28 the launch's one-time layout work (the
		 * input padded, the same weights laid out for a quarter of the
		 * pixels) took a larger share, and the rate came out 12% below a
		 * 56 x 56 launch's (fp16 0.131 against 0.147 TOPS here) */
		{"fp16_tops", "conv2d fp16 64x56x56 k64 3x3 (F16C conversion + FMA "
			      "microkernel), launch overhead and DMA setup subtracted"},
		{"bf16_tops", "conv2d bf16 64x56x56 k64 3x3 (the path's bf16 conv: AMX "
			      "tdpbf16ps where the CPU has AMX-BF16, else bf16 conversion + FMA "
			      "microkernel), launch overhead and DMA setup subtracted"},
		{"int8_tops", "qgemm u8 x s8 8x64x4096 in L2 (the path's kernel: vpdpbusd on B "
			      "packed once where the CPU has AVX512-VNNI, else widen + madd_epi16; "
			      "exact int32), launch overhead and DMA setup subtracted"},
		/* element-wise ops: one SiLU per element, vs one FMA lane for the
		 * MAC rates (activations cost several FMAs' worth each) */
		{"vector_tops", "activation silu fp32 8x4096 in L2 (vectorised exp), launch "
				"overhead and DMA setup subtracted"},
		{"vector_half_tops", "activation silu bf16 8x4096 in L2 (widen, vectorised exp, "
				     "narrow), launch overhead and DMA setup subtracted"},
	};
	struct kern_cal *kc = calloc(KERN_MAX, sizeof *kc);
	if (!kc)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for the kernel calibration");
	conv_workload(&kc[0].w, OPS_F16);
	conv_workload(&kc[1].w, OPS_BF16);
	qgemm_workload(&kc[2].w, 4096); /* B is 256 KiB: in L2 */
	vector_workload(&kc[3].w, OPS_F32);
	vector_workload(&kc[4].w, OPS_BF16);
	for (int t = 0; t < OPS_NDTYPES; t++)
		if (t != OPS_F32)
			env->tops[t] = env->tops[OPS_F32]; /* provisional */
	env->vector_tops = env->vector_half_tops = env->tops[OPS_F32];
	int rc = kernel_rates(env, kc, KERN_MAX, ns, quick ? 1000000000LL : 4000000000LL, err);
	for (int i = 0; i < KERN_MAX; i++)
		cal->retried += kc[i].retried;
	for (int i = 0; !rc && i < KERN_MAX; i++) {
		for (int s = 0; s < kc[i].n; s++)
			kc[i].x[s] /= 1000.0;
		col_cal_record(cal, kern[i].key, kc[i].x, kc[i].n, kern[i].method);
	}
	free(kc);
	if (rc)
		return rc;
	/* the provisional copies above are replaced by the measured values */
	double i8 = 0;
	if ((rc = measured(cal, "fp16_tops", &env->tops[OPS_F16], err)) ||
	    (rc = measured(cal, "bf16_tops", &env->tops[OPS_BF16], err)) ||
	    (rc = measured(cal, "int8_tops", &i8, err)) ||
	    (rc = measured(cal, "vector_tops", &env->vector_tops, err)) ||
	    (rc = measured(cal, "vector_half_tops", &env->vector_half_tops, err)))
		return rc;
	env->tops[OPS_S8] = env->tops[OPS_U8] = env->tops[OPS_S32] = i8;
	return 0;
}

/* The host's facts and the provisional envelope the measurements start from. */
static void host_start(const struct col_cal_options *o, struct ops_envelope *env, struct col_calibration *cal,
		       struct col_host *host)
{
	memset(cal, 0, sizeof *cal);
	col_host_detect(host);
	snprintf(cal->host, sizeof cal->host, "%s", host->hostname[0] ? host->hostname : "unknown");
	snprintf(cal->cpu, sizeof cal->cpu, "%s", host->cpu_model);
	utc_now(cal->date, sizeof cal->date);
	cal->cpus_online = host->cpus_online > 0 ? host->cpus_online : 1;
	/* every loop below runs the chosen path's kernels: the envelope says which */
	snprintf(cal->kernel_isa, sizeof cal->kernel_isa, "%s", ops_isa_name(ops_isa_active()));

	/* SHARED plays the private L2 (a tile buffer reused across a launch
	 * lives there; L1d is too small for the tiles the planner forms);
	 * LOCAL the L1d. Fallbacks when sysfs is silent: 256 and 32 KiB. */
	double l2 = cache_kib(2), l1 = cache_kib(1);
	base_envelope(env, l2 > 0 ? l2 : 256);
	snprintf(env->name, sizeof env->name, "%s", o && o->name ? o->name : "host");
	env->local_capacity_kib = l1 > 0 ? l1 : 32;
	env->clock_ghz = clock_ghz();
	env->global_capacity_gib = host->mem_total_bytes ? (double)host->mem_total_bytes / 1073741824.0 : 1;
}

/* The model's compute term of the device's last run: its launches' sum. */
static double one_pass_compute(struct ops_device *dev)
{
	size_t nl;
	const struct ops_launch_rec *l = ops_device_launches(dev, &nl);
	double comp = 0;
	for (size_t i = 0; i < nl; i++)
		comp += l[i].compute_ns;
	return comp;
}

/* One sample of the qgemm's one-pass share: the read rate of the GLOBAL
 * array in place, then one run of inst, taken again where another process
 * had the CPU. *x gets the model's G at that rate over the run's time less
 * its launch cost and DMA setup; *got is 0 where the run says nothing about
 * streaming (not one-pass, or its compute term over 0.8 of it). */
static int share_sample(struct host_rig *r, struct ops_device *dev, struct ops_instance *inst,
			double *x, int *got, struct opr_error *err)
{
	int64_t t = 0;
	double rd = 0;
	int rc = 0;

	for (int k = 0; k < RETRIES; k++) {
		rd = read_rate(r->src, r->gbytes);
		ops_device_reset(dev);
		int64_t w0 = opr_now_ns(), c0 = thread_cpu_ns();
		if ((rc = ops_instance_run_timed(dev, inst, err)))
			return rc;
		t = opr_now_ns() - w0;
		if (c0 < 0 || (double)(thread_cpu_ns() - c0) >= RUN_SHARE * (double)t)
			break;
		r->retried++;
	}
	const struct ops_counters *cn = ops_device_counters(dev);
	uint64_t read = 0;
	for (int d = 0; d < OPS_NSPACES; d++)
		read += cn->bytes[OPS_GLOBAL][d];
	size_t nl;
	const struct ops_launch_rec *l = ops_device_launches(dev, &nl);
	double body = (double)t;
	int one_pass = 0;
	for (size_t i = 0; i < nl; i++) {
		body -= l[i].overhead_ns + l[i].dma_ns;
		one_pass |= l[i].one_pass;
	}
	*got = one_pass && rd > 0 && body > 0 && one_pass_compute(dev) <= 0.8 * body;
	if (*got)
		*x = (double)read / rd / body;
	return 0;
}

/* The share of the plain read's rate at which the one-pass qgemm streams its
 * GLOBAL reads (ops.h, one_pass_share; ops/model.c prices a one-pass qgemm
 * launch's G at G / share), the median of ns samples (share_sample). The
 * read before each run moves B out of the caches the way the rest of a
 * review's work does. The shape is the calibration's qgemm (m = 8, n = 64)
 * with B of 64 MiB (32 quick), far beyond L2. Only a stream-bound run says
 * anything about streaming: on a path whose runs are compute-bound (no
 * VNNI) nothing is recorded and the share stays 1. */
static int qgemm_one_pass_share(struct host_rig *r, int ns, struct ops_envelope *env,
				struct col_calibration *cal, struct opr_error *err)
{
	struct ops_workload w;
	struct ops_plan plan;
	struct ops_instance *inst = NULL;
	struct ops_device *dev = NULL;
	double x[MAX_SAMPLES];
	int fell, n = 0, rc;
	char why[160];

	qgemm_workload(&w, (int64_t)1 << (r->quick ? 19 : 20));
	rc = ops_plan_resolve(env, &w, NULL, 0, &plan, &fell, why, sizeof why, err);
	if (!rc)
		rc = ops_instance_new(&w, &plan, 7, "calibrate", &inst, err);
	if (!rc)
		rc = ops_device_new(env, 0, &dev, err);
	const int64_t first = opr_now_ns();
	if (!rc) /* B packed, and the pages touched */
		rc = ops_instance_run_timed(dev, inst, err);
	/* a compute-bound path is so from its first run on, whose time (the
	 * packing included) is only longer: no samples then (an emulated CPU
	 * took seconds over them) */
	const int stream_bound =
		!rc && one_pass_compute(dev) <= 0.8 * (double)(opr_now_ns() - first);
	for (int s = 0; !rc && stream_bound && s < ns; s++) {
		int got = 0;
		rc = share_sample(r, dev, inst, &x[n], &got, err);
		n += got;
	}
	ops_device_free(dev);
	ops_instance_free(inst);
	if (rc || n < (ns + 1) / 2)
		return rc;
	col_cal_record(cal, "qgemm_one_pass_share", x, n,
		       r->quick ? "GLOBAL reads of a one-pass qgemm 8x64x2^19 (B 32 MiB) at the read rate "
				  "of the 64 MiB array just before it, over its time less launch and DMA setup"
				: "GLOBAL reads of a one-pass qgemm 8x64x2^20 (B 64 MiB) at the read rate "
				  "of the 256 MiB array just before it, over its time less launch and DMA setup");
	const double v = cal->v[cal->nv - 1].median;
	env->one_pass_share[OPS_KC_QGEMM] = v < 1.0 ? v : 1.0;
	return 0;
}

int col_calibrate(const struct col_cal_options *o, struct ops_envelope *env,
		  struct col_calibration *cal, struct opr_error *err)
{
	const int quick = o && o->quick;
	const int ns = quick ? 5 : 11; /* samples per value */
	struct host_rig r = {.quick = quick, .gbytes = (size_t)(quick ? 64 : 256) << 20};
	struct col_host host;
	int rc = 0;

	host_start(o, env, cal, &host);
	struct ops_envelope big = *env; /* room for the calibration buffers */
	big.shared_capacity_kib = 1024 * 1024;
	if ((rc = ops_device_new(&big, 0, &r.dev, err)))
		return rc;
	/* GLOBAL arrays in the pages tensors get (ops_host_alloc) */
	r.src = ops_host_alloc(r.gbytes);
	r.dst = ops_host_alloc(r.gbytes);
	if (!r.src || !r.dst || posix_memalign((void **)&r.buf, 64, 1 << 20)) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for %zu MiB calibration arrays",
				   r.gbytes >> 20);
		goto out;
	}
	memset(r.src, 0x5a, r.gbytes); /* first touch: page faults stay out of the timing */
	memset(r.dst, 0xa5, r.gbytes);
	memset(r.buf, 0x3c, 1 << 20);
	r.half = (size_t)(env->shared_capacity_kib * 1024 / 4);
	if (r.half < 32768)
		r.half = 32768;
	if (r.half > (1u << 19))
		r.half = 1u << 19;

	rc = host_values(&r, ns, env, cal, err);
	cal->retried += r.retried;
	if (rc)
		goto out;
	host_write_rate(&r, env, cal);
	if ((rc = kernel_values(ns, quick, env, cal, err)) ||
	    (rc = qgemm_one_pass_share(&r, ns, env, cal, err)))
		goto out;
	cal->present = 1;
	for (int i = 0; i < cal->nv && !rc; i++)
		if (!(cal->v[i].median > 0) || !isfinite(cal->v[i].median))
			rc = opr_error_set(err, OPR_EINTERNAL, "calibration of '%s' gave %g",
					   cal->v[i].key, cal->v[i].median);
out:
	ops_device_free(r.dev);
	free(r.src);
	free(r.dst);
	free(r.buf);
	return rc;
}

/* ---- the envelope file --------------------------------------------------------- */

/* A YAML double-quoted scalar body: quotes and backslashes escaped, control
 * characters dropped. */
static void quoted(struct opr_buf *b, const char *s)
{
	opr_buf_printf(b, "\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			opr_buf_printf(b, "\\%c", *s);
		else if ((unsigned char)*s >= 0x20)
			opr_buf_printf(b, "%c", *s);
	}
	opr_buf_printf(b, "\"");
}

static void values_yaml(struct opr_buf *b, const struct col_calibration *cal)
{
	for (int i = 0; i < cal->nv; i++) {
		const struct col_cal_value *v = &cal->v[i];
		opr_buf_printf(b, "    %s: {median: %.6g, spread: %.4f, samples: %lld,\n      method: ", v->key,
		    v->median, v->spread, (long long)v->samples);
		quoted(b, v->method);
		opr_buf_printf(b, "}\n");
	}
}

/* A GPU's envelope (calibrate --device cuda): the model's terms as the GPU
 * backend maps them (ops/cuda/cuda.h). */
static int gpu_yaml(const struct ops_envelope *e, const struct col_calibration *cal, char **text,
		    struct opr_error *err)
{
	struct opr_buf b = {0};
	opr_buf_printf(&b, "# %s: a GPU measured by `opreview calibrate --device cuda` (%s).\n", e->name,
	    cal->date);
	opr_buf_printf(&b, "# cores are the SMs, SHARED a block's shared memory (capacity from the\n"
		"# device), LOCAL the registers, GLOBAL the HBM; each value is the median of\n"
		"# the samples under calibration.values, spread = interquartile range / median.\n"
		"# The L2 is not a level of the model: GLOBAL is the HBM rate with the L2\n"
		"# flushed (as every timed sample is); l2_bandwidth_gbps is recorded beside it.\n");
	opr_buf_printf(&b, "name: %s\npower_mode: nominal\nclock_ghz: %.4g\ncores: %d\n", e->name, e->clock_ghz,
	    e->cores);
	opr_buf_printf(&b, "global: {bandwidth_gbps: %.6g, capacity_gib: %.4g}   # HBM, read + written bytes\n",
	    e->global_bw_gbps, e->global_capacity_gib);
	opr_buf_printf(&b, "shared: {capacity_kib: %.6g, bandwidth_gbps: %.6g}   # shared memory per SM\n",
	    e->shared_capacity_kib, e->shared_bw_gbps);
	opr_buf_printf(&b, "local:  {capacity_kib: %.6g}                          # registers per SM\n",
	    e->local_capacity_kib);
	opr_buf_printf(&b, "# setup_ns: one HBM load's latency; engines: the transfers an SM keeps in\n"
		"# flight (64 warps), over which that latency is spread; no last-dimension limit\n");
	opr_buf_printf(&b, "dma:    {max_last_dim: %lld, setup_ns: %.6g, engines: %d}\n",
	    (long long)e->dma_max_last_dim, e->dma_setup_ns, e->dma_engines);
	opr_buf_printf(&b, "# fp32: FFMA; fp16/bf16: mma.sync tensor cores (the conv kernel's); int8: dp4a\n"
		"# (the qgemm kernel's); vector: SiLU elements per second / 1e12\n");
	opr_buf_printf(&b, "compute_tops: {fp32: %.6g, fp16: %.6g, bf16: %.6g, int8: %.6g, vector: %.6g,\n"
		"               vector_half: %.6g}\n",
	    e->tops[OPS_F32], e->tops[OPS_F16], e->tops[OPS_BF16], e->tops[OPS_S8], e->vector_tops,
	    e->vector_half_tops);
	opr_buf_printf(&b, "# launch_first_us: the first launch of a run as the review times it (L2\n"
		"# flushed, an event each side); launch_overhead_us: each further launch\n");
	opr_buf_printf(&b, "launch_overhead_us: %.6g\n", e->launch_overhead_us);
	if (e->launch_first_us > 0)
		opr_buf_printf(&b, "launch_first_us: %.6g\n", e->launch_first_us);
	int nk = 0;
	for (int f = 0; f < OPS_NKCLASSES; f++)
		nk += e->kern[f].efficiency > 0;
	if (nk)
		opr_buf_printf(&b, "# kernels (GPU envelopes only): our own kernels per family, fitted from the\n"
			"# *_a_us / *_b_us times below: efficiency scales the compute, SHARED and\n"
			"# GLOBAL terms of the family's launches (measured body / body at the peaks\n"
			"# above), transfer_ns the exposed cost of each load from GLOBAL\n"
			"# (fixtures/profiles/README.md)\n"
			"kernels:\n");
	for (int f = 0; f < OPS_NKCLASSES; f++)
		if (e->kern[f].efficiency > 0)
			opr_buf_printf(&b, "  %s: {efficiency: %.6g, transfer_ns: %.6g}\n",
			    ops_kernel_class_name((enum ops_kernel_class)f), e->kern[f].efficiency,
			    e->kern[f].transfer_ns);
	opr_buf_printf(&b, "calibration:\n  host: ");
	quoted(&b, cal->host);
	opr_buf_printf(&b, "\n  date: ");
	quoted(&b, cal->date);
	opr_buf_printf(&b, "\n  cpu: ");
	quoted(&b, cal->cpu);
	opr_buf_printf(&b, "\n  cpus_online: %lld\n  device: cuda\n  gpu: ", (long long)cal->cpus_online);
	quoted(&b, cal->gpu);
	opr_buf_printf(&b, "\n  values:\n");
	values_yaml(&b, cal);
	if (!(*text = opr_buf_take(&b)))
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing the envelope");
	return 0;
}

/* one_pass: {FAMILY: share}, where calibrate measured a family's (ops.h) */
static void one_pass_yaml(struct opr_buf *b, const struct ops_envelope *e)
{
	int open = 0;
	for (int f = 0; f < OPS_NKCLASSES; f++) {
		if (!(e->one_pass_share[f] > 0))
			continue;
		if (!open)
			opr_buf_printf(b, "# one_pass: the share of the GLOBAL rates a family's one-pass launch\n"
				       "# streams at (its G is priced at G / share)\n");
		opr_buf_printf(b, "%s%s: %.6g", open ? ", " : "one_pass: {",
			       ops_kernel_class_name((enum ops_kernel_class)f), e->one_pass_share[f]);
		open = 1;
	}
	if (open)
		opr_buf_printf(b, "}\n");
}

int col_calibration_yaml(const struct ops_envelope *e, const struct col_calibration *cal,
			 char **text, struct opr_error *err)
{
	struct opr_buf b = {0};
	if (cal->device == COL_DEV_CUDA)
		return gpu_yaml(e, cal, text, err);
	opr_buf_printf(&b, "# %s: this host measured by `opreview calibrate` (%s).\n", e->name, cal->date);
	opr_buf_printf(&b, "# cores is 1: the host executor runs every tile on one thread; the\n"
		"# machine's CPU count is calibration.cpus_online. SHARED is the private L2\n"
		"# and LOCAL the L1d (sizes from sysfs). Each value is the median of the\n"
		"# samples under calibration.values, spread = interquartile range / median.\n");
	opr_buf_printf(&b, "name: %s\npower_mode: nominal\nclock_ghz: %.4g\ncores: 1\n", e->name, e->clock_ghz);
	opr_buf_printf(&b, "# global.bandwidth_gbps: DRAM round trips through SHARED (read + written\n"
		"# bytes); read_gbps: GLOBAL read in place; write_gbps: a written byte's cost\n"
		"# beyond the round trip's read (the model prices each direction apart)\n");
	opr_buf_printf(&b, "global: {bandwidth_gbps: %.6g", e->global_bw_gbps);
	if (e->global_read_bw_gbps > 0)
		opr_buf_printf(&b, ", read_gbps: %.6g", e->global_read_bw_gbps);
	if (e->global_write_bw_gbps > 0)
		opr_buf_printf(&b, ", write_gbps: %.6g", e->global_write_bw_gbps);
	opr_buf_printf(&b, ", capacity_gib: %.4g}\n", e->global_capacity_gib);
	opr_buf_printf(&b, "shared: {capacity_kib: %.6g, bandwidth_gbps: %.6g}   # L2 per core\n",
	    e->shared_capacity_kib, e->shared_bw_gbps);
	opr_buf_printf(&b, "local:  {capacity_kib: %.6g}                          # L1d per core\n",
	    e->local_capacity_kib);
	opr_buf_printf(&b, "# dma.serial: the copies run on the thread that computes, so double\n"
		"# buffering cannot hide them (the model adds the transfer phase)\n");
	opr_buf_printf(&b, "dma:    {max_last_dim: %lld, setup_ns: %.6g, engines: 1, serial: true}\n",
	    (long long)e->dma_max_last_dim, e->dma_setup_ns);
	opr_buf_printf(&b, "# fp32: FMA peak; fp16/bf16: the conv kernels (fp16 widened, bf16 on AMX where present); int8: qgemm\n");
	opr_buf_printf(&b, "# vector: element-wise ops (activation SiLU) per second / 1e12; vector_half:\n"
		"# the same on fp16/bf16 data, with the conversions\n");
	opr_buf_printf(&b, "compute_tops: {fp32: %.6g, fp16: %.6g, bf16: %.6g, int8: %.6g, vector: %.6g,\n"
		"               vector_half: %.6g}\n",
	    e->tops[OPS_F32], e->tops[OPS_F16], e->tops[OPS_BF16], e->tops[OPS_S8], e->vector_tops,
	    e->vector_half_tops);
	opr_buf_printf(&b, "launch_overhead_us: %.6g\n", e->launch_overhead_us);
	one_pass_yaml(&b, e);
	opr_buf_printf(&b, "calibration:\n  host: ");
	quoted(&b, cal->host);
	opr_buf_printf(&b, "\n  date: ");
	quoted(&b, cal->date);
	opr_buf_printf(&b, "\n  cpu: ");
	quoted(&b, cal->cpu);
	opr_buf_printf(&b, "\n  cpus_online: %lld\n", (long long)cal->cpus_online);
	if (cal->kernel_isa[0])
		opr_buf_printf(&b, "  kernel_isa: %s\n", cal->kernel_isa);
	/* samples in which the thread ran less than 95% of the wall time were
	 * taken again, up to 8 times: how contended the host was */
	opr_buf_printf(&b, "  retried_samples: %lld\n", (long long)cal->retried);
	opr_buf_printf(&b, "  values:\n");
	values_yaml(&b, cal);
	if (!(*text = opr_buf_take(&b)))
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing the envelope");
	return 0;
}

int col_write_atomic(const char *path, const char *text, int force, struct opr_error *err)
{
	struct opr_output o;
	int rc = opr_output_claim(&o, path, OPR_OUT_FILE, NULL, force, err);
	if (!rc)
		rc = opr_output_open(&o, err);
	if (!rc)
		rc = opr_write_file(o.tmp, text, strlen(text), err);
	if (!rc)
		rc = opr_output_publish(&o, err);
	if (rc)
		opr_output_name(&o, err);
	opr_output_release(&o);
	return rc;
}
