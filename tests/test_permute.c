/* tests/test_permute.c: the permute kernel and the permute(+activation)
 * groups: exact outputs against a naive permutation, counts against the
 * closed form, long last dimensions split at max_last_dim, the instance path. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/device_int.h"
#include "../ops/isa_int.h"
#include "../ops/ops_int.h"
#include "test_isa.h"

static struct ops_envelope test_env(double shared_kib)
{
	struct ops_envelope e;

	memset(&e, 0, sizeof e);
	snprintf(e.name, sizeof e.name, "test");
	e.clock_ghz = 1.0;
	e.clock_scale = 1.0;
	e.cores = 3;
	e.global_bw_gbps = 100.0;
	e.global_capacity_gib = 1.0;
	e.shared_capacity_kib = shared_kib;
	e.shared_bw_gbps = 400.0;
	e.local_capacity_kib = 64.0;
	e.dma_max_last_dim = 65535;
	e.dma_setup_ns = 50.0;
	e.dma_engines = 2;
	for (int t = 0; t < OPS_NDTYPES; t++)
		e.tops[t] = 10.0;
	e.launch_overhead_us = 2.0;
	return e;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int64_t count_of(const struct ops_permute_job *j)
{
	int64_t n = 1;
	for (int i = 0; i < j->rank; i++)
		n *= j->dims[i];
	return n;
}

/* y[out index] = x[in index], element by element over the output. */
static void naive_permute(const struct ops_permute_job *j, const void *x, void *y)
{
	int64_t is[OPS_MAX_RANK], idx[OPS_MAX_RANK] = { 0 };
	int64_t n = count_of(j), st = 1;
	size_t es = ops_dtype_size(j->dtype);

	for (int k = j->rank - 1; k >= 0; k--) {
		is[k] = st;
		st *= j->dims[k];
	}
	for (int64_t q = 0; q < n; q++) {
		int64_t src = 0;
		for (int i = 0; i < j->rank; i++)
			src += idx[i] * is[j->perm[i]];
		memcpy((char *)y + q * (int64_t)es, (const char *)x + src * (int64_t)es, es);
		for (int i = j->rank - 1; i >= 0; i--) {
			if (++idx[i] < j->dims[j->perm[i]])
				break;
			idx[i] = 0;
		}
	}
}

static void fill(enum ops_dtype t, void *p, int64_t n, uint64_t seed)
{
	uint64_t k = ops_rng_key(seed, "perm", "x");

	if (t == OPS_S8) {
		ops_rng_fill_i8(k, p, (size_t)n, -128, 127);
	} else if (t == OPS_U8) {
		ops_rng_fill_u8(k, p, (size_t)n, 0, 255);
	} else {
		float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
		assert_non_null(f);
		ops_rng_fill_f32(k, f, (size_t)n, -4.0f, 4.0f);
		ops_from_f32(t, f, p, (size_t)n);
		free(f);
	}
}

/* Runs a job on a real and on a dry device: the output, poisoned first,
 * equals ref byte for byte; counters equal the closed form and each other;
 * each element crosses GLOBAL -> SHARED and back once per launch. stream:
 * the real device streams every GLOBAL write, as it does past its
 * streaming threshold (y is then 64-byte aligned, so that the streamed
 * stores run where the rows allow them). */
