/* ops/kern_avx2_vnni.c: the AVX2 path's int8 GEMM on a CPU that also has
 * AVX-VNNI (the VEX-encoded vpdpbusd on ymm: Alder Lake and later client
 * cores, Sierra Forest and other E-core Xeons, which have no AVX-512, and
 * every AVX-512 core since Sapphire Rapids, where the AVX2 path runs only
 * when forced). One vpdpbusd adds four u8 x s8 products into each of eight
 * int32 lanes without saturating: 32 products an instruction and no
 * separate add, where the exact AVX2 kernel (ops/kern_avx2.c) widens bytes
 * to int16 and needs a vpmaddwd and a vpaddd for 16. ops/isa.c puts it in
 * the AVX2 table on such a host (ops_kern_avx2_with_vnni); the whole file
 * is compiled for that ISA by the pragma below, whatever the build flags.
 *
 * Exact as qgemm_int.h requires: a lane sums one K chunk's products
 * (OPS_QGEMM_KC / 8 = 128 of at most 255 * 128), the chunk's sum goes into
 * c as int32, and kk <= OPS_QGEMM_MAX_TILE_KK bounds the total. An s8 A is
 * copied as a ^ 0x80 = a + 128 (u8) and 128 * (the column's sum over the
 * chunk) comes off each chunk's sum; that sum comes from a vector of ones
 * against the same B loads. */
#include "isa_int.h"
#include "qgemm_int.h"

#include <immintrin.h>
#include <string.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), \
			     apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
#endif

/* The copy of A's chunk: rows OPS_QGEMM_KC bytes apart in the caller's a16
 * scratch (m * KC int16, so twice what it needs), zero from the chunk's end
 * to the next multiple of 32. */
#define AV_PITCH OPS_QGEMM_KC

static int32_t av_hsum(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
	return _mm_cvtsi128_si32(s);
}

/* acc += the four-byte dot products of u8 a and s8 b, lane by lane. In
 * assembly: with _mm256_dpbusd_avx_epi32 gcc 12 copied every accumulator
 * to another register and back each step (and spilled one), as it did for
 * the AVX-512 kernel's; the constraint "+x" keeps each in its register. */
#define AV_DP(acc, a, b) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b))

/* y<k> += row k of the copy (at column offset q) against b, for k < R */
#define AV_ROW(k)                                                                        \
	do {                                                                             \
		if (R > k)                                                               \
			AV_DP(y##k, _mm256_load_si256((const __m256i *)(ac + k * AV_PITCH + q)), b); \
	} while (0)
#define AV_ROWS()                                                                        \
	do {                                                                             \
		AV_ROW(0);                                                               \
		AV_ROW(1);                                                               \
		AV_ROW(2);                                                               \
		AV_ROW(3);                                                               \
		AV_ROW(4);                                                               \
		AV_ROW(5);                                                               \
		AV_ROW(6);                                                               \
		AV_ROW(7);                                                               \
		if (sums)                                                                \
			AV_DP(s, ones, b);                                               \
	} while (0)
#define AV_OUT(k)                                                                        \
	do {                                                                             \
		if (R > k)                                                               \
			out[k] = av_hsum(y##k);                                          \
	} while (0)

/* out[r] = sum over the chunk of row r of the copy ac against column bj
 * (len bytes; the last partial 32 through a zero-padded copy, so no load
 * reads past B), r < R; *sum = the column's sum over it when sums. B is
 * loaded once for the R rows; A's rows come from L1. The accumulators are
 * named variables. */
static inline __attribute__((always_inline)) void av_dot(int R, int sums, const uint8_t *ac,
							  const int8_t *bj, int64_t len,
							  int32_t *out, int32_t *sum)
{
	const __m256i ones = _mm256_set1_epi8(1), z = _mm256_setzero_si256();
	__m256i y0 = z, y1 = z, y2 = z, y3 = z, y4 = z, y5 = z, y6 = z, y7 = z, s = z;
	int64_t q = 0;

	for (; q + 32 <= len; q += 32) {
		const __m256i b = _mm256_loadu_si256((const __m256i *)(bj + q));
		AV_ROWS();
	}
	if (q < len) {
		int8_t t[32] __attribute__((aligned(32))) = { 0 };
		memcpy(t, bj + q, (size_t)(len - q));
		const __m256i b = _mm256_load_si256((const __m256i *)t);
		AV_ROWS();
	}
	AV_OUT(0);
	AV_OUT(1);
	AV_OUT(2);
	AV_OUT(3);
	AV_OUT(4);
	AV_OUT(5);
	AV_OUT(6);
	AV_OUT(7);
	if (sums)
		*sum = av_hsum(s);
}

/* One function per row count and with or without the sum, so that each
 * keeps its accumulators in registers (inlined into one loop, gcc had
 * shared the AVX-512 kernel's registers between shapes: ops/kern_avx512.c,
 * vp_block). */
typedef void (*av_dot_fn)(const uint8_t *ac, const int8_t *bj, int64_t len, int32_t *out,
			  int32_t *sum);
#define AV_DOT_FN(R)                                                                     \
	static __attribute__((noinline)) void av_dot##R##_s(const uint8_t *ac, const int8_t *bj, \
							    int64_t len, int32_t *out,         \
							    int32_t *sum)                      \
	{                                                                                \
		av_dot(R, 1, ac, bj, len, out, sum);                                     \
	}                                                                                \
	static __attribute__((noinline)) void av_dot##R##_n(const uint8_t *ac, const int8_t *bj, \
							    int64_t len, int32_t *out,         \
							    int32_t *sum)                      \
	{                                                                                \
		av_dot(R, 0, ac, bj, len, out, sum);                                     \
	}
