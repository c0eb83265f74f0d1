/* tests/test_device.c: dtypes and conversions, the counter-based generator,
 * the device model (buffers, DMA, splits, launches, modelled time), dry runs
 * and the PAPI SDE export. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <papi.h>

#include "../ops/device_int.h"
#include "test_isa.h"

/* 2 cores, round numbers so that model times can be computed by hand. */
static struct ops_envelope test_env(void)
{
	struct ops_envelope e;

	memset(&e, 0, sizeof e);
	snprintf(e.name, sizeof e.name, "test");
	snprintf(e.power_mode, sizeof e.power_mode, "nominal");
	e.clock_ghz = 1.0;
	e.clock_scale = 1.0;
	e.cores = 2;
	e.global_bw_gbps = 100.0;
	e.global_capacity_gib = 1.0;
	e.shared_capacity_kib = 256.0;
	e.shared_bw_gbps = 400.0;
	e.local_capacity_kib = 64.0;
	e.dma_max_last_dim = 65535;
	e.dma_setup_ns = 50.0;
	e.dma_engines = 2;
	e.tops[OPS_F32] = 10.0;
	e.tops[OPS_F16] = 20.0;
	e.tops[OPS_BF16] = 20.0;
	e.tops[OPS_S8] = 40.0;
	e.tops[OPS_U8] = 40.0;
	e.tops[OPS_S32] = 40.0;
	e.launch_overhead_us = 2.0;
	return e;
}

static struct ops_device *new_dev(const struct ops_envelope *e, int dry)
{
	struct ops_device *dev = NULL;
	struct opr_error err = { 0 };