static void check_job_on(const struct ops_envelope *e, const struct ops_permute_job *j,
			 uint64_t seed, const void *ref_or_null, int stream)
{
	struct opr_error err = { 0 };
	struct ops_device *dev = NULL, *dry = NULL;
	struct ops_permute_counts want;
	int64_t n = count_of(j);
	size_t es = ops_dtype_size(j->dtype), bytes = (size_t)(n ? n : 1) * es;
	void *x = malloc(bytes), *y = aligned_alloc(64, (bytes + 63) / 64 * 64);
	void *ref = malloc(bytes);

	assert_non_null(x);
	assert_non_null(y);
	assert_non_null(ref);
	fill(j->dtype, x, n, seed);
	if (ref_or_null)
		memcpy(ref, ref_or_null, (size_t)n * es);
	else
		naive_permute(j, x, ref);
	memset(y, 0xFF, bytes);
	assert_int_equal(ops_device_new(e, 0, &dev, &err), 0);
	assert_int_equal(ops_device_new(e, 1, &dry, &err), 0);
	if (stream)
		dev->stream_min_bytes = 1;
	assert_int_equal(ops_permute_exec(dev, j, x, y, &err), 0);
	assert_int_equal(ops_permute_exec(dry, j, NULL, NULL, &err), 0);
	assert_memory_equal(y, ref, (size_t)n * es);
	assert_int_equal(ops_permute_expect(e, j, &want, &err), 0);
	const struct ops_counters *c = ops_device_counters(dev);
	assert_true(c->transfers == want.transfers);
	assert_true(c->splits == want.splits);
	assert_true(c->tiles == want.tiles);
	assert_true(c->launches == want.launches);
	uint64_t per = (uint64_t)n * es * want.launches;
	assert_true(c->bytes[OPS_GLOBAL][OPS_SHARED] == per);
	assert_true(c->bytes[OPS_SHARED][OPS_GLOBAL] == per);
	assert_true(c->peak_shared_bytes ==
		    (uint64_t)(want.tile_rows * want.tile_cols) * es * (j->double_buffer ? 2 : 1));
	assert_memory_equal(c, ops_device_counters(dry), sizeof *c);
	ops_device_free(dev);
	ops_device_free(dry);
	free(x);
	free(y);
	free(ref);
}

static void check_job(const struct ops_envelope *e, const struct ops_permute_job *j,
		      uint64_t seed, const void *ref_or_null)
{
	check_job_on(e, j, seed, ref_or_null, 0);
}

static void test_all_rank4(void **state)
{
	isa_use(state);
	struct ops_envelope e = test_env(256);
	int p[4];
	int nperm = 0;
	static const int64_t tiles[3][2] = { { 0, 0 }, { 2, 3 }, { 7, 1 } };

	for (p[0] = 0; p[0] < 4; p[0]++)
		for (p[1] = 0; p[1] < 4; p[1]++)
			for (p[2] = 0; p[2] < 4; p[2]++)
				for (p[3] = 0; p[3] < 4; p[3]++) {
					if (p[0] == p[1] || p[0] == p[2] || p[0] == p[3] ||
					    p[1] == p[2] || p[1] == p[3] || p[2] == p[3])
						continue;
					nperm++;
					for (int t = 0; t < 3; t++) {
						struct ops_permute_job j = {
							.rank = 4, .dims = { 3, 4, 5, 6 },
							.dtype = OPS_F32,
							.tile_rows = tiles[t][0],
							.tile_cols = tiles[t][1],
							.double_buffer = t != 1
						};
						memcpy(j.perm, p, sizeof p);
						check_job(&e, &j, (uint64_t)(nperm * 3 + t), NULL);
					}
				}
	assert_int_equal(nperm, 24);
}

/* The chosen path's transposes (and the streaming one where the path has
 * it, and the fp32 one that writes the destination's rows in turn) on their own: dst[j*ldd + i] = src[i*lds + j] on random shapes with
 * tails that are not multiples of 8 or 16, padded rows, destinations
 * aligned to 64 bytes with ldd a multiple of 16 (the streamed stores) or
 * not, a source row above 65535 elements; the output is poisoned and every
 * element outside the written block must keep its poison. */
