/* ops/isa_int.h: the host kernel table, one per ISA path (portable C, AVX2,
 * AVX-512), and the pointer to the chosen one. For the files of ops/ and the
 * tests only. The kernels of a path live in ops/kern_<isa>.c, compiled for
 * that ISA by a target pragma whatever the build flags, and are reached only
 * through ops_kern once the host has been checked (ops/isa.c). */
#ifndef OPS_ISA_INT_H
#define OPS_ISA_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops.h"

/* d[0..w) = s[0..w) and d[n-w..n) = s[n-w..n) for w <= n (w 16, 8 or 4, a
 * constant: each memcpy one move). */
static inline __attribute__((always_inline)) void ops_copy_ends(unsigned char *d,
								const unsigned char *s,
								size_t n, size_t w)
{
	unsigned char a[16], b[16];

	memcpy(a, s, w);
	memcpy(b, s + n - w, w);
	memcpy(d, a, w);
	memcpy(d + n - w, b, w);
}

/* A row of n < 32 bytes for the paths' copy_rows: two overlapping moves of
 * the largest of 16, 8 and 4 bytes <= n, else byte by byte; no byte
 * outside the row is written. */
static inline void ops_copy_short(unsigned char *d, const unsigned char *s, size_t n)
{
	if (n >= 16)
		ops_copy_ends(d, s, n, 16);
	else if (n >= 8)
		ops_copy_ends(d, s, n, 8);
	else if (n >= 4)
		ops_copy_ends(d, s, n, 4);
	else
		for (size_t j = 0; j < n; j++)
			d[j] = s[j];
}

/* (channel block, tap) steps of one conv_bf16_cl call, at most. */
#define OPS_CL_MAX_STEPS 1024

/* One job of ops_kern.conv_bf16_cl: an nr x ncol block of outputs for nk
 * (1..32) output channels from input xn and weights b (channels 0..15)
 * and b2 (16..31, where nk > 16), into out or (not NULL) y. */
struct ops_cl_job {
	const uint16_t *xn, *b, *b2;
	float *out;
	uint16_t *y;
	int nk;
	int64_t nr, ncol;
};

/* Pixels per block of the direct conv kernel, at most (ops_kern.direct_pb). */
#define OPS_KERN_MAX_PB 16

struct ops_kern {
	enum ops_isa isa;
	const char *path[OPS_NKFAMS];   /* what ops_kfam_path says */