	assert_int_equal(ops_device_new(e, dry, &dev, &err), 0);
	assert_non_null(dev);
	return dev;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static float u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint32_t f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* ---- dtypes, activations, groups ------------------------------------------------ */

static void test_names(void **state)
{
	(void)state;
	enum ops_dtype t;
	enum ops_act a;
	enum ops_group g;

	assert_string_equal(ops_dtype_name(OPS_BF16), "bf16");
	assert_int_equal(ops_dtype_size(OPS_F16), 2);
	assert_int_equal(ops_dtype_size(OPS_S32), 4);
	assert_int_equal(ops_dtype_parse("int8", &t), 0);
	assert_int_equal(t, OPS_S8);
	assert_int_equal(ops_dtype_parse("u8", &t), 0);
	assert_int_equal(t, OPS_U8);
	assert_int_equal(ops_dtype_parse("fp64", &t), OPR_EINPUT);
	assert_int_equal(ops_act_parse("gelu-erf", &a), 0);
	assert_int_equal(a, OPS_ACT_GELU_ERF);
	assert_int_equal(ops_act_parse("gelu-tanh", &a), 0);
	assert_int_equal(a, OPS_ACT_GELU_TANH);
	assert_int_equal(ops_act_parse("swish", &a), OPR_EINPUT);
	assert_string_equal(ops_space_name(OPS_SHARED), "SHARED");
	assert_int_equal(ops_group_parse("permute+activation", &g), 0);
	assert_int_equal(g, OPS_G_PERMUTE_ACT);
	static const int nops[OPS_NGROUPS] = { 1, 1, 3, 1, 4, 1, 2 };
	for (int i = 0; i < OPS_NGROUPS; i++) {
		assert_int_equal(ops_group_parse(ops_group_name((enum ops_group)i), &g), 0);
		assert_int_equal(g, i);
		assert_int_equal(ops_group_nops(g), nops[i]);
	}
	/* fp64 references at known points */
	assert_true(fabs(ops_act_ref(OPS_ACT_GELU_ERF, 1.0) - 0.8413447460685429) < 1e-15);
	assert_true(fabs(ops_act_ref(OPS_ACT_GELU_TANH, 1.0) - 0.8411919906082768) < 1e-15);
	assert_true(fabs(ops_act_ref(OPS_ACT_SILU, 2.0) - 1.7615941559557649) < 1e-15);
	assert_true(fabs(ops_act_ref(OPS_ACT_SIGMOID, -1.0) - 0.2689414213699951) < 1e-15);
	assert_true(ops_act_ref(OPS_ACT_RELU, -3.0) == 0.0);
	assert_true(ops_act_ref(OPS_ACT_RELU, 3.0) == 3.0);
	assert_true(ops_act_ref(OPS_ACT_TANH, 0.5) == tanh(0.5));
}

static void test_fp16_bf16(void **state)
{
	isa_use(state);
	assert_int_equal(ops_f32_to_f16(1.0f), 0x3c00);
	assert_int_equal(ops_f32_to_f16(65504.0f), 0x7bff);
	assert_true(ops_f16_to_f32(0x7bff) == 65504.0f);
	assert_int_equal(ops_f32_to_f16(70000.0f), 0x7c00);
	assert_int_equal(ops_f32_to_f16(-70000.0f), 0xfc00);
	/* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0) */
	assert_int_equal(ops_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
	/* 1 + 3 * 2^-11 is halfway between odd 0x3c01 and even 0x3c02 */
	assert_int_equal(ops_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);

	assert_int_equal(ops_f32_to_bf16(0.1f), 0x3dcd);
	assert_true(fabsf(ops_bf16_to_f32(0x3dcd) - 0.10009766f) < 1e-8f);
	assert_int_equal(ops_f32_to_bf16(1.0f), 0x3f80);
	assert_int_equal(ops_f32_to_bf16(u2f(0x3f808000u)), 0x3f80); /* tie, even down */
	assert_int_equal(ops_f32_to_bf16(u2f(0x3f818000u)), 0x3f82); /* tie, even up */
	assert_int_equal(ops_f32_to_bf16(u2f(0x3f808001u)), 0x3f81); /* above the tie */
	/* a NaN whose payload is only in the low bits must stay a NaN */
	uint16_t nb = ops_f32_to_bf16(u2f(0x7f800001u));
	assert_true(isnan(ops_bf16_to_f32(nb)));
	assert_int_equal(nb & 0x40, 0x40);
	assert_int_equal(ops_f32_to_bf16(INFINITY), 0x7f80);
	/* the largest finite value that rounds up overflows to inf */
	assert_int_equal(ops_f32_to_bf16(u2f(0x7f7fffffu)), 0x7f80);
}

/* Vector conversions match the scalar ones on random bits (NaN, inf,
 * subnormals and exact ties included), for every length tail. */
static void test_vector_conv(void **state)
{
	isa_use(state);
	enum { N = 1037 };
	float *src = malloc(N * sizeof *src), *back = malloc(N * sizeof *back);
	uint16_t *h = malloc(N * sizeof *h);
	uint64_t s = 0x1234567;

	assert_non_null(src);
	assert_non_null(back);
	assert_non_null(h);
	for (int i = 0; i < N; i++) {
		uint32_t u = (uint32_t)xs(&s);
		if (i % 7 == 0)
			u = (u & 0xffff0000u) | 0x8000u; /* a bf16 tie */
		if (i % 11 == 0)
			u = (u & 0x80000000u) | 0x7f800000u | (u & 0x3u); /* inf or NaN */
		if (i % 13 == 0)
			u &= 0x807fffffu; /* subnormal */
		src[i] = u2f(u);
	}
	for (size_t n = N - 9; n <= N; n++) {
		memset(h, 0xAB, N * sizeof *h);
		ops_from_f32(OPS_BF16, src, h, n);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(h[i], ops_f32_to_bf16(src[i]));
		assert_int_equal(h[n < N ? n : 0] == 0xABAB, n < N);
		memset(back, 0xFF, N * sizeof *back);
		ops_to_f32(OPS_BF16, h, back, n);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(f2u(back[i]), f2u(ops_bf16_to_f32(h[i])));

		memset(h, 0xAB, N * sizeof *h);
		ops_from_f32(OPS_F16, src, h, n);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(h[i], ops_f32_to_f16(src[i]));
		memset(back, 0xFF, N * sizeof *back);
		ops_to_f32(OPS_F16, h, back, n);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(f2u(back[i]), f2u(ops_f16_to_f32(h[i])));
	}
	free(src);
	free(back);
	free(h);
}

/* Every fp16 bit pattern widens to the scalar conversion's bits on this
 * path (on AVX2 and AVX-512 that is F16C's vcvtph2ps against the portable
 * C of ops_f16_to_f32, so the portable one is held to the hardware). */
static void test_f16_exhaustive(void **state)
{
	isa_use(state);
	uint16_t *h = malloc(65536 * sizeof *h);
	float *f = malloc(65536 * sizeof *f);

	assert_non_null(h);
	assert_non_null(f);
	for (uint32_t i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	memset(f, 0xFF, 65536 * sizeof *f);
	ops_to_f32(OPS_F16, h, f, 65536);
	for (uint32_t i = 0; i < 65536; i++)
		assert_int_equal(f2u(f[i]), f2u(ops_f16_to_f32((uint16_t)i)));
	/* and back: every finite half survives the round trip */
	ops_from_f32(OPS_F16, f, h, 65536);
	for (uint32_t i = 0; i < 65536; i++)
		if ((i & 0x7c00u) != 0x7c00u || !(i & 0x3ffu))
			assert_int_equal(h[i], i);
	free(h);
	free(f);
}

/* The scalar fp16 rounding at its edges (round to nearest even). */
static void test_f16_scalar_edges(void **state)
{
	(void)state;
	assert_int_equal(ops_f32_to_f16(1.0f), 0x3c00);
	assert_int_equal(ops_f32_to_f16(-2.0f), 0xc000);
	assert_int_equal(ops_f32_to_f16(65504.0f), 0x7bff);
	assert_int_equal(ops_f32_to_f16(65519.996f), 0x7bff);
	assert_int_equal(ops_f32_to_f16(65520.0f), 0x7c00);       /* the tie goes up to inf */
	assert_int_equal(ops_f32_to_f16(INFINITY), 0x7c00);
	assert_int_equal(ops_f32_to_f16(ldexpf(1.0f, -24)), 0x0001); /* smallest subnormal */
	assert_int_equal(ops_f32_to_f16(ldexpf(1.0f, -25)), 0x0000); /* its half: tie to even 0 */
	assert_int_equal(ops_f32_to_f16(ldexpf(3.0f, -26)), 0x0001);
	assert_int_equal(ops_f32_to_f16(ldexpf(3.0f, -25)), 0x0002); /* 1.5 ulp: tie to even 2 */
	assert_int_equal(ops_f32_to_f16(ldexpf(1.0f, -14)), 0x0400); /* smallest normal */
	assert_int_equal(ops_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00); /* tie to even */
	assert_int_equal(ops_f32_to_f16(1.0f + ldexpf(3.0f, -11)), 0x3c02);
	assert_int_equal(ops_f32_to_f16(u2f(0x7fc00001u)) & 0x7e00, 0x7e00); /* quiet NaN */
	assert_true(isnan(ops_f16_to_f32(0x7d00)));
	assert_true(ops_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
	assert_true(ops_f16_to_f32(0xfbff) == -65504.0f);
}

/* The kernel path machinery: names, the host's paths, forcing one, and the
 * errors of OPREVIEW_ISA (nothing changes on an error). */
static void test_isa_paths(void **state)
{
	(void)state;
	struct opr_error err;
	enum ops_isa i;

	assert_int_equal(ops_isa_parse("scalar", &i), 0);
	assert_int_equal(i, OPS_ISA_SCALAR);
	assert_int_equal(ops_isa_parse("avx512", &i), 0);
	assert_int_equal(i, OPS_ISA_AVX512);
	assert_int_equal(ops_isa_parse("AVX2", &i), OPR_EINPUT);
	assert_int_equal(ops_isa_parse("", &i), OPR_EINPUT);
	assert_true(ops_isa_host_has(OPS_ISA_SCALAR));
	assert_int_equal(ops_isa_host_has(OPS_NISAS), 0);
	/* the paths nest: AVX-512 implies AVX2 */
	assert_true(!ops_isa_host_has(OPS_ISA_AVX512) || ops_isa_host_has(OPS_ISA_AVX2));
	assert_int_equal(ops_isa_active(), ops_isa_host_best());
	for (int k = 0; k < OPS_NISAS; k++) {
		if (!ops_isa_host_has((enum ops_isa)k))
			continue;
		assert_int_equal(ops_isa_select((enum ops_isa)k, NULL), 0);
		for (int f = 0; f < OPS_NKFAMS; f++)
			assert_true(strncmp(ops_kfam_path((enum ops_kfam)f), ops_isa_name((enum ops_isa)k),
					    strlen(ops_isa_name((enum ops_isa)k))) == 0);
	}
	assert_string_equal(ops_kfam_name(OPS_KF_QGEMM), "qgemm");
	memset(&err, 0, sizeof err);
	assert_int_equal(ops_isa_select(OPS_NISAS, &err), OPR_EINPUT);
	assert_int_equal(setenv("OPREVIEW_ISA", "avx1024", 1), 0);
	memset(&err, 0, sizeof err);
	assert_int_equal(ops_isa_from_env(&err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "'avx1024' is not a kernel path"));
	assert_int_equal(setenv("OPREVIEW_ISA", "scalar", 1), 0);
	assert_int_equal(ops_isa_from_env(&err), 0);
	assert_int_equal(ops_isa_active(), OPS_ISA_SCALAR);
	assert_int_equal(unsetenv("OPREVIEW_ISA"), 0);
	assert_int_equal(ops_isa_from_env(&err), 0); /* unset: no change */
	assert_int_equal(ops_isa_active(), OPS_ISA_SCALAR);
	for (int k = 0; k < OPS_NISAS; k++)
		if (!ops_isa_host_has((enum ops_isa)k)) {
			memset(&err, 0, sizeof err);
			assert_int_equal(ops_isa_select((enum ops_isa)k, &err), OPR_ELIMIT);
			assert_int_equal(ops_isa_active(), OPS_ISA_SCALAR);
		}
	assert_int_equal(ops_isa_select(ops_isa_host_best(), NULL), 0);
}

/* ---- generator ------------------------------------------------------------- */

static void test_rng(void **state)
{
	(void)state;
	enum { N = 4096 };
	float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
	int8_t i8[N];
	uint8_t u8[N];
	uint64_t k = ops_rng_key(42, "block0", "x");

	assert_non_null(a);
	assert_non_null(b);
	assert_true(k == ops_rng_key(42, "block0", "x"));
	assert_true(k != ops_rng_key(43, "block0", "x"));
	assert_true(k != ops_rng_key(42, "block1", "x"));
	assert_true(k != ops_rng_key(42, "block0", "w"));
	assert_true(ops_rng_key(42, "ab", "c") != ops_rng_key(42, "a", "bc"));

	/* same key, same bits; another tensor filled in between changes nothing */
	ops_rng_fill_f32(k, a, N, -1.0f, 1.0f);
	ops_rng_fill_f32(ops_rng_key(42, "block0", "w"), b, N, -1.0f, 1.0f);
	assert_true(memcmp(a, b, N * sizeof *a) != 0);
	ops_rng_fill_f32(k, b, N, -1.0f, 1.0f);
	assert_memory_equal(a, b, N * sizeof *a);
	/* element i depends on (key, i) only: a shorter fill is a prefix */
	memset(b, 0xFF, N * sizeof *b);
	ops_rng_fill_f32(k, b, 100, -1.0f, 1.0f);
	assert_memory_equal(a, b, 100 * sizeof *a);
	/* another seed gives other bits */
	ops_rng_fill_f32(ops_rng_key(7, "block0", "x"), b, N, -1.0f, 1.0f);
	int same = 0;
	for (int i = 0; i < N; i++)
		same += a[i] == b[i];
	assert_true(same < 8);
	/* range, spread and no zeros */
	double mean = 0;
	for (int i = 0; i < N; i++) {
		assert_true(a[i] >= -1.0f && a[i] < 1.0f);
		assert_true(a[i] != 0.0f);
		mean += a[i];
	}
	assert_true(fabs(mean / N) < 0.05);
	/* a range so narrow that most draws round to 0.0f: all are replaced */
	float lo = -4 * 0x1p-149f, hi = 4 * 0x1p-149f;
	ops_rng_fill_f32(k, a, N, lo, hi);
	int zeros_avoided = 0;
	for (int i = 0; i < N; i++) {
		assert_true(a[i] != 0.0f);
		assert_true(a[i] >= lo && a[i] < hi);
		zeros_avoided += a[i] == 0x1p-149f;
	}
	assert_true(zeros_avoided > 0);

	/* inclusive integer ranges, every value reached */
	int hit[256] = { 0 };
	ops_rng_fill_i8(k, i8, N, -3, 4);
	for (int i = 0; i < N; i++) {
		assert_true(i8[i] >= -3 && i8[i] <= 4);
		hit[i8[i] + 3] = 1;
	}
	for (int v = 0; v < 8; v++)
		assert_int_equal(hit[v], 1);
	memset(hit, 0, sizeof hit);
	ops_rng_fill_u8(k, u8, N, 0, 255);
	int distinct = 0;
	for (int i = 0; i < N; i++)
		hit[u8[i]] = 1;
	for (int v = 0; v < 256; v++)
		distinct += hit[v];
	assert_true(distinct > 250);
	free(a);
	free(b);
}

/* ---- device -------------------------------------------------------------- */

static void test_envelope_checks(void **state)
{
	(void)state;
	struct ops_envelope e = test_env();
	static int dummy;
	struct ops_device *dev = (struct ops_device *)(void *)&dummy; /* set to NULL */
	struct opr_error err = { 0 };

	e.cores = 0;
	assert_int_equal(ops_device_new(&e, 0, &dev, &err), OPR_EINPUT);
	assert_null(dev);
	assert_non_null(strstr(err.msg, "cores"));
	e = test_env();
	e.shared_bw_gbps = 0;
	assert_int_equal(ops_device_new(&e, 0, &dev, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "shared_bw_gbps"));
	e = test_env();
	e.dma_max_last_dim = 0;
	assert_int_equal(ops_device_new(&e, 0, &dev, &err), OPR_EINPUT);
	e = test_env();
	e.dma_engines = 0;
	assert_int_equal(ops_device_new(&e, 0, &dev, &err), OPR_EINPUT);
	e = test_env();
	e.tops[OPS_BF16] = NAN;
	assert_int_equal(ops_device_new(&e, 0, &dev, &err), OPR_EINPUT);
	e = test_env();
	assert_int_equal(ops_device_new(&e, 1, &dev, &err), 0);
	assert_int_equal(ops_device_dry_run(dev), 1);
	assert_string_equal(ops_device_envelope(dev)->name, "test");
	ops_device_free(dev);
	ops_device_free(NULL);
}

/* Transposing descriptors [rows, cols] (source rows contiguous, destination
 * columns contiguous, both with padded leading dimensions) for every element
 * size, at sizes around the 8 x 8 register blocks, the 16-row steps and the
 * 2 KiB source runs: every element lands where a naive copy puts it, and
 * nothing between the destination's rows is written. */
static void test_dma_transpose_blocks(void **state)
{
	isa_use(state);
	struct ops_envelope e = test_env();
	struct ops_device *dev = new_dev(&e, 0);
	struct opr_error err = { 0 };
	static const size_t ebs[] = { 1, 2, 4, 8 };
	static const int64_t sizes[] = { 1, 7, 8, 9, 15, 16, 17, 24, 31, 40 };
	static const int64_t long_cols[] = { 2047, 2048, 2049, 4100 };
	uint64_t s = 7;

	for (size_t k = 0; k < sizeof ebs / sizeof ebs[0]; k++) {
		const size_t eb = ebs[k];
		for (int c = 0; c < 14; c++) {
			int64_t rows = sizes[xs(&s) % 10];
			int64_t cols = c < 10 ? sizes[c] : long_cols[c - 10];
			int64_t lds = cols + (int64_t)(xs(&s) % 3), ldd = rows + (int64_t)(xs(&s) % 5);
			size_t sbytes = (size_t)(rows * lds) * eb, dbytes = (size_t)(cols * ldd) * eb;
			unsigned char *src = malloc(sbytes), *dst = malloc(dbytes), *ref = malloc(dbytes);
			assert_non_null(src);
			assert_non_null(dst);
			assert_non_null(ref);
			for (size_t i = 0; i < sbytes; i++)
				src[i] = (unsigned char)xs(&s);
			memset(dst, 0xEE, dbytes);
			memset(ref, 0xEE, dbytes);
			for (int64_t i = 0; i < rows; i++)
				for (int64_t j = 0; j < cols; j++)
					memcpy(ref + (size_t)(j * ldd + i) * eb,
					       src + (size_t)(i * lds + j) * eb, eb);
			struct ops_dma_desc d = {
				.rank = 2, .shape = { rows, cols }, .src_stride = { lds, 1 },
				.dst_stride = { 1, ldd }, .elem_bytes = eb,
			};
			if (ops_dma_split(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &d, &err))
				fail_msg("%s", err.msg);
			if (memcmp(dst, ref, dbytes))
				fail_msg("transpose of %zu-byte elements, %lld x %lld (lds %lld, ldd %lld) differs",
					 eb, (long long)rows, (long long)cols, (long long)lds,
					 (long long)ldd);
			free(src);
			free(dst);
			free(ref);
		}
	}
	ops_device_free(dev);
}

/* A random strided pattern, copied for real, equals a naive copy; so do
 * boxes of contiguous rows with gaps; bytes and transfers are counted per
 * space pair. */
static void test_dma_pattern(void **state)
{
	isa_use(state);
	struct ops_envelope e = test_env();
	struct ops_device *dev = new_dev(&e, 0);
	struct opr_error err = { 0 };
	uint64_t s = 99;
	unsigned char *src = malloc(1 << 16), *dst = malloc(1 << 16), *ref = malloc(1 << 16);
	static const size_t ebs[] = { 1, 2, 4, 8 };
	uint64_t bytes = 0, n_issued = 0;

	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(ref);
	for (int i = 0; i < 1 << 16; i++)
		src[i] = (unsigned char)xs(&s);
	for (int iter = 0; iter < 300; iter++) {
		struct ops_dma_desc d = { .rank = 1 + (int)(xs(&s) % 4) };
		d.elem_bytes = ebs[xs(&s) % 4];
		/* dims 1..9 with strides of a random permutation of a dense
		 * layout on each side: transposes appear, nothing overlaps */
		int64_t n = 1;
		for (int k = 0; k < d.rank; k++) {
			d.shape[k] = 1 + (int64_t)(xs(&s) % 9);
			n *= d.shape[k];
		}
		for (int side = 0; side < 2; side++) {
			int order[4] = { 0, 1, 2, 3 };
			for (int k = d.rank - 1; k > 0; k--) {
				int r = (int)(xs(&s) % (uint64_t)(k + 1)), t = order[k];
				order[k] = order[r];
				order[r] = t;
			}
			int64_t st = 1;
			for (int k = d.rank - 1; k >= 0; k--) {
				int ax = order[k];
				(side ? d.dst_stride : d.src_stride)[ax] = st;
				st *= d.shape[ax];
			}
		}
		memset(dst, 0xEE, 1 << 16);
		memset(ref, 0xEE, 1 << 16);
		int64_t idx[4] = { 0 };
		for (int64_t q = 0; q < n; q++) {
			int64_t so = 0, dof = 0;
			for (int k = 0; k < d.rank; k++) {
				so += idx[k] * d.src_stride[k];
				dof += idx[k] * d.dst_stride[k];
			}
			memcpy(ref + dof * (int64_t)d.elem_bytes, src + so * (int64_t)d.elem_bytes,
			       d.elem_bytes);
			for (int k = d.rank - 1; k >= 0; k--) {
				if (++idx[k] < d.shape[k])
					break;
				idx[k] = 0;
			}
		}
		assert_int_equal(ops_dma(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &d, &err), 0);
		assert_memory_equal(dst, ref, 1 << 16);
		bytes += (uint64_t)n * d.elem_bytes;
		n_issued++;
	}
	/* boxes of contiguous rows of 1 to 200 elements with gaps between
	 * them on both sides (a conv patch: rows of 30 floats 56 apart into
	 * rows 30 apart), and rows laid end to end on both sides (one row):
	 * the gaps stay untouched, one transfer each */
	for (int iter = 0; iter < 200; iter++) {
		struct ops_dma_desc d = { .rank = 2 + (int)(xs(&s) % 2) };
		d.elem_bytes = ebs[xs(&s) % 4];
		int64_t len = 1 + (int64_t)(xs(&s) % 200), rows = 1 + (int64_t)(xs(&s) % 6);
		int64_t planes = d.rank == 3 ? 1 + (int64_t)(xs(&s) % 3) : 1;
		int64_t sgap = iter % 4 ? (int64_t)(xs(&s) % 40) : 0;
		int64_t dgap = iter % 4 ? (int64_t)(xs(&s) % 9) : 0;
		int64_t ss = len + sgap, ds = len + dgap;
		int64_t n = planes * rows * len;

		if (planes * rows * ss * (int64_t)d.elem_bytes > 1 << 16 ||
		    planes * rows * ds * (int64_t)d.elem_bytes > 1 << 16)
			continue;
		d.shape[d.rank - 1] = len;
		d.src_stride[d.rank - 1] = d.dst_stride[d.rank - 1] = 1;
		d.shape[d.rank - 2] = rows;
		d.src_stride[d.rank - 2] = ss;
		d.dst_stride[d.rank - 2] = ds;
		if (d.rank == 3) {
			d.shape[0] = planes;
			d.src_stride[0] = rows * ss;
			d.dst_stride[0] = rows * ds;
		}
		memset(dst, 0xEE, 1 << 16);
		memset(ref, 0xEE, 1 << 16);
		for (int64_t pl = 0; pl < planes; pl++)
			for (int64_t r = 0; r < rows; r++)
				memcpy(ref + ((pl * rows + r) * ds) * (int64_t)d.elem_bytes,
				       src + ((pl * rows + r) * ss) * (int64_t)d.elem_bytes,
				       (size_t)len * d.elem_bytes);
		assert_int_equal(ops_dma(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &d, &err), 0);
		assert_memory_equal(dst, ref, 1 << 16);
		bytes += (uint64_t)n * d.elem_bytes;
		n_issued++;
	}
	const struct ops_counters *c = ops_device_counters(dev);
	assert_true(c->bytes[OPS_GLOBAL][OPS_SHARED] == bytes);
	assert_true(c->bytes[OPS_SHARED][OPS_GLOBAL] == 0);
	assert_true(c->transfers == n_issued);
	assert_true(c->splits == 0);

	/* a known pattern: 3 x 5 fp32 out of a 5-wide row-major source,
	 * transposed into SHARED, then 15 bytes SHARED -> LOCAL */
	ops_device_reset(dev);
	float m[15], t[15];
	for (int i = 0; i < 15; i++)
		m[i] = (float)i + 0.5f;
	memset(t, 0xFF, sizeof t);
	struct ops_dma_desc tr = { .rank = 2, .shape = { 3, 5 }, .src_stride = { 5, 1 },
				   .dst_stride = { 1, 3 }, .elem_bytes = 4 };
	assert_int_equal(ops_dma(dev, OPS_SHARED, t, OPS_GLOBAL, m, &tr, &err), 0);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 5; j++)
			assert_true(t[j * 3 + i] == m[i * 5 + j]);
	struct ops_dma_desc row = { .rank = 1, .shape = { 15 }, .src_stride = { 1 },
				    .dst_stride = { 1 }, .elem_bytes = 1 };
	assert_int_equal(ops_dma(dev, OPS_LOCAL, dst, OPS_SHARED, src, &row, &err), 0);
	/* a zero dimension: nothing moves, nothing is issued */
	struct ops_dma_desc empty = { .rank = 2, .shape = { 0, 70000 }, .src_stride = { 1, 1 },
				      .dst_stride = { 1, 1 }, .elem_bytes = 4 };
	assert_int_equal(ops_dma(dev, OPS_LOCAL, NULL, OPS_SHARED, NULL, &empty, &err), 0);
	c = ops_device_counters(dev);
	assert_true(c->bytes[OPS_GLOBAL][OPS_SHARED] == 60);
	assert_true(c->bytes[OPS_SHARED][OPS_LOCAL] == 15);
	assert_true(c->transfers == 2);
	/* bad descriptors */
	struct ops_dma_desc bad = row;
	bad.rank = 5;
	assert_int_equal(ops_dma(dev, OPS_LOCAL, dst, OPS_SHARED, src, &bad, &err), OPR_EINPUT);
	bad = row;
	bad.shape[0] = -1;
	assert_int_equal(ops_dma(dev, OPS_LOCAL, dst, OPS_SHARED, src, &bad, &err), OPR_EINPUT);
	assert_true(c->transfers == 2);
	free(src);
	free(dst);
	free(ref);
	ops_device_free(dev);
}

/* Over max_last_dim: refused by ops_dma, split by ops_dma_split into
 * ceil(L / M) transfers (M - 1 extra), data intact. */
static void test_dma_limit_split(void **state)
{
	(void)state;
	struct ops_envelope e = test_env();
	struct ops_device *dev = new_dev(&e, 0);
	struct opr_error err = { 0 };
	enum { R = 3, L = 140000, LD = 140003 };
	uint16_t *src = malloc((size_t)R * LD * 2), *dst = malloc((size_t)R * L * 2);
	uint64_t s = 5;

	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < (size_t)R * LD; i++)
		src[i] = (uint16_t)xs(&s);
	struct ops_dma_desc big = { .rank = 2, .shape = { R, 70000 }, .src_stride = { LD, 1 },
				    .dst_stride = { L, 1 }, .elem_bytes = 2 };
	assert_int_equal(ops_dma(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &big, &err), OPR_ELIMIT);
	assert_string_equal(err.msg, "DMA last dimension 70000 exceeds max_last_dim 65535");
	assert_true(ops_device_counters(dev)->transfers == 0);
	assert_true(ops_device_counters(dev)->bytes[OPS_GLOBAL][OPS_SHARED] == 0);

	big.shape[1] = 65535; /* exactly the limit passes */
	assert_int_equal(ops_dma(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &big, &err), 0);
	assert_true(ops_device_counters(dev)->transfers == 1);
	ops_device_reset(dev);

	big.shape[1] = L;
	memset(dst, 0xFF, (size_t)R * L * 2);
	assert_int_equal(ops_dma_split(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &big, &err), 0);
	for (int r = 0; r < R; r++)
		assert_memory_equal(dst + (size_t)r * L, src + (size_t)r * LD, (size_t)L * 2);
	const struct ops_counters *c = ops_device_counters(dev);
	assert_true(c->transfers == 3); /* ceil(140000 / 65535) */
	assert_true(c->splits == 2);
	assert_true(c->bytes[OPS_GLOBAL][OPS_SHARED] == (uint64_t)R * L * 2);
	/* under the limit: no split */
	big.shape[1] = 100;
	assert_int_equal(ops_dma_split(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &big, &err), 0);
	assert_true(c->transfers == 4);
	assert_true(c->splits == 2);
	free(src);
	free(dst);
	ops_device_free(dev);
}

static void test_capacity(void **state)
{
	(void)state;
	struct ops_envelope e = test_env();
	struct opr_error err = { 0 };

	for (int dry = 0; dry < 2; dry++) {
		struct ops_device *dev = new_dev(&e, dry);
		struct ops_buf a, b, c, l, g;
		assert_int_equal(ops_buf_alloc(dev, OPS_SHARED, 200 * 1024, &a, &err), 0);
		assert_true((a.data == NULL) == (dry == 1));
		assert_int_equal(ops_buf_alloc(dev, OPS_SHARED, 100 * 1024, &b, &err), OPR_ELIMIT);
		assert_string_equal(err.msg,
				    "SHARED footprint 300.0 KiB exceeds capacity 256.0 KiB on core 0");
		assert_null(b.data);
		/* another core has its own SHARED */
		assert_int_equal(ops_launch_begin(dev, "k", 1, &err), 0);
		ops_tile_begin(dev, 3); /* core 1 */
		assert_int_equal(ops_buf_alloc(dev, OPS_SHARED, 250 * 1024, &c, &err), 0);
		assert_int_equal(ops_buf_alloc(dev, OPS_SHARED, 7 * 1024, &b, &err), OPR_ELIMIT);
		assert_non_null(strstr(err.msg, "on core 1"));
		ops_buf_release(dev, &c);
		assert_int_equal(ops_launch_end(dev, &err), 0);
		assert_true(ops_device_counters(dev)->peak_shared_bytes == 250 * 1024);
		/* LOCAL has its own capacity; GLOBAL none of these */
		assert_int_equal(ops_buf_alloc(dev, OPS_LOCAL, 65 * 1024, &l, &err), OPR_ELIMIT);
		assert_non_null(strstr(err.msg, "LOCAL footprint 65.0 KiB exceeds capacity 64.0 KiB"));
		assert_int_equal(ops_buf_alloc(dev, OPS_LOCAL, 64 * 1024, &l, &err), 0);
		assert_int_equal(ops_buf_alloc(dev, OPS_GLOBAL, 1 << 20, &g, &err), 0);
		/* released footprint can be taken again */
		ops_buf_release(dev, &a);
		assert_int_equal(ops_buf_alloc(dev, OPS_SHARED, 256 * 1024, &a, &err), 0);
		ops_device_reset(dev);
		assert_true(ops_device_counters(dev)->peak_shared_bytes == 256 * 1024);
		ops_buf_release(dev, &a);
		ops_buf_release(dev, &l);
		ops_buf_release(dev, &g);
		ops_buf_release(dev, &g); /* twice is harmless */
		ops_device_free(dev);
	}
}

/* The launch of the comment in ops/model.c with hand-computed terms:
 * fp32 rate per core = 10 TOPS / 2 cores = 5000 ops/ns, global 100 GB/s
 * split over 2 active cores, SHARED 400 GB/s, setup 50 ns over 2 engines.
 * core 0: C = 2e6 / 5000 = 400, S = (4000 + 4000) / 400 = 20 of which
 *         Sd = 4000 / 400 = 10 by DMA and Sc = 10 by compute,
 *         G = 4000 / 50 = 80, D = 25
 * core 1: C = 1e6 / 5000 = 200, S = Sd = 2000 / 400 = 5, Sc = 0,
 *         G = 2000 / 50 = 40, D = 25
 * double-buffered: T = 2000 + max(400 + 25, 200 + 25) = 2425
 * single-buffered: T = 2000 + max(525, 270) = 2525
 * on a dma_serial envelope, either buffering, phased:
 *   T = 2000 + max(max(400, 10) + max(80, 10) + 25, max(200, 0) + max(40, 5) + 25)
 *     = 2505
 * a one-pass launch there streams while it computes:
 *   T = 2000 + max(max(400, 80) + 25, max(200, 40) + 25) = 2425
 * one_pass: the launch marked one-pass, its transfers counted only. */
static void run_hand_launch(struct ops_device *dev, int db, int one_pass, void *dst,
			    const void *src)
{
	struct opr_error err = { 0 };
	struct ops_dma_desc d0 = { .rank = 1, .shape = { 1000 }, .src_stride = { 1 },
				   .dst_stride = { 1 }, .elem_bytes = 4 };
	struct ops_dma_desc d1 = d0;

	d1.shape[0] = 500;
	assert_int_equal(ops_launch_begin(dev, db ? "hand-db" : "hand-sb", db, &err), 0);
	if (one_pass)
		ops_launch_one_pass(dev);
	ops_tile_begin(dev, 0);
	ops_compute(dev, OPS_F32, 1000000, 0, 4000, 0);
	assert_int_equal(one_pass ? ops_dma_split_count(dev, OPS_SHARED, OPS_GLOBAL, &d0, &err)
				  : ops_dma(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &d0, &err), 0);
	ops_tile_begin(dev, 1);
	ops_compute(dev, OPS_F32, 500000, 0, 0, 0);
	assert_int_equal(one_pass ? ops_dma_split_count(dev, OPS_SHARED, OPS_GLOBAL, &d1, &err)
				  : ops_dma(dev, OPS_SHARED, dst, OPS_GLOBAL, src, &d1, &err), 0);
	assert_int_equal(ops_launch_end(dev, &err), 0);
}

static void test_model(void **state)
{
	(void)state;
	struct ops_envelope e = test_env();
	struct ops_device *dev = new_dev(&e, 1);
	struct opr_error err = { 0 };
	size_t n;

	run_hand_launch(dev, 1, 0, NULL, NULL);
	run_hand_launch(dev, 0, 0, NULL, NULL);
	const struct ops_launch_rec *r = ops_device_launches(dev, &n);
	assert_int_equal(n, 2);
	assert_string_equal(r[0].name, "hand-db");
	assert_int_equal(r[0].cores_used, 2);
	assert_int_equal(r[0].double_buffer, 1);
	assert_true(r[0].global_bytes == 6000);
	assert_true(r[0].shared_bytes == 4000 + 4000 + 2000);
	assert_true(r[0].transfers == 2);
	assert_true(r[0].work == 1500000);
	assert_true(fabs(r[0].compute_ns - 400.0) < 1e-9);
	assert_true(fabs(r[0].shared_ns - 20.0) < 1e-9);
	assert_true(fabs(r[0].global_ns - 80.0) < 1e-9);
	assert_true(fabs(r[0].dma_ns - 25.0) < 1e-9);
	assert_true(fabs(r[0].overhead_ns - 2000.0) < 1e-9);
	assert_true(fabs(r[0].model_ns - 2425.0) < 1e-9);
	assert_true(fabs(r[0].imbalance - 2.0 * 1e6 / 1.5e6) < 1e-12);
	assert_true(fabs(r[0].shared_dma_ns - 10.0) < 1e-9);
	assert_true(fabs(r[1].model_ns - 2525.0) < 1e-9);
	assert_true(fabs(r[1].shared_ns - 20.0) < 1e-9);
	assert_true(fabs(ops_device_model_ns(dev) - 4950.0) < 1e-9);
	/* a serial-DMA envelope (a CPU host) cannot hide transfers */
	struct ops_envelope es = e;
	es.dma_serial = 1;
	struct ops_device *ds = new_dev(&es, 1);
	run_hand_launch(ds, 1, 0, NULL, NULL);
	run_hand_launch(ds, 0, 0, NULL, NULL);
	r = ops_device_launches(ds, &n);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].double_buffer, 1);
	assert_true(fabs(r[0].model_ns - 2505.0) < 1e-9);
	assert_true(fabs(r[1].model_ns - 2505.0) < 1e-9);
	int ovl = -1;
	assert_true(fabs(ops_model_onchip_ns(&es, &r[0], &ovl) - (400.0 + 25.0)) < 1e-9);
	assert_int_equal(ovl, 0);
	/* one pass: overlapped on the host, no change on an accelerator */
	for (int serial = 0; serial < 2; serial++) {
		struct ops_envelope eo = serial ? es : e;
		struct ops_device *d1 = new_dev(&eo, 1);
		run_hand_launch(d1, 1, 1, NULL, NULL);
		run_hand_launch(d1, 0, 1, NULL, NULL);
		r = ops_device_launches(d1, &n);
		assert_int_equal(n, 2);
		assert_int_equal(r[0].one_pass, 1);
		assert_true(r[0].global_bytes == 6000 && r[0].transfers == 2);
		assert_true(fabs(r[0].model_ns - 2425.0) < 1e-9);
		assert_true(fabs(r[1].model_ns - (serial ? 2425.0 : 2525.0)) < 1e-9);
		assert_true(fabs(ops_model_onchip_ns(&eo, &r[1], &ovl) -
				 (serial ? 425.0 : 400.0 + 20.0 + 25.0)) < 1e-9);
		assert_int_equal(ovl, serial);
		/* the flag ends with its launch */
		assert_int_equal(ops_launch_begin(d1, "next", 0, &err), 0);
		assert_int_equal(ops_launch_end(d1, &err), 0);
		assert_int_equal(ops_device_launches(d1, &n)[2].one_pass, 0);
		ops_device_free(d1);
	}
	/* a one-pass share (ops.h): a one-pass launch of that family on the
	 * host streams at share x the GLOBAL rate, G = 80 / 0.1 on core 0 and
	 * 40 / 0.1 on core 1: T = 2000 + max(max(400, 800) + 25, max(200, 400)
	 * + 25) = 2825; the record's G is the priced one. Another family's
	 * share, a staged launch and an accelerator change nothing. */
	for (int k = 0; k < 4; k++) {
		struct ops_envelope eo = k == 3 ? e : es;
		eo.one_pass_share[k == 1 ? OPS_KC_QGEMM : OPS_KC_ELEMENTWISE] = 0.1;
		struct ops_device *d1 = new_dev(&eo, 1);
		run_hand_launch(d1, 1, k != 2, NULL, NULL);
		r = ops_device_launches(d1, &n);
		assert_int_equal(n, 1);
		const double want[4] = { 2825.0, 2425.0, 2505.0, 2425.0 };
		if (fabs(r[0].model_ns - want[k]) > 1e-9)
			print_error("share case %d: model %.3f ns, want %.3f\n", k, r[0].model_ns, want[k]);
		assert_true(fabs(r[0].model_ns - want[k]) < 1e-9);
		assert_true(fabs(r[0].global_ns - (k == 0 ? 800.0 : 80.0)) < 1e-9);
		ops_device_free(d1);
	}
	ops_device_free(ds);
	r = ops_device_launches(dev, &n);