static void test_transpose_kernels(void **state)
{
	isa_use(state);
	uint64_t s = 77;

	for (int iter = 0; iter < 120; iter++) {
		/* iterations 2, 3, 4, 6 and 8 are fp32: the streamed kernel's cases */
		int e = iter == 2 || iter == 3 || iter == 4 || iter == 6 || iter == 8 ? 2
										       : (int)(xs(&s) % 3);
		size_t es = (size_t)1 << e;
		int64_t rows = 1 + (int64_t)(xs(&s) % 70), cols = 1 + (int64_t)(xs(&s) % 70);
		if (iter % 10 == 0) {
			rows = 16 * (1 + (int64_t)(xs(&s) % 5));
			cols = 16 * (1 + (int64_t)(xs(&s) % 5));
		}
		if (iter == 1) {
			rows = 17;
			cols = 70001;
		}
		if (iter == 2) { /* the streamed kernel's 32-row bands, a tail of each */
			rows = 67;
			cols = 301;
		}
		if (iter == 4) {
			rows = 32;
			cols = 17;
		}
		if (iter == 3) { /* unaligned rows: bands through the carry, more
				  * than one window of columns, tails of both */
			rows = 45;
			cols = 8192 + 53;
		}
		int aligned = iter % 2 == 0;
		int64_t lds = cols + (int64_t)(xs(&s) % 5);
		if (iter == 6 || iter == 8) { /* rows 16 and 32 KiB apart: the streamed
					       * kernel's order for rows on few L2 sets */
			rows = 70;
			cols = 37;
			lds = 4096 * (iter / 2 - 2);
		}
		int64_t ldd = aligned ? (rows + 15) / 16 * 16 + 16 * (int64_t)(xs(&s) % 2)
				      : rows + (int64_t)(xs(&s) % 5);
		int64_t off = aligned ? 0 : 1 + (int64_t)(xs(&s) % 15);
		size_t sbytes = (size_t)(rows * lds) * es, dbytes = (size_t)(cols * ldd + off) * es;
		unsigned char *src = aligned_alloc(64, (sbytes + 63) / 64 * 64);
		unsigned char *dst = aligned_alloc(64, (dbytes + 63) / 64 * 64);
		assert_non_null(src);
		assert_non_null(dst);
		for (size_t b = 0; b < sbytes; b++)
			src[b] = (unsigned char)xs(&s);
		for (int nt = 0; nt < 3; nt++) {
			void (*f)(const void *, int64_t, void *, int64_t, int64_t, int64_t) =
				nt == 2 ? (e == 2 ? ops_kern->transpose_f32_dst_rows : NULL) :
				nt ? ops_kern->transpose_nt[e] : ops_kern->transpose[e];
			if (!f)
				continue;
			memset(dst, 0xA5, dbytes);
			f(src, lds, dst + off * (int64_t)es, ldd, rows, cols);
			for (int64_t j = 0; j < cols; j++)
				for (int64_t i = 0; i < ldd; i++) {
					const unsigned char *d = dst + ((j * ldd + i) + off) * (int64_t)es;
					for (size_t b = 0; b < es; b++) {
						unsigned char want = i < rows ? src[(i * lds + j) * (int64_t)es + (int64_t)b]
									      : 0xA5;
						if (d[b] != want)
							fail_msg("transpose%s es %zu %lldx%lld: (%lld,%lld) wrong",
								 nt == 2 ? "_f32_dst_rows" : nt ? "_nt" : "", es, (long long)rows,
								 (long long)cols, (long long)i, (long long)j);
					}
				}
			for (int64_t b = 0; b < off * (int64_t)es; b++)
				assert_int_equal(dst[b], 0xA5);
		}
		free(src);
		free(dst);
	}
}

/* The chosen path's converting transposes (ops_kern.transpose_half_f32 and
 * transpose_f32_half) for fp16 and bf16 on random shapes with tails that
 * are not multiples of 8, padded rows and random bit patterns (NaN,
 * infinities and subnormals among them): every element equals the scalar
 * conversion's bits, and every element outside the written block keeps
 * its poison. */