	/* conv2d direct: a block of output pixels x one or two 16-channel weight
	 * panels in registers. For i < nterm, with kw = 16 (wstride 0: one
	 * panel, direct_pb[0] pixels) or 32 (direct_pb[1] pixels):
	 *   out[p*kw + k]      += pix[p][off[i]] * wp[16*i + k]            k < 16
	 *   out[p*kw + 16 + k] += pix[p][off[i]] * wp[wstride + 16*i + k]  (kw 32)
	 * out overwritten (starts at 0). direct_pb[1] == 0: no two-panel kernel
	 * (the caller passes one panel at a time). */
	int direct_pb[2];
	void (*conv_direct)(const float *const *pix, const int32_t *off, int64_t nterm,
			    const float *wp, int64_t wstride, float *out);
	/* conv2d direct over a run of nq output pixels one input element apart
	 * (unit stride along w; rows of a tile laid end to end at the patch's
	 * row pitch), pixels along the vector lanes, the weights as rows
	 * wp[k*ldw + i] (the KCRS rows of the tile's channels, as the DMA
	 * brings them): for k < nk (1..16), q < nq,
	 *   out[k*ldo + q] = sum_{i < nterm} x[off[i] + q] * wp[k*ldw + i]
	 * reading x[off[i] + q] for q < nq only. NULL: the path has none and
	 * conv_direct runs every tile. */
	void (*conv_direct_px)(const float *x, const int32_t *off, int64_t nterm,
			       const float *wp, int64_t ldw, int nk, int64_t nq, float *out,
			       int64_t ldo);
	/* conv2d direct on fp32 with the output channels along the vector
	 * lanes, for nrow output rows of nq pixels one input element apart
	 * (unit stride along w), input rows ldx apart, the weights of up to
	 * two 16-channel vectors, ldv floats apart, 16 per term (best 64-byte
	 * aligned): channel k's weight of term i is
	 *   wk(i) = wp[(k / 16) * ldv + 16*i + k % 16]
	 * and for r < nrow, k < nk (1..32), q < nq,
	 *   y[k*ldk + r*ldr + q] = sum_{i < nterm} x[r*ldx + off[i] + q] * wk(i)
	 *                          (+ bias[k] where bias is not NULL)
	 * the sum from 0 in term order (one rounding per FMA), the bias added
	 * once after it; reading x[r*ldx + off[i] + q] for q < nq only (and
	 * the second vector only where nk > 16), writing only those elements
	 * of y. NULL: the path has none. */
	void (*conv_direct_lanes)(const float *x, int64_t ldx, const int32_t *off, int64_t nterm,
				  const float *wp, int64_t ldv, int nk, int64_t nrow, int64_t nq,
				  const float *bias, float *y, int64_t ldk, int64_t ldr);
	/* The same on bf16 storage with fp32 sums, the weights as rows
	 * a[k*lda + i] (lda >= nterm rounded up to 32, zero past nterm):
	 *   out[k*ldo + q] = sum_{i < nterm} x[off[i] + q] * a[k*lda + i]
	 * Only where conv_bf16_ready() says the host runs it; NULL: bf16 is
	 * widened to fp32 for conv_direct_px / conv_direct. */
	void (*conv_direct_bf16)(const uint16_t *x, const int32_t *off, int64_t nterm,
				 const uint16_t *a, int64_t lda, int nk, int64_t nq, float *out,
				 int64_t ldo);
	int (*conv_bf16_ready)(void);
	/* The same by channel pairs (where conv_bf16_ready() says so; NULL:
	 * none): pack_pairs lays channels [0, nc) of a bf16 patch
	 * x[c*plane_in + p] (p < np) out as xp[(pair*plane + p)*2 + j] =
	 * channel 2*pair + j, the channels from nc to 2*npair zero; then, with
	 * x[c][p] that patch and a[((cb*ntap + t)*16 + k)*32 + c%32] the
	 * weights of channel block cb = c/32 and tap t (16 rows of 32, zero
	 * past nk and past nc), for k < nk (1..16), q < nq:
	 *   out[k*ldo + q] = sum_{cb < ncb, t < ntap, c} x[32*cb + c][toff[t] + q]
	 *                                             * a[((cb*ntap + t)*16 + k)*32 + c]
	 * reading xp up to pair 16*ncb - 1 at position toff[t] + nq rounded up
	 * to 16 (the caller keeps that in the buffer and finite); writing only
	 * k < nk, q < nq. One packing serves every tap, where conv_direct_bf16
	 * packs each term. */
	void (*conv_bf16_pack_pairs)(const uint16_t *x, int64_t plane_in, int64_t nc, int64_t np,
				     uint16_t *xp, int64_t plane, int64_t npair);
	void (*conv_bf16_pairs)(const uint16_t *xp, int64_t plane, int ncb, const int32_t *toff,
				int ntap, const uint16_t *a, int nk, int64_t nq, float *out,
				int64_t ldo);
	/* The same with the input in channel-last blocks (where
	 * conv_bf16_ready() says so; NULL: none), over njob jobs (struct
	 * ops_cl_job) in one call: xn[(cb*cbs + p)*32 + c] = channel 32*cb + c
	 * at position p of the job's input (zero past the channels), and
	 * b[((cb*ntap + t)*16 + pr)*32 + 2*k + j] the weight of output channel
	 * k, channel 32*cb + 2*pr + j, tap t (zero past nk and the channels);
	 * b2 the same for output channels 16 + k (where nk > 16). For k < nk
	 * (1..32), r < nr, c < ncol, with p = r*rp + c*cs + toff[t] and bk = b
	 * for k < 16, else b2 at channel k - 16:
	 *   out[k*ldo + r*ncol + c] = sum_{cb < ncb, t < ntap, ch < 32}
	 *       xn[(cb*cbs + p)*32 + ch] * bk[((cb*ntap + t)*16 + ch/2)*32 + 2*k + ch%2]
	 * reading only those positions and, at cs 1, the positions between
	 * two rows (p for ncol <= c < rp, r < nr - 1: the kernel may run its
	 * tiles over a row's end and drop those sums); writing only k < nk,
	 * the nr x ncol outputs. ncb * ntap is at most OPS_CL_MAX_STEPS. A
	 * job with y (not NULL) has its sums go to y[k*ldyk + r*ldyr + c]
	 * instead, rounded to
	 * bf16 as ops_f32_to_bf16 does (out unused). Every job's outputs are
	 * written when the call returns, not before. */
	void (*conv_bf16_cl)(const struct ops_cl_job *jobs, int njob, int64_t cbs, int ncb,
			     const int32_t *toff, int ntap, int64_t rp, int64_t cs, int64_t ldo,
			     int64_t ldyk, int64_t ldyr);
	/* One row of its input: dst[p*32 + c] = src[c*lds + p - lo] for c < nc
	 * (<= 32) and lo <= p < hi, else 0, for p < n (src points at position
	 * lo; nothing outside [lo, hi) is read). */
	void (*conv_bf16_cl_row)(const uint16_t *src, int64_t lds, int nc, int64_t lo, int64_t hi,
				 int64_t n, uint16_t *dst);
	/* A 1x1 convolution at unit stride without padding as one GEMM over
	 * whole planes (where conv_bf16_ready() says so; NULL: none): for k <
	 * nk, p < nq,
	 *   y[k*nq + p] = bf16(sum_{c < nc} x[c*nq + p] * a[((k/16)*ncb + c/32)*512 + (k%16)*32 + c%32])
	 * with ncb = ceil(nc / 32) (a zero past nk and nc), rounded as
	 * ops_f32_to_bf16 does; buf is scratch of 2048 * ncb elements,
	 * 64-byte aligned. */
	void (*conv_bf16_gemm)(const uint16_t *x, int64_t nc, int64_t nq, const uint16_t *a,
			       int64_t nk, uint16_t *y, uint16_t *buf);
	/* The same on fp32 (NULL: none), w the weights as they are:
	 *   y[k*nq + p] = sum_{c < nc} x[c*nq + p] * w[k*nc + c]
	 * summed in the order of c. */
	void (*conv_f32_gemm)(const float *x, int64_t nc, int64_t nq, const float *w, int64_t nk,
			      float *y);
	/* fp32 GEMM of the im2col strategy: 6 rows x gemm_nw (16 or 32) columns,
	 *   out[r*ldo + c] (=, or += when accumulate) sum_i a[6*i + r] * b[16*i + c]
	 * for c < 16, and b[bstride + 16*i + c - 16] for 16 <= c < 32 (nw 32). */
	int gemm_nw;
	void (*conv_gemm)(const float *a, const float *b, int64_t bstride, int64_t kdim,
			  float *out, int64_t ldo, int accumulate);