	/* one active core gets all the global bandwidth; the idle one counts
	 * as zero work in the imbalance; boost scales compute only */
	ops_device_reset(dev);
	assert_int_equal(ops_device_model_ns(dev), 0);
	e.clock_scale = 1.25;
	struct ops_device *d2 = new_dev(&e, 1);
	struct ops_dma_desc d0 = { .rank = 1, .shape = { 1000 }, .src_stride = { 1 },
				   .dst_stride = { 1 }, .elem_bytes = 4 };
	assert_int_equal(ops_launch_begin(d2, "one", 0, &err), 0);
	ops_tile_begin(d2, 0);
	ops_compute(d2, OPS_U8, 1000000, 0, 0, 0);       /* int8: 40 TOPS * 1.25 / 2 */
	ops_compute(d2, OPS_BF16, 0, 50000, 1000, 1000); /* 20 TOPS * 1.25 / 2 */
	assert_int_equal(ops_dma(d2, OPS_GLOBAL, NULL, OPS_SHARED, NULL, &d0, &err), 0);
	assert_int_equal(ops_launch_end(d2, &err), 0);
	r = ops_device_launches(d2, &n);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].cores_used, 1);
	double c = 2e6 / 25000.0 + 5e4 / 12500.0, s = 6000.0 / 400.0, g = 4000.0 / 100.0;
	assert_true(fabs(r[0].compute_ns - c) < 1e-9);
	assert_true(fabs(r[0].global_ns - g) < 1e-9);
	assert_true(fabs(r[0].shared_ns - s) < 1e-9);
	assert_true(fabs(r[0].model_ns - (2000.0 + c + s + g + 25.0)) < 1e-9);
	assert_true(fabs(r[0].imbalance - 2.0) < 1e-12);
	const struct ops_counters *k = ops_device_counters(d2);
	assert_true(k->macs[OPS_U8] == 1000000 && k->elem_ops == 50000);
	assert_true(k->core_work[0] == 1050000 && k->core_work[1] == 0);
	assert_true(k->compute_read_bytes == 1000 && k->compute_write_bytes == 1000);
	/* launches must pair */
	assert_int_equal(ops_launch_end(d2, &err), OPR_EINTERNAL);
	assert_int_equal(ops_launch_begin(d2, "a", 0, &err), 0);
	assert_int_equal(ops_launch_begin(d2, "b", 0, &err), OPR_EINTERNAL);
	ops_device_free(d2);
	ops_device_free(dev);

	/* element-wise ops on the vector unit: fp32 data at vector_tops,
	 * fp16/bf16 data at vector_half_tops (per core: 4 and 1 TOPS over 2
	 * cores = 2000 and 500 ops/ns) */
	struct ops_envelope ev = test_env();
	ev.vector_tops = 4.0;
	ev.vector_half_tops = 1.0;
	struct ops_device *dv = new_dev(&ev, 1);
	assert_int_equal(ops_launch_begin(dv, "vec", 1, &err), 0);
	ops_tile_begin(dv, 0);
	ops_compute(dv, OPS_F32, 0, 1000000, 0, 0);
	ops_compute(dv, OPS_BF16, 0, 100000, 0, 0);
	assert_int_equal(ops_launch_end(dv, &err), 0);
	r = ops_device_launches(dv, &n);
	assert_int_equal(n, 1);
	assert_true(fabs(r[0].compute_ns - (1e6 / 2000.0 + 1e5 / 500.0)) < 1e-9);
	ops_device_free(dv);
	/* without the half rate, both at vector_tops */
	ev.vector_half_tops = 0;
	dv = new_dev(&ev, 1);
	assert_int_equal(ops_launch_begin(dv, "vec", 1, &err), 0);
	ops_tile_begin(dv, 0);
	ops_compute(dv, OPS_F32, 0, 1000000, 0, 0);
	ops_compute(dv, OPS_BF16, 0, 100000, 0, 0);
	assert_int_equal(ops_launch_end(dv, &err), 0);
	r = ops_device_launches(dv, &n);
	assert_true(fabs(r[0].compute_ns - 1.1e6 / 2000.0) < 1e-9);
	ops_device_free(dv);
	/* a half rate alone is refused */
	ev.vector_tops = 0;
	ev.vector_half_tops = 1.0;
	assert_int_equal(ops_device_new(&ev, 1, &dv, &err), OPR_EINPUT);
}