static void test_converting_transposes(void **state)
{
	isa_use(state);
	uint64_t s = 91;

	for (int iter = 0; iter < 80; iter++) {
		const enum ops_dtype t = iter % 2 ? OPS_BF16 : OPS_F16;
		const int64_t rows = 1 + (int64_t)(xs(&s) % 70), cols = 1 + (int64_t)(xs(&s) % 70);
		const int64_t lds = cols + (int64_t)(xs(&s) % 5), ldd = rows + (int64_t)(xs(&s) % 5);
		const size_t ns = (size_t)(rows * lds), nd = (size_t)(cols * ldd);
		uint16_t *h = malloc(sizeof *h * (ns > nd ? ns : nd));
		float *f = malloc(sizeof *f * (ns > nd ? ns : nd));
		assert_non_null(h);
		assert_non_null(f);

		/* widening: half source, fp32 destination poisoned */
		for (size_t e = 0; e < ns; e++)
			h[e] = (uint16_t)xs(&s);
		memset(f, 0xA5, sizeof *f * nd);
		ops_kern->transpose_half_f32(t, h, lds, f, ldd, rows, cols);
		for (int64_t j = 0; j < cols; j++)
			for (int64_t i = 0; i < ldd; i++) {
				uint32_t got, want = 0xA5A5A5A5u;
				float w = i < rows ? (t == OPS_BF16 ? ops_bf16_to_f32(h[i * lds + j]) :
							ops_f16_to_f32(h[i * lds + j])) : 0.0f;
				if (i < rows)
					memcpy(&want, &w, 4);
				memcpy(&got, &f[j * ldd + i], 4);
				if (got != want)
					fail_msg("transpose_half_f32 %s %lldx%lld: (%lld,%lld) %08x, want %08x",
						 ops_dtype_name(t), (long long)rows, (long long)cols,
						 (long long)i, (long long)j, got, want);
			}
		/* rounding: fp32 source of random bits, half destination poisoned */
		for (size_t e = 0; e < ns; e++) {
			uint32_t u = (uint32_t)xs(&s);
			memcpy(&f[e], &u, 4);
		}
		for (size_t e = 0; e < nd; e++)
			h[e] = 0xA5A5;
		ops_kern->transpose_f32_half(t, f, lds, h, ldd, rows, cols);
		for (int64_t j = 0; j < cols; j++)
			for (int64_t i = 0; i < ldd; i++) {
				uint16_t want = i >= rows ? 0xA5A5 : t == OPS_BF16 ?
						ops_f32_to_bf16(f[i * lds + j]) : ops_f32_to_f16(f[i * lds + j]);
				if (h[j * ldd + i] != want)
					fail_msg("transpose_f32_half %s %lldx%lld: (%lld,%lld) %04x, want %04x",
						 ops_dtype_name(t), (long long)rows, (long long)cols,
						 (long long)i, (long long)j, h[j * ldd + i], want);
			}
		free(h);
		free(f);
	}
}

/* fp32 transposes with every GLOBAL write streamed: on a path with a
 * streaming transpose the tiles are only counted and each plane is moved in
 * one call (ops/permute.c); the counters stay those of the tiles. Planes
 * whose rows are a multiple of 16 (the streamed stores) with bands of 32
 * rows, a band and a 16-row rest, a rest alone, tail columns, an outer axis
 * walked plane by plane, planes whose rows are not 64-byte aligned (the
 * carry between bands, over more than one window of columns), and source
 * rows 16 and 32 KiB apart (few L2 sets: another order). */