	/* Winograd F(4x4, 3x3) (ops/conv_wino.c), fp32 with the channels along
	 * the lanes; every channel count a multiple of 16 (the lanes of any
	 * path), every pointer's channel run contiguous.
	 *   wino_in:   the 6x6 input tile at d (element (i, j) at d + i*ldr +
	 *              j*ldc, nc channels) to V: position x = 6i + j of
	 *              channel c at v[x*ldx + c] = (B^T d B)[i][j]
	 *   wino_out:  36 positions of nk channels at m[x*ldx + k] to the 4x4
	 *              output tile o (element (i, j) at o + i*ldr + j*ldc) =
	 *              (A^T m A)[i][j], i < nr, j < ncol; add: o +=
	 *   wino_wt:   the 3x3 filter of nk output channels at g[e*lde + k]
	 *              (e = 3r + s) to u[x*ldx + k] = (G g G^T)[i][j]
	 *   wino_gemm: m[p*ldm + k] = sum over c < nc of v[p*ldv + c] *
	 *              u[c*ldu + k], p < np, k < nk (overwritten) */
	void (*wino_in)(const float *d, int64_t ldr, int64_t ldc, int64_t nc, float *v,
			int64_t ldx);
	void (*wino_out)(const float *m, int64_t ldx, int64_t nk, float *o, int64_t ldr,
			 int64_t ldc, int nr, int ncol, int add);
	void (*wino_wt)(const float *g, int64_t lde, int64_t nk, float *u, int64_t ldx);
	void (*wino_gemm)(const float *v, int64_t ldv, const float *u, int64_t ldu, float *m,
			  int64_t ldm, int64_t np, int64_t nk, int64_t nc);

	/* qgemm (qgemm_int.h states the contract of both: ops_qgemm_kernel_ld,
	 * ops_qgemm_colsum_ld). */
	void (*qgemm)(enum ops_dtype at, const void *a, int64_t lda, const int8_t *b,
		      int64_t ldb, int64_t m, int64_t tn, int64_t kk, int32_t *c, int32_t *cs,
		      int16_t *a16);
	void (*qgemm_colsum)(const int8_t *b, int64_t ldb, int64_t tn, int64_t kk, int32_t *cs);
	/* qgemm on B in the packed layout of chunk qgemm_pack_chunk()
	 * (qgemm_int.h: ops_qgemm_pack_b, ops_qgemm_kernel_packed); both NULL
	 * where the path reads B in place only. */
	int64_t (*qgemm_pack_chunk)(void);
	void (*qgemm_packed)(enum ops_dtype at, const void *a, int64_t lda, const int8_t *bp,
			     int64_t w, int64_t k0, int64_t m, int64_t kk, int32_t *c, int32_t *cs);