/* GLOBAL priced per direction (global_read/write_bw_gbps, a host
 * calibration): reads at the read rate, writes at the write rate, each
 * shared by the active cores; a direction left at 0 at the round trip's
 * rate; both at 0 the single-bandwidth term. 4000 bytes each way. */
static double dir_global_ns(double rd, double wr, int both_cores)
{
	struct ops_envelope e = test_env();
	struct opr_error err = { 0 };
	struct ops_dma_desc d0 = { .rank = 1, .shape = { 1000 }, .src_stride = { 1 },
				   .dst_stride = { 1 }, .elem_bytes = 4 };
	size_t n;

	e.global_read_bw_gbps = rd;
	e.global_write_bw_gbps = wr;
	struct ops_device *dev = new_dev(&e, 1);
	assert_int_equal(ops_launch_begin(dev, "dir", 0, &err), 0);
	for (int c = 0; c < 1 + both_cores; c++) {
		ops_tile_begin(dev, c);
		assert_int_equal(ops_dma(dev, OPS_SHARED, NULL, OPS_GLOBAL, NULL, &d0, &err), 0);
		assert_int_equal(ops_dma(dev, OPS_GLOBAL, NULL, OPS_SHARED, NULL, &d0, &err), 0);
	}
	assert_int_equal(ops_launch_end(dev, &err), 0);
	const struct ops_launch_rec *r = ops_device_launches(dev, &n);
	assert_int_equal(n, 1);
	assert_true(r[0].global_bytes == 8000u * (1u + (unsigned)both_cores));
	double g = r[0].global_ns;
	ops_device_free(dev);
	return g;
}