static void test_streamed_planes(void **state)
{
	isa_use(state);
	struct ops_envelope e = test_env(64);
	static const struct {
		int rank;
		int64_t dims[3];
		int perm[3];
	} shapes[] = {
		{ 2, { 64, 45 }, { 1, 0 } },      { 2, { 112, 37 }, { 1, 0 } },
		{ 2, { 48, 100 }, { 1, 0 } },     { 2, { 16, 33 }, { 1, 0 } },
		{ 2, { 32, 1000 }, { 1, 0 } },    { 2, { 70, 45 }, { 1, 0 } },
		{ 3, { 3, 64, 37 }, { 0, 2, 1 } }, { 3, { 2, 40, 33 }, { 0, 2, 1 } },
		{ 3, { 40, 3, 37 }, { 2, 1, 0 } }, { 3, { 96, 2, 17 }, { 1, 2, 0 } },
		{ 2, { 80, 4096 }, { 1, 0 } },    { 2, { 33, 8192 }, { 1, 0 } },
		{ 2, { 33, 9000 }, { 1, 0 } },    { 2, { 95, 70 }, { 1, 0 } },
	};
	static const int64_t tiles[3][2] = { { 0, 0 }, { 5, 7 }, { 16, 64 } };

	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		for (int t = 0; t < 3; t++) {
			struct ops_permute_job j = {
				.rank = shapes[i].rank, .dtype = OPS_F32,
				.tile_rows = tiles[t][0], .tile_cols = tiles[t][1],
				.double_buffer = t != 1
			};
			memcpy(j.dims, shapes[i].dims, sizeof shapes[i].dims);
			memcpy(j.perm, shapes[i].perm, sizeof shapes[i].perm);
			check_job_on(&e, &j, (uint64_t)(10 * i + (size_t)t), NULL, 1);
		}
}

static void test_random_perms(void **state)
{
	isa_use(state);
	struct ops_envelope e = test_env(64);
	static const enum ops_dtype types[] = { OPS_F32, OPS_F16, OPS_BF16, OPS_S8, OPS_U8 };
	uint64_t s = 2024;

	for (int iter = 0; iter < 300; iter++) {
		struct ops_permute_job j = { .rank = 1 + (int)(xs(&s) % 8) };
		for (int i = 0; i < j.rank; i++) {
			j.dims[i] = 1 + (int64_t)(xs(&s) % 4);
			j.perm[i] = i;
		}
		for (int i = j.rank - 1; i > 0; i--) {
			int r = (int)(xs(&s) % (uint64_t)(i + 1)), t = j.perm[i];
			j.perm[i] = j.perm[r];
			j.perm[r] = t;
		}
		j.dtype = types[xs(&s) % 5];
		j.tile_rows = (int64_t)(xs(&s) % 7);
		j.tile_cols = (int64_t)(xs(&s) % 7);
		j.double_buffer = (int)(xs(&s) & 1);
		e.dma_max_last_dim = 1 + (int64_t)(xs(&s) % 5); /* splits everywhere */
		check_job(&e, &j, (uint64_t)iter, NULL);
	}
}

