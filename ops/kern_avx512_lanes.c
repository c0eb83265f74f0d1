/* ops/kern_avx512_lanes.c: the AVX-512 fp32 direct conv kernel with the
 * output channels along the zmm lanes (isa_int.h, conv_direct_lanes), as
 * oneDNN's brgemm convolutions lay them out: a block is a run of pixels of
 * one output row, each pixel one zmm of 16 channels' sums, and the input
 * comes in as embedded broadcasts. Compiled for AVX-512 by the pragma below
 * whatever the build flags; reached only through ops_kern_avx512 on a host
 * that has it (ops/isa.c). */
#include "isa_int.h"

#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

#include "kern_avx512_inl.h"

/* Pixels per block, at most: 28 accumulators, the weight vector and three
 * registers to spare. Per term, one 64-byte weight load feeds CL_NP FMAs
 * whose x operand is an embedded broadcast: 29 loads to 28 FMAs. On this
 * host that mix ran at ~90% of register-only FMAs (an asm loop of it); the
 * kernel, in the bench's launch, at ~184 GFLOP/s. Pairs of pixels by 64-bit
 * broadcasts (16 loads to 28 FMAs, the weights twice over) were no faster
 * in the launch. The pixel-vector kernel (kern_avx512_conv.c) lost ~7% of
 * its lanes to the halo columns between rows and its result went through
 * a copy into y; here every lane is an output and the block is transposed
 * in registers straight into y's rows. */
#define CL_NP 28

/* Terms per pass, and blocks per group: a group's sums are stored in an
 * L1 scratch and taken up again every CL_TERMS terms, so that one pass
 * reads 32 channels of a 3x3 patch's rows and their weights (18 KiB) and
 * these stay in L1 across the group's blocks (a tile's 8 rows on the
 * bench): 5% faster on the bench's 576-term tiles than one pass over all
 * terms, whose 36 KiB of weights and 23 KiB of patch rows a block did not
 * fit in the 48 KiB L1 (72 and 144 terms: 0-8% slower than 288, noisy). */
#define CL_TERMS 288
#define CL_GROUP 8

/* The terms of a block, TERM(offset, weights) each: four an iteration, by
 * pointers (the loop's integer uops share ports 0 and 5 with the FMAs; one
 * term an iteration, or gcc's unrolling with its index arithmetic, was
 * 5-10% slower). */
#define LANES_TERMS(TERM)                                                               \
	do {                                                                            \
		const int32_t *o = off, *oe = off + nterm;                              \
		const float *wt = wp;                                                   \
                                                                                        \
		for (; oe - o >= 4; o += 4, wt += 64) {                                 \
			TERM(o[0], wt);                                                 \
			TERM(o[1], wt + 16);                                            \
			TERM(o[2], wt + 32);                                            \
			TERM(o[3], wt + 48);                                            \
		}                                                                       \
		for (; o < oe; o++, wt += 16)                                           \
			TERM(o[0], wt);                                                 \
	} while (0)

/* The accumulators are named variables, not an array (gcc kept an array
 * of them on the stack, stored back every term); M(p) for p < 28. */
#define CL_ALL(M)                                                                       \
	do {                                                                            \
		M(0); M(1); M(2); M(3); M(4); M(5); M(6);                               \
		M(7); M(8); M(9); M(10); M(11); M(12); M(13);                           \
		M(14); M(15); M(16); M(17); M(18); M(19); M(20);                        \
		M(21); M(22); M(23); M(24); M(25); M(26); M(27);                        \
	} while (0)
#define CL_FMA(p)                                                                       \
	do {                                                                            \
		if (NP > p)                                                             \
			a##p = _mm512_fmadd_ps(_mm512_set1_ps(xp[p]), w, a##p);         \
	} while (0)
/* One term: its weight vector wv, and x + offset o in a register of its
 * own: with x + off[i] folded into each FMA's address (the indexed form),
 * every FMA was un-laminated into two uops at issue (11% slower). */