static void test_model_directions(void **state)
{
	(void)state;
	assert_true(fabs(dir_global_ns(0, 0, 0) - 8000.0 / 100.0) < 1e-9);
	assert_true(fabs(dir_global_ns(200, 50, 0) - (4000.0 / 200.0 + 4000.0 / 50.0)) < 1e-9);
	assert_true(fabs(dir_global_ns(200, 0, 0) - (4000.0 / 200.0 + 4000.0 / 100.0)) < 1e-9);
	assert_true(fabs(dir_global_ns(0, 50, 0) - (4000.0 / 100.0 + 4000.0 / 50.0)) < 1e-9);
	/* two active cores share each direction's bandwidth */
	assert_true(fabs(dir_global_ns(200, 50, 1) - (4000.0 / 100.0 + 4000.0 / 25.0)) < 1e-9);
	/* a negative rate is refused */
	struct ops_envelope e = test_env();
	struct ops_device *dev = NULL;
	struct opr_error err = { 0 };
	e.global_read_bw_gbps = -1;
	assert_int_equal(ops_device_new(&e, 1, &dev, &err), OPR_EINPUT);
	assert_null(dev);
}

static void fill_x(float *x, size_t n, uint64_t seed)
{
	ops_rng_fill_f32(ops_rng_key(seed, "t", "x"), x, n, -2.0f, 2.0f);
}