/* Last dimensions around max_last_dim, on both sides of a transpose. */
static void test_long_last_dims(void **state)
{
	isa_use(state);
	struct ops_envelope e = test_env(2048);
	static const int64_t lens[] = { 1, 65535, 65536, 70000, 131071 };
	struct opr_error err = { 0 };
	struct ops_permute_counts c;

	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		int64_t l = lens[i];
		struct ops_permute_job rows = {
			.rank = 2, .dims = { 2, l }, .perm = { 0, 1 }, .dtype = OPS_F16,
			.tile_cols = 2 * l, .double_buffer = 1
		};
		struct ops_permute_job tr = {
			.rank = 2, .dims = { 2, l }, .perm = { 1, 0 }, .dtype = OPS_S8,
			.double_buffer = 0
		};
		struct ops_permute_job tr2 = {
			.rank = 2, .dims = { l, 3 }, .perm = { 1, 0 }, .dtype = OPS_BF16,
			.tile_rows = 3, .tile_cols = l, .double_buffer = 1
		};
		struct ops_permute_job outer = {
			.rank = 3, .dims = { 2, 2, l }, .perm = { 1, 0, 2 }, .dtype = OPS_S8,
			.tile_rows = 1, .tile_cols = l, .double_buffer = 1
		};
		check_job(&e, &rows, 1, NULL);
		check_job(&e, &tr, 2, NULL);
		check_job(&e, &tr2, 3, NULL);
		check_job(&e, &outer, 4, NULL);
		/* by hand: [2, l] identity coalesces to one row of 2l elements,
		 * one tile, ceil(2l / 65535) transfers each way */
		assert_int_equal(ops_permute_expect(&e, &rows, &c, &err), 0);
		uint64_t k = (uint64_t)((2 * l + 65534) / 65535);
		assert_true(c.tiles == 1 && c.transfers == 2 * k && c.splits == 2 * k - 2);
		/* [2, 2, l] (1, 0, 2): rows of l, 4 tiles of one row each */
		if (l > 1) {
			assert_int_equal(ops_permute_expect(&e, &outer, &c, &err), 0);
			k = (uint64_t)((l + 65534) / 65535);
			assert_true(c.tiles == 4 && c.transfers == 4 * 2 * k);
		}
	}
	/* [70000, 2] (1, 0) as one 2 x 70000 tile: the gather [70000, 2] is one
	 * transfer, the scatter [2, 70000] two: 3 transfers, 1 split */
	struct ops_permute_job t1 = {
		.rank = 2, .dims = { 70000, 2 }, .perm = { 1, 0 }, .dtype = OPS_F16,
		.tile_rows = 2, .tile_cols = 70000, .double_buffer = 1
	};
	assert_int_equal(ops_permute_expect(&e, &t1, &c, &err), 0);
	assert_true(c.tiles == 1 && c.transfers == 3 && c.splits == 1);
	check_job(&e, &t1, 5, NULL);
	/* [2, 131071] (1, 0) with the default tile (2 MiB SHARED, 262144 fp16
	 * per buffer): one tile 131071 x 2, gather split in 3, scatter 1 */
	struct ops_permute_job t2 = {
		.rank = 2, .dims = { 2, 131071 }, .perm = { 1, 0 }, .dtype = OPS_F16,
		.double_buffer = 1
	};
	assert_int_equal(ops_permute_expect(&e, &t2, &c, &err), 0);
	assert_true(c.tile_rows == 131071 && c.tile_cols == 2);
	assert_true(c.tiles == 1 && c.transfers == 4 && c.splits == 2);
	check_job(&e, &t2, 6, NULL);
	/* a pinned tile over capacity is refused with the reason */
	struct ops_device *dev = NULL;
	struct ops_permute_job big = t1;
	big.dims[0] = 1 << 20;
	big.tile_cols = 1 << 20;
	assert_int_equal(ops_device_new(&e, 1, &dev, &err), 0);
	assert_int_equal(ops_permute_exec(dev, &big, NULL, NULL, &err), OPR_ELIMIT);
	assert_non_null(strstr(err.msg, "SHARED footprint 4096.0 KiB exceeds capacity 2048.0 KiB"));
	assert_true(ops_device_counters(dev)->launches == 0);
	ops_device_free(dev);
}

/* permute+activation: fused applies the activation in SHARED (one launch),
 * unfused in a second launch; both equal act(permute(x)) computed in fp32. */