#define CL_TERM(o, wv)                                                                  \
	do {                                                                            \
		const float *xp = x + (o);                                              \
		const __m512 w = _mm512_loadu_ps(wv);                                   \
                                                                                        \
		__asm__("" : "+r"(xp));                                                 \
		CL_ALL(CL_FMA);                                                         \
	} while (0)
/* Accumulator acc##p plus the bias vector bv (where there is a bias) into
 * r[p], the transpose's input row. */
#define LANES_OUT(acc, bv, p)                                                           \
	do {                                                                            \
		if (NP > p)                                                             \
			r[p] = bias ? _mm512_add_ps(acc##p, bv) : acc##p;               \
	} while (0)
#define CL_OUT(p) LANES_OUT(a, b, p)

/* Pixels [0, NP) of one 16 x 16 half of a block, r[0..NP), as y's rows:
 * o[k] holds channel k's pixels, stored for k < nk only, the lanes past NP
 * masked (their rows r[] zero here). */
ALWAYS_INLINE void cl_store(const int NP, __m512 *r, int nk, float *y, int64_t ldk)
{
	__m512 o[16];

	for (int p = NP; p < 16; p++)
		r[p] = _mm512_setzero_ps();
	tr16_regs(r, o);
	for (int k = 0; k < nk; k++)
		if (NP >= 16)
			_mm512_storeu_ps(y + k * ldk, o[k]);
		else
			_mm512_mask_storeu_ps(y + k * ldk, (__mmask16)((1u << NP) - 1u), o[k]);
}

#define CL_LOAD(p)                                                                      \
	do {                                                                            \
		if (NP > p)                                                             \
			a##p = _mm512_load_ps(sin + 16 * p);                            \
	} while (0)
#define CL_SAVE(p)                                                                      \
	do {                                                                            \
		if (NP > p)                                                             \
			_mm512_store_ps(sout + 16 * p, a##p);                           \
	} while (0)

/* One block of NP (1..28) pixels, x[off[i] + p] for p < NP, over nterm
 * terms: the sums from sin[16*p + k] (or from 0 where sin is NULL) in term
 * order, then either left in sout (not NULL) for the next terms, or plus
 * bias[k] (where bias is not NULL: epilogue_f32's add) into y[k*ldk + p]. */
ALWAYS_INLINE void cl_block(const int NP, const float *x, const int32_t *off, int64_t nterm,
			    const float *wp, const float *sin, float *sout, const float *bias,
			    int nk, float *y, int64_t ldk)
{
	const __m512 z = _mm512_setzero_ps();
	__m512 a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z;
	__m512 a7 = z, a8 = z, a9 = z, a10 = z, a11 = z, a12 = z, a13 = z;
	__m512 a14 = z, a15 = z, a16 = z, a17 = z, a18 = z, a19 = z, a20 = z;
	__m512 a21 = z, a22 = z, a23 = z, a24 = z, a25 = z, a26 = z, a27 = z;
	__m512 r[32], b = z;

	if (sin)
		CL_ALL(CL_LOAD);
	LANES_TERMS(CL_TERM);
	if (sout) {
		CL_ALL(CL_SAVE);
		return;
	}
	if (bias)
		b = _mm512_maskz_loadu_ps((__mmask16)((1u << nk) - 1u), bias);
	CL_ALL(CL_OUT);
	cl_store(NP < 16 ? NP : 16, r, nk, y, ldk);
	if (NP > 16)
		cl_store(NP - 16, r + 16, nk, y + 16, ldk);
}

/* Two weight vectors a term (32 channels, nk > 16): 14 pixels a block, 28
 * accumulators, each input element broadcast once into a register and
 * used by both vectors' FMAs. Per term 2 weight loads and 14 broadcasts
 * feed 28 FMAs: 16 loads to 28 against the one-vector block's 29 (oneDNN's
 * fp32 brgemm blocks 4 vectors x 6 pixels for the same reason). A C loop
 * of each mix, L1-resident, best of 7 on this host: 183-186 against
 * 168-173 GFLOP/s; the full block of 14 takes its terms in asm
 * (c2_terms14, ~210). The vector-1 weights lie ldv floats after vector 0's. */
#define C2_NP 14
#define C2_ALL(M)                                                                       \
	do {                                                                            \
		M(0); M(1); M(2); M(3); M(4); M(5); M(6);                               \
		M(7); M(8); M(9); M(10); M(11); M(12); M(13);                           \
	} while (0)
#define C2_FMA(p)                                                                       \
	do {                                                                            \
		if (NP > p) {                                                           \
			const __m512 s_ = _mm512_set1_ps(xp[p]);                        \
			a##p = _mm512_fmadd_ps(s_, w0, a##p);                           \
			b##p = _mm512_fmadd_ps(s_, w1, b##p);                           \
		}                                                                       \
	} while (0)
#define C2_TERM(o, wv)                                                                  \
	do {                                                                            \
		const float *xp = x + (o);                                              \
		const __m512 w0 = _mm512_loadu_ps(wv);                                   \
		const __m512 w1 = _mm512_loadu_ps((wv) + ldv);                           \
                                                                                        \
		__asm__("" : "+r"(xp));                                                 \
		C2_ALL(C2_FMA);                                                         \
	} while (0)
#define C2_LOAD(p)                                                                      \
	do {                                                                            \
		if (NP > p) {                                                           \
			a##p = _mm512_load_ps(sin + 32 * p);                            \
			b##p = _mm512_load_ps(sin + 32 * p + 16);                       \
		}                                                                       \
	} while (0)
#define C2_SAVE(p)                                                                      \
	do {                                                                            \
		if (NP > p) {                                                           \
			_mm512_store_ps(sout + 32 * p, a##p);                           \
			_mm512_store_ps(sout + 32 * p + 16, b##p);                      \
		}                                                                       \
	} while (0)
#define C2_OUTA(p) LANES_OUT(a, ba, p)
#define C2_OUTB(p) LANES_OUT(b, bb, p)

/* The 14-pixel block's terms in asm: gcc's code for C2_TERM kept two of
 * the 28 accumulators on the stack (a load and a store a term each, on the
 * loop's critical path) and reached ~185 GFLOP/s in a loop alone on this
 * host, where this one, zmm0-13 and zmm14-27 the two vectors' sums, zmm28
 * and zmm29 their weights, zmm30 and zmm31 the broadcasts in turn, ran at
 * ~210 (the register-only FMA loop: 214-218). The sums come from sin
 * (NULL: zero) and go to sout, 32 floats a pixel as C2_SAVE lays them out;
 * ldvb is ldv in bytes. */
#define C2A_PX(p, q, s)                                                                 \
	"vbroadcastss " #p "*4(%[x],%%rax,4), %%zmm" #s "\n\t"                         \
	"vfmadd231ps %%zmm28, %%zmm" #s ", %%zmm" #p "\n\t"                            \
	"vfmadd231ps %%zmm29, %%zmm" #s ", %%zmm" #q "\n\t"
#define C2A_FETCH(p, q)                                                                 \
	"vmovaps " #p "*128(%[si]), %%zmm" #p "\n\t"                                   \
	"vmovaps " #p "*128+64(%[si]), %%zmm" #q "\n\t"
#define C2A_ZERO(p, q)                                                                  \
	"vpxord %%zmm" #p ", %%zmm" #p ", %%zmm" #p "\n\t"                             \
	"vpxord %%zmm" #q ", %%zmm" #q ", %%zmm" #q "\n\t"
#define C2A_SAVE(p, q)                                                                  \
	"vmovaps %%zmm" #p ", " #p "*128(%[so])\n\t"                                   \
	"vmovaps %%zmm" #q ", " #p "*128+64(%[so])\n\t"
/* M(p, q) for pixel p, its sums in zmm p and zmm q = p + 14 */
#define C2A_ALL(M)                                                                      \
	M(0, 14) M(1, 15) M(2, 16) M(3, 17) M(4, 18) M(5, 19) M(6, 20)                  \
	M(7, 21) M(8, 22) M(9, 23) M(10, 24) M(11, 25) M(12, 26) M(13, 27)

static void c2_terms14(const float *x, const int32_t *off, int64_t nterm, const float *wp,
		       int64_t ldv, const float *sin, float *sout)
{
	const int64_t ldvb = ldv * (int64_t)sizeof(float);

	__asm__ volatile("test %[si], %[si]\n\t"
			 "jz 1f\n\t" C2A_ALL(C2A_FETCH) "jmp 2f\n"
			 "1:\n\t" C2A_ALL(C2A_ZERO)
			 "2:\n\t"
			 "test %[n], %[n]\n\t"
			 "jle 4f\n"
			 "3:\n\t"
			 "movslq (%[o]), %%rax\n\t"
			 "vmovups (%[w]), %%zmm28\n\t"
			 "vmovups (%[w],%[ldvb]), %%zmm29\n\t"
			 C2A_PX(0, 14, 30) C2A_PX(1, 15, 31) C2A_PX(2, 16, 30)
			 C2A_PX(3, 17, 31) C2A_PX(4, 18, 30) C2A_PX(5, 19, 31)
			 C2A_PX(6, 20, 30) C2A_PX(7, 21, 31) C2A_PX(8, 22, 30)
			 C2A_PX(9, 23, 31) C2A_PX(10, 24, 30) C2A_PX(11, 25, 31)
			 C2A_PX(12, 26, 30) C2A_PX(13, 27, 31)
			 "add $4, %[o]\n\t"
			 "add $64, %[w]\n\t"
			 "dec %[n]\n\t"
			 "jnz 3b\n"
			 "4:\n\t" C2A_ALL(C2A_SAVE)
			 : [o] "+r"(off), [w] "+r"(wp), [n] "+r"(nterm)
			 : [x] "r"(x), [ldvb] "r"(ldvb), [si] "r"(sin), [so] "r"(sout)
			 : "rax", "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
			   "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
			   "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",
			   "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29",
			   "xmm30", "xmm31");
}

/* cl_block with two weight vectors: NP (1..14) pixels, channels [0, nk)
 * for 16 < nk <= 32; the scratch sin/sout holds 32 sums a pixel. */
ALWAYS_INLINE void c2_block(const int NP, const float *x, const int32_t *off, int64_t nterm,
			    const float *wp, int64_t ldv, const float *sin, float *sout,
			    const float *bias, int nk, float *y, int64_t ldk)
{
	const __m512 z = _mm512_setzero_ps();
	__m512 a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z;
	__m512 a7 = z, a8 = z, a9 = z, a10 = z, a11 = z, a12 = z, a13 = z;
	__m512 b0 = z, b1 = z, b2 = z, b3 = z, b4 = z, b5 = z, b6 = z;
	__m512 b7 = z, b8 = z, b9 = z, b10 = z, b11 = z, b12 = z, b13 = z;
	__m512 r[16], ba = z, bb = z;

	if (NP == C2_NP) {
		float acc[C2_NP * 32] __attribute__((aligned(64)));

		c2_terms14(x, off, nterm, wp, ldv, sin, sout ? sout : acc);
		if (sout)
			return;
		sin = acc;
		C2_ALL(C2_LOAD);
	} else {
		if (sin)
			C2_ALL(C2_LOAD);
		LANES_TERMS(C2_TERM);
		if (sout) {
			C2_ALL(C2_SAVE);
			return;
		}
	}
	if (bias) {
		ba = _mm512_loadu_ps(bias);
		bb = _mm512_maskz_loadu_ps((__mmask16)((1u << (nk - 16)) - 1u), bias + 16);
	}
	C2_ALL(C2_OUTA);
	cl_store(NP, r, 16, y, ldk);
	C2_ALL(C2_OUTB);
	cl_store(NP, r, nk - 16, y + 16 * ldk, ldk);
}

/* The block sizes compiled: the widest (28 pixels with one weight vector,
 * 14 with two), then a multiple of 4, then 1 to 3, so that any run is
 * whole blocks plus at most two smaller ones. */
static int cl_np(int64_t left, int widest)
{
	if (left >= widest)
		return widest;
	return left >= 4 ? (int)(left & ~(int64_t)3) : (int)left;
}

#define CL_CASE(NP)                                                                     \
	case NP:                                                                        \
		cl_block(NP, x, off, nterm, wp, sin, sout, bias, nk, y, ldk);           \
		break
#define C2_CASE(NP)                                                                     \
	case NP:                                                                        \
		c2_block(NP, x, off, nterm, wp, ldv, sin, sout, bias, nk, y, ldk);      \
		break

static void cl_dispatch(int np, const float *x, const int32_t *off, int64_t nterm,
			const float *wp, int64_t ldv, const float *sin, float *sout,
			const float *bias, int nk, float *y, int64_t ldk)
{
	if (nk > 16) {
		switch (np) {
		C2_CASE(14);
		C2_CASE(12);
		C2_CASE(8);
		C2_CASE(4);
		C2_CASE(3);
		C2_CASE(2);
		C2_CASE(1);
		default:
			break;
		}
		return;
	}
	switch (np) {
	CL_CASE(28);
	CL_CASE(24);
	CL_CASE(20);
	CL_CASE(16);
	CL_CASE(12);
	CL_CASE(8);
	CL_CASE(4);
	CL_CASE(3);
	CL_CASE(2);
	CL_CASE(1);
	default:
		break;
	}
}

/* A group of blocks, at most CL_GROUP, that take the terms together. */
struct cl_blk {
	const float *x;
	float *y;
	int np;
};

/* Terms a pass with two weight vectors: the same 18 KiB of weights a pass
 * as CL_TERMS with one. */
#define C2_TERMS (CL_TERMS / 2)

void ops_avx512_conv_direct_lanes(const float *x, int64_t ldx, const int32_t *off, int64_t nterm,
				  const float *wp, int64_t ldv, int nk, int64_t nrow, int64_t nq,
				  const float *bias, float *y, int64_t ldk, int64_t ldr)
{
	float s[CL_GROUP][CL_NP * 16] __attribute__((aligned(64)));
	struct cl_blk b[CL_GROUP];
	const int two = nk > 16, widest = two ? C2_NP : CL_NP;
	const int64_t pass = two ? C2_TERMS : CL_TERMS;
	int64_t r = 0, q0 = 0;

	if (nq <= 0)
		return;
	while (r < nrow) {
		int nb = 0;
		int64_t t0 = 0;

		for (; nb < CL_GROUP && r < nrow; nb++) {
			b[nb].np = cl_np(nq - q0, widest);
			b[nb].x = x + r * ldx + q0;
			b[nb].y = y + r * ldr + q0;
			q0 += b[nb].np;
			if (q0 == nq) {
				q0 = 0;
				r++;
			}
		}
		do {
			int64_t nt = nterm - t0 < pass ? nterm - t0 : pass;
			int last = t0 + nt >= nterm;

			for (int i = 0; i < nb; i++)
				cl_dispatch(b[i].np, b[i].x, off + t0, nt, wp + 16 * t0, ldv,
					    t0 ? s[i] : NULL, last ? NULL : s[i], bias, nk, b[i].y,
					    ldk);
			t0 += nt;
		} while (t0 < nterm);
	}
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