/* The same work on a dry device and a real one: identical counters and
 * launch records. */
static void test_dry_equals_real(void **state)
{
	(void)state;
	struct ops_envelope e = test_env();
	struct opr_error err = { 0 };
	struct ops_permute_job j = {
		.rank = 3, .dims = { 5, 70, 33 }, .perm = { 2, 0, 1 }, .dtype = OPS_F32,
		.with_act = 1, .act = OPS_ACT_SILU, .fused = 0, .tile_rows = 16, .tile_cols = 9,
		.double_buffer = 1
	};
	size_t n = 5 * 70 * 33;
	float *x = malloc(n * 4), *y = malloc(n * 4);

	assert_non_null(x);
	assert_non_null(y);
	fill_x(x, n, 3);
	struct ops_device *real = new_dev(&e, 0), *dry = new_dev(&e, 1);
	assert_int_equal(ops_permute_exec(real, &j, x, y, &err), 0);
	assert_int_equal(ops_permute_exec(dry, &j, NULL, NULL, &err), 0);
	j.fused = 1;
	j.double_buffer = 0;
	assert_int_equal(ops_permute_exec(real, &j, x, y, &err), 0);
	assert_int_equal(ops_permute_exec(dry, &j, NULL, NULL, &err), 0);
	run_hand_launch(real, 1, 0, y, x);
	run_hand_launch(dry, 1, 0, NULL, NULL);
	assert_memory_equal(ops_device_counters(real), ops_device_counters(dry),
			    sizeof(struct ops_counters));
	assert_true(ops_device_counters(real)->launches == 4);
	assert_true(ops_device_counters(real)->transfers > 0);
	size_t nr, nd;
	const struct ops_launch_rec *rr = ops_device_launches(real, &nr);
	const struct ops_launch_rec *rd = ops_device_launches(dry, &nd);
	assert_int_equal(nr, 4);
	assert_int_equal(nd, 4);
	assert_memory_equal(rr, rd, nr * sizeof *rr);
	assert_true(ops_device_model_ns(real) == ops_device_model_ns(dry));
	free(x);
	free(y);
	ops_device_free(real);
	ops_device_free(dry);
}