AV_DOT_FN(1)
AV_DOT_FN(2)
AV_DOT_FN(3)
AV_DOT_FN(4)
AV_DOT_FN(5)
AV_DOT_FN(6)
AV_DOT_FN(7)
AV_DOT_FN(8)

static const av_dot_fn AV_DOT_SUM[9] = {
	NULL, av_dot1_s, av_dot2_s, av_dot3_s, av_dot4_s, av_dot5_s, av_dot6_s, av_dot7_s, av_dot8_s
};
static const av_dot_fn AV_DOT[9] = {
	NULL, av_dot1_n, av_dot2_n, av_dot3_n, av_dot4_n, av_dot5_n, av_dot6_n, av_dot7_n, av_dot8_n
};

/* Rows [0, m) of A's columns [c0, c0 + len) into ac, AV_PITCH apart, as u8
 * (an s8 A flipped), zero to the next multiple of 32. */
static void av_copy_a(int s8a, const void *a, int64_t lda, int64_t m, int64_t c0, int64_t len,
		      uint8_t *ac)
{
	const __m256i flip = _mm256_set1_epi8((char)0x80);
	const int64_t padded = (len + 31) / 32 * 32;

	for (int64_t r = 0; r < m; r++) {
		const uint8_t *src = (const uint8_t *)a + r * lda + c0;
		uint8_t *d = ac + r * AV_PITCH;
		int64_t q = 0;

		for (; q + 32 <= len; q += 32) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(src + q));
			_mm256_store_si256((__m256i *)(d + q), s8a ? _mm256_xor_si256(v, flip) : v);
		}
		for (; q < len; q++)
			d[q] = s8a ? (uint8_t)(src[q] ^ 0x80) : src[q];
		memset(d + len, 0, (size_t)(padded - len));
	}
}

static void avxvnni_qgemm(enum ops_dtype at, const void *a, int64_t lda, const int8_t *b,
			  int64_t ldb, int64_t m, int64_t tn, int64_t kk, int32_t *c, int32_t *cs,
			  int16_t *a16)
{
	uint8_t *ac = (uint8_t *)a16;
	const int s8a = at != OPS_U8, sums = s8a || cs;
	int32_t part[8], colsum = 0;

	memset(c, 0, (size_t)(m * tn) * sizeof *c);
	if (cs)
		memset(cs, 0, (size_t)tn * sizeof *cs);
	for (int64_t c0 = 0; c0 < kk; c0 += OPS_QGEMM_KC) {
		int64_t len = kk - c0 < OPS_QGEMM_KC ? kk - c0 : OPS_QGEMM_KC;
		av_copy_a(s8a, a, lda, m, c0, len, ac);
		/* j outer: a column's chunk is read from memory once and reused
		 * from L1 by every row block; the copy of A (m KiB) stays in L1 */
		for (int64_t j = 0; j < tn; j++) {
			const int8_t *bj = b + j * ldb + c0;
			/* the column's next chunk into L2 a chunk ahead, as the
			 * exact AVX2 kernel does (ops/kern_avx2.c: the hardware
			 * prefetcher does not follow a new page every 1 KiB) */
			for (int64_t o = 0; o < len; o += 64)
				_mm_prefetch((const char *)(bj + len + o), _MM_HINT_T1);
			for (int64_t i0 = 0; i0 < m; i0 += 8) {
				const int R = m - i0 < 8 ? (int)(m - i0) : 8;
				const int first = i0 == 0;
				(first && sums ? AV_DOT_SUM : AV_DOT)[R](ac + i0 * AV_PITCH, bj, len,
									 part, &colsum);
				for (int r = 0; r < R; r++)
					c[(i0 + r) * tn + j] += s8a ? part[r] - 128 * colsum : part[r];
			}
			if (cs)
				cs[j] += colsum;
		}
	}
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* The AVX2 table with this int8 GEMM (ops/isa.c builds it once). Compiled
 * for the baseline, outside the pragma: it runs on any CPU (the tests
 * build the table everywhere). */
void ops_avx2_vnni_fill(struct ops_kern *t)
{
	t->qgemm = avxvnni_qgemm;
	t->path[OPS_KF_QGEMM] = "avx2 (avx-vnni vpdpbusd on ymm, B read in place)";
}