static void test_permute_act(void **state)
{
	isa_use(state);
	struct ops_envelope e = test_env(16);
	static const enum ops_dtype types[] = { OPS_F32, OPS_F16, OPS_BF16 };
	static const enum ops_act acts[] = { OPS_ACT_GELU_ERF, OPS_ACT_SILU, OPS_ACT_RELU,
					     OPS_ACT_TANH };
	struct opr_error err = { 0 };

	for (int t = 0; t < 3; t++)
		for (int a = 0; a < 4; a++)
			for (int fused = 0; fused < 2; fused++) {
				struct ops_permute_job j = {
					.rank = 3, .dims = { 9, 40, 33 }, .perm = { 2, 0, 1 },
					.dtype = types[t], .with_act = 1, .act = acts[a],
					.fused = fused, .double_buffer = fused
				};
				int64_t n = count_of(&j);
				size_t es = ops_dtype_size(j.dtype);
				void *x = malloc((size_t)n * es), *ref = malloc((size_t)n * es);
				float *f = malloc((size_t)n * sizeof *f);
				assert_non_null(x);
				assert_non_null(ref);
				assert_non_null(f);
				fill(j.dtype, x, n, 77);
				naive_permute(&j, x, ref);
				ops_to_f32(j.dtype, ref, f, (size_t)n);
				ops_act_f32(j.act, f, f, (size_t)n);
				ops_from_f32(j.dtype, f, ref, (size_t)n);
				check_job(&e, &j, 77, ref);

				struct ops_device *dev = NULL;
				assert_int_equal(ops_device_new(&e, 1, &dev, &err), 0);
				assert_int_equal(ops_permute_exec(dev, &j, NULL, NULL, &err), 0);
				const struct ops_counters *c = ops_device_counters(dev);
				assert_true(c->elem_ops == (uint64_t)n);
				assert_true(c->compute_read_bytes == (uint64_t)n * es);
				size_t nl;
				const struct ops_launch_rec *r = ops_device_launches(dev, &nl);
				assert_int_equal(nl, fused ? 1 : 2);
				assert_string_equal(r[0].name, fused ? "permute+activation" : "permute");
				if (!fused) {
					assert_string_equal(r[1].name, "activation");
					assert_true(r[0].work == 0 && r[1].work == (uint64_t)n);
				}
				ops_device_free(dev);
				free(x);
				free(ref);
				free(f);
			}
}

static void test_zero_and_bad(void **state)
{
	(void)state;
	struct ops_envelope e = test_env(64);
	struct opr_error err = { 0 };
	struct ops_device *dev = NULL;
	struct ops_permute_job j = {
		.rank = 3, .dims = { 3, 0, 70000 }, .perm = { 2, 1, 0 }, .dtype = OPS_F32,
		.with_act = 1, .act = OPS_ACT_RELU, .double_buffer = 1
	};
	float y = 1.5f;

	assert_int_equal(ops_device_new(&e, 0, &dev, &err), 0);
	assert_int_equal(ops_permute_exec(dev, &j, &y, &y, &err), 0);
	assert_true(y == 1.5f);
	const struct ops_counters *c = ops_device_counters(dev);
	assert_true(c->transfers == 0 && c->tiles == 0 && c->launches == 2);
	/* rank 0: one element */
	struct ops_permute_job s0 = { .rank = 0, .dtype = OPS_F32, .double_buffer = 1 };
	float x0 = 2.25f, y0 = NAN;
	ops_device_reset(dev);
	assert_int_equal(ops_permute_exec(dev, &s0, &x0, &y0, &err), 0);
	assert_true(y0 == 2.25f);
	assert_true(c->transfers == 2 && c->tiles == 1);
	/* not a permutation, s8 activation */
	struct ops_permute_job bad = { .rank = 3, .dims = { 2, 2, 2 }, .perm = { 0, 2, 0 },
				       .dtype = OPS_F32 };
	assert_int_equal(ops_permute_exec(dev, &bad, &x0, &y0, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "'perm'"));
	bad.perm[2] = 1;
	bad.dtype = OPS_S8;
	bad.with_act = 1;
	assert_int_equal(ops_permute_exec(dev, &bad, &x0, &y0, &err), OPR_EINPUT);
	ops_device_free(dev);
}