/* The counters read back through PAPI as sde:::opreview::<NAME>. */
static void test_sde_papi(void **state)
{
	(void)state;
	struct ops_envelope e = test_env();
	struct opr_error err = { 0 };
	struct ops_device *dev = new_dev(&e, 1);
	const char *const *names = ops_sde_names();
	static const char *const want[] = { "LAUNCHES", "GLOBAL_READ_BYTES",
					    "SHARED_WRITE_BYTES", "DMA_TRANSFERS", "DMA_SPLITS" };
	char ev[128];
	long long v[5] = { -1, -1, -1, -1, -1 };
	int es = PAPI_NULL, found = 0, nn = 0;

	while (names[nn])
		nn++;
	assert_int_equal(nn, 17);
	for (int i = 0; names[i]; i++)
		found += strcmp(names[i], "PEAK_SHARED_BYTES") == 0;
	assert_int_equal(found, 1);

	ops_sde_register();
	ops_sde_register();
	ops_sde_bind(dev);
	assert_int_equal(PAPI_library_init(PAPI_VER_CURRENT), PAPI_VER_CURRENT);
	assert_int_equal(PAPI_create_eventset(&es), PAPI_OK);
	for (int i = 0; i < 5; i++) {
		snprintf(ev, sizeof ev, "sde:::opreview::%s", want[i]);
		assert_int_equal(PAPI_add_named_event(es, ev), PAPI_OK);
	}
	assert_int_equal(PAPI_start(es), PAPI_OK);
	struct ops_permute_job j = {
		.rank = 2, .dims = { 3, 70000 }, .perm = { 1, 0 }, .dtype = OPS_F16,
		.tile_rows = 70000, .tile_cols = 1, .double_buffer = 0
	};
	assert_int_equal(ops_permute_exec(dev, &j, NULL, NULL, &err), 0);
	run_hand_launch(dev, 0, 0, NULL, NULL);
	assert_int_equal(PAPI_read(es, v), PAPI_OK);
	const struct ops_counters *c = ops_device_counters(dev);
	assert_true(c->launches == 2);
	assert_true(c->splits > 0);
	assert_true((uint64_t)v[0] == c->launches);
	uint64_t gr = c->bytes[OPS_GLOBAL][OPS_SHARED] + c->bytes[OPS_GLOBAL][OPS_LOCAL] +
		      c->bytes[OPS_GLOBAL][OPS_GLOBAL];
	assert_true(gr == 3 * 70000 * 2 + 6000);
	assert_true((uint64_t)v[1] == gr);
	assert_true((uint64_t)v[2] == c->bytes[OPS_GLOBAL][OPS_SHARED] + c->compute_write_bytes);
	assert_true((uint64_t)v[3] == c->transfers);
	assert_true((uint64_t)v[4] == c->splits);
	assert_int_equal(PAPI_stop(es, v), PAPI_OK);
	ops_sde_bind(NULL);
	PAPI_cleanup_eventset(es);
	PAPI_destroy_eventset(&es);
	PAPI_shutdown();
	ops_device_free(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		ISA_TESTS(test_fp16_bf16),
		ISA_TESTS(test_vector_conv),
		ISA_TESTS(test_f16_exhaustive),
		cmocka_unit_test(test_f16_scalar_edges),
		cmocka_unit_test(test_isa_paths),
		cmocka_unit_test(test_rng),
		cmocka_unit_test(test_envelope_checks),
		ISA_TESTS(test_dma_pattern),
		ISA_TESTS(test_dma_transpose_blocks),
		cmocka_unit_test(test_dma_limit_split),
		cmocka_unit_test(test_capacity),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_model_directions),
		cmocka_unit_test(test_dry_equals_real),
		cmocka_unit_test(test_sde_papi),
	};

	return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