	/* activations over contiguous fp32 (ops_act_f32's contract); the
	 * stream form writes whole vectors of y by non-temporal stores and
	 * leaves the fence to the caller. */
	void (*act_f32)(enum ops_act a, const float *x, float *y, size_t n);
	void (*act_f32_stream)(enum ops_act a, const float *x, float *y, size_t n);

	/* permute/DMA: dst[j*ldd + i] = src[i*lds + j] for i < rows, j < cols,
	 * elements of 1, 2 and 4 bytes (index 0, 1, 2); and memcpy with the whole
	 * 64-byte lines of d written by non-temporal stores (caller fences). */
	void (*transpose[3])(const void *src, int64_t lds, void *dst, int64_t ldd,
			     int64_t rows, int64_t cols);
	/* The same straight into GLOBAL, whole 64-byte lines of dst by
	 * non-temporal stores (caller fences); NULL where the path has none
	 * (then a transposing permute stages its tiles through SHARED). */
	void (*transpose_nt[3])(const void *src, int64_t lds, void *dst, int64_t ldd,
				int64_t rows, int64_t cols);
	/* transpose[2]'s result with dst's rows written eight at a time, each
	 * from its first element to its last (eight sequential write streams
	 * the prefetchers follow), where transpose[2] reads 16 source rows at
	 * a time: for a source in cache and a destination that is not, as a
	 * winograd tile's channels-last outputs going into y's 64 channel
	 * planes (on a loaded host 330 of the bench's 1000 us conv, 76 in this
	 * order). */
	void (*transpose_f32_dst_rows)(const void *src, int64_t lds, void *dst, int64_t ldd,
				       int64_t rows, int64_t cols);
	/* Transposes that widen or round 16-bit floats on the way (t OPS_F16 or
	 * OPS_BF16, each element as half_to_f32 / f32_to_half convert it, bit
	 * for bit), destination rows eight at a time as transpose_f32_dst_rows:
	 *   transpose_half_f32: dst[j*ldd + i] = f32(src[i*lds + j])
	 *   transpose_f32_half: dst[j*ldd + i] = half(src[i*lds + j])
	 * for i < rows, j < cols: a winograd tile's fp16/bf16 input rows into
	 * its fp32 patch, and its fp32 sums out into y's channel rows, in one
	 * pass each (a transpose and a conversion apart were 15% of the bf16
	 * launch). */
	void (*transpose_half_f32)(enum ops_dtype t, const uint16_t *src, int64_t lds, float *dst,
				   int64_t ldd, int64_t rows, int64_t cols);
	void (*transpose_f32_half)(enum ops_dtype t, const float *src, int64_t lds, uint16_t *dst,
				   int64_t ldd, int64_t rows, int64_t cols);
	void (*stream_bytes)(unsigned char *d, const unsigned char *s, size_t n);
	/* rows of n bytes: memcpy(d + r*ldd, s + r*lds, n) for r < rows (byte
	 * strides; no overlap). What a DMA's short contiguous rows cost is the
	 * library call per row, not the bytes (a conv patch row is 30 floats),
	 * so the vector paths copy them inline. */
	void (*copy_rows)(unsigned char *d, int64_t ldd, const unsigned char *s, int64_t lds,
			  size_t n, int64_t rows);

	/* fp16/bf16 <-> fp32 of n elements (t is OPS_F16 or OPS_BF16), rounding
	 * as the scalar conversions of ops.h, bit for bit. */
	void (*half_to_f32)(enum ops_dtype t, const uint16_t *src, float *dst, size_t n);
	void (*f32_to_half)(enum ops_dtype t, const float *src, uint16_t *dst, size_t n);
	/* f32_to_half of rows of n: src + r*lds to dst + r*ldd for r < rows
	 * (element strides); NULL: the caller converts row by row. */
	void (*f32_to_half_rows)(enum ops_dtype t, const float *src, int64_t lds, uint16_t *dst,
				 int64_t ldd, size_t n, int64_t rows);
};

extern const struct ops_kern ops_kern_scalar;
extern const struct ops_kern ops_kern_avx2;
extern const struct ops_kern ops_kern_avx512;
/* The AVX-512 table with the AVX2 path's int8 GEMM (qgemm, qgemm_colsum):
 * what an AVX-512 CPU without VNNI runs (ops_isa_select chooses it there);
 * tests select it on any AVX-512 host. */
const struct ops_kern *ops_kern_avx512_without_vnni(void);
/* The AVX2 table with the int8 GEMM on AVX-VNNI's vpdpbusd (ymm): what a
 * CPU with AVX2 and AVX-VNNI runs on the AVX2 path (ops_isa_select chooses
 * it there; ops/kern_avx2_vnni.c). Only where ops_isa_host_has_avx_vnni(). */