/* Through the workload interface: prepare, run, quality, plans. */
static void test_instances(void **state)
{
	(void)state;
	struct ops_envelope e = test_env(64);
	struct opr_error err = { 0 };
	struct ops_device *dev = NULL;
	struct ops_workload w;
	struct ops_plan plan;
	struct ops_quality q;
	static const enum ops_dtype types[] = { OPS_F32, OPS_BF16, OPS_S8 };

	assert_int_equal(ops_device_new(&e, 0, &dev, &err), 0);
	for (int t = 0; t < 3; t++)
		for (int g = 0; g < 2; g++) {
			if (g && types[t] == OPS_S8)
				continue;
			struct ops_instance *inst = NULL;
			memset(&w, 0, sizeof w);
			w.group = g ? OPS_G_PERMUTE_ACT : OPS_G_PERMUTE;
			w.act = OPS_ACT_GELU_TANH;
			w.dtype = types[t];
			w.tensor.rank = 3;
			w.tensor.dims[0] = 5;
			w.tensor.dims[1] = 7;
			w.tensor.dims[2] = 9;
			w.tensor.perm[0] = 2;
			w.tensor.perm[1] = 0;
			w.tensor.perm[2] = 1;
			memset(&plan, 0, sizeof plan);
			plan.p[0] = 4;
			plan.p[1] = 3;
			plan.double_buffer = 1;
			plan.fused = 1;
			assert_int_equal(ops_impl_permute.check(&w, &err), 0);
			assert_true(ops_impl_permute.bytes(&w) == 2 * 315 * ops_dtype_size(w.dtype));
			assert_int_equal(ops_instance_new(&w, &plan, 11, "blk", &inst, &err), 0);
			assert_int_equal(ops_instance_run(dev, inst, &err), 0);
			assert_int_equal(ops_instance_quality(inst, &q, &err), 0);
			if (!g) {
				struct ops_permute_job j = { .rank = 3, .dims = { 5, 7, 9 },
							     .perm = { 2, 0, 1 }, .dtype = w.dtype };
				char ref[315 * 4];
				naive_permute(&j, ops_instance_tensor(inst, "x")->data, ref);
				size_t nb;
				const void *out = ops_instance_output(inst, &nb);
				assert_int_equal(nb, 315 * ops_dtype_size(w.dtype));
				assert_memory_equal(out, ref, nb);
				assert_true(q.rel_l2 == 0.0);
			} else {
				assert_true(q.rel_l2 > 0.0 && q.rel_l2 < 1e-2);
			}
			if (w.dtype == OPS_S8)
				assert_true(q.exact_int == 1 && q.max_abs_lsb == 0.0);
			/* an unwritten (poisoned) element fails the check */
			struct ops_tensor *y = ops_instance_tensor(inst, "y");
			memset((char *)y->data + 7 * ops_dtype_size(w.dtype), 0xFF,
			       ops_dtype_size(w.dtype));
			assert_int_equal(ops_instance_quality(inst, &q, &err), 0);
			if (w.dtype == OPS_S8)
				assert_true(q.exact_int == 0);
			else
				assert_true(isinf(q.rel_l2));
			ops_instance_free(inst);
		}
	ops_device_free(dev);

	/* candidate plans: positive tiles, the default first */
	struct ops_plan plans[16];
	memset(&w, 0, sizeof w);
	w.group = OPS_G_PERMUTE_ACT;
	w.act = OPS_ACT_RELU;
	w.dtype = OPS_F32;
	w.tensor.rank = 2;
	w.tensor.dims[0] = 4096;
	w.tensor.dims[1] = 70000;
	w.tensor.perm[0] = 1;
	w.tensor.perm[1] = 0;
	size_t np = ops_impl_permute_act.plans(&e, &w, 1, plans, 16);
	assert_true(np >= 4 && np <= 16);
	for (size_t i = 0; i < np; i++) {
		assert_true(plans[i].p[0] > 0 && plans[i].p[1] > 0);
		assert_int_equal(plans[i].fused, 1);
	}
	assert_int_equal(ops_impl_permute_act.plans(&e, &w, 0, plans, 2), 2);
	assert_string_equal(ops_impl_permute.params[1], "tile_cols");
	assert_null(ops_impl_permute.params[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ISA_TESTS(test_all_rank4),
		ISA_TESTS(test_transpose_kernels),
		ISA_TESTS(test_converting_transposes),
		ISA_TESTS(test_streamed_planes),
		ISA_TESTS(test_random_perms),
		ISA_TESTS(test_long_last_dims),
		ISA_TESTS(test_permute_act),
		cmocka_unit_test(test_zero_and_bad),
		cmocka_unit_test(test_instances),
	};

	return cmocka_run_group_tests_name("permute", tests, NULL, NULL);
}