const struct ops_kern *ops_kern_avx2_with_vnni(void);
int ops_isa_host_has_avx_vnni(void);
/* Sets t's int8 GEMM (and its path name) to the AVX-VNNI kernel. */
void ops_avx2_vnni_fill(struct ops_kern *t);

/* L2's size (way 0) or the bytes of one of its ways (way 1), from the C
 * library; and whether 32 source rows lds floats apart fall on at most 8
 * offsets within an L2 way, where the streaming transposes keep the tile
 * order (ops/isa.c). */
int64_t ops_l2_bytes(int way);
int ops_tr_rows_alias(int64_t lds);

/* The AVX-512 int8 GEMM's K chunk (and so its packed layout's): 2048 or
 * 4096 forced, 0 back to the choice by L1D's size. For the tests, which run
 * both on one host (an instance's kept packed B is keyed by its chunk, so
 * it is packed again). Returns -1 for another length. */
int ops_avx512_qgemm_chunk_force(int64_t kc);

/* The AVX2 path's register transposes, which the AVX-512 table shares. */
void ops_avx2_transpose_u8(const void *s, int64_t lds, void *d, int64_t ldd, int64_t r, int64_t c);
void ops_avx2_transpose_u16(const void *s, int64_t lds, void *d, int64_t ldd, int64_t r, int64_t c);
void ops_avx2_transpose_f32(const void *s, int64_t lds, void *d, int64_t ldd, int64_t r, int64_t c);
void ops_avx2_transpose_nt_f32(const void *s, int64_t lds, void *d, int64_t ldd, int64_t r,
			       int64_t c);
void ops_avx2_transpose_f32_dst_rows(const void *s, int64_t lds, void *d, int64_t ldd, int64_t r,
				     int64_t c);
void ops_avx2_transpose_half_f32(enum ops_dtype t, const uint16_t *s, int64_t lds, float *d,
				 int64_t ldd, int64_t r, int64_t c);
void ops_avx2_transpose_f32_half(enum ops_dtype t, const float *s, int64_t lds, uint16_t *d,
				 int64_t ldd, int64_t r, int64_t c);

/* The AVX-512 path's fp32 conv kernel with channels along the lanes
 * (ops/kern_avx512_lanes.c). */
void ops_avx512_conv_direct_lanes(const float *x, int64_t ldx, const int32_t *off, int64_t nterm,
				  const float *wp, int64_t ldv, int nk, int64_t nrow, int64_t nq,
				  const float *bias, float *y, int64_t ldk, int64_t ldr);
/* The AVX-512 path's pixel-vector conv kernels (ops/kern_avx512_conv.c):
 * fp32, and bf16 on AMX tiles, which ops_amx_bf16_ready() allows once the
 * CPU has AMX-TILE and AMX-BF16 and the OS has granted the tile state. */
void ops_avx512_conv_direct_px(const float *x, const int32_t *off, int64_t nterm,
			       const float *wp, int64_t ldw, int nk, int64_t nq, float *out,
			       int64_t ldo);
void ops_avx512_conv_direct_bf16(const uint16_t *x, const int32_t *off, int64_t nterm,
				 const uint16_t *a, int64_t lda, int nk, int64_t nq, float *out,
				 int64_t ldo);
void ops_avx512_conv_bf16_pack_pairs(const uint16_t *x, int64_t plane_in, int64_t nc,
				     int64_t np, uint16_t *xp, int64_t plane, int64_t npair);
void ops_avx512_conv_bf16_pairs(const uint16_t *xp, int64_t plane, int ncb,
				const int32_t *toff, int ntap, const uint16_t *a, int nk,
				int64_t nq, float *out, int64_t ldo);
void ops_avx512_conv_bf16_cl(const struct ops_cl_job *jobs, int njob, int64_t cbs, int ncb,
			     const int32_t *toff, int ntap, int64_t rp, int64_t cs, int64_t ldo,
			     int64_t ldyk, int64_t ldyr);
void ops_avx512_conv_bf16_cl_row(const uint16_t *src, int64_t lds, int nc, int64_t lo, int64_t hi,
				 int64_t n, uint16_t *dst);
void ops_avx512_conv_bf16_gemm(const uint16_t *x, int64_t nc, int64_t nq, const uint16_t *a,
				int64_t nk, uint16_t *y, uint16_t *buf);
int ops_amx_bf16_ready(void);

/* The chosen table: never NULL (the portable one until start-up chooses). */
extern const struct ops_kern *ops_kern;

#endif
