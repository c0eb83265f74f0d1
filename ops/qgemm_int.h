/* ops/qgemm_int.h: internals of the INT8 quantised GEMM shared with its tests:
 * the resolved tile plan, the exact AVX2 kernel, the exact reference and the
 * closed forms of the plan's GLOBAL bytes and DMA transfers. Never included
 * outside ops/ and tests/. */
#ifndef OPS_QGEMM_INT_H
#define OPS_QGEMM_INT_H

#include <stdint.h>

#include "ops_int.h"

#define OPS_QGEMM_MAX_MN 4096
#define OPS_QGEMM_MAX_K 16777216

/* Largest K tile whose int32 sums cannot overflow. One product is at most
 * |a*b| <= 255*128 = 32640 (u8 a = 255 with b = -128; |a - zp| <= 255 for
 * either a dtype, so the zero-point-corrected product has the same bound),
 * hence a K tile of kk elements sums to at most kk*32640 in magnitude, and
 * kk*32640 <= 2^31-1 = 2147483647 holds up to kk = 65793. The bound used is
 * the power of two below it: 65536*32640 = 2139095040. Any partial sum of a
 * tile (an AVX2 lane, a k-chunk) is a sum of a subset of the same terms, so
 * it is bounded too. Across K tiles the sums are widened to int64. */
#define OPS_QGEMM_MAX_TILE_KK 65536

/* K elements widened to int16 at a time by the kernel (scratch m*KC int16). */
#define OPS_QGEMM_KC 1024

/* A plan resolved against a shape and an envelope (0 = default):
 *   tn    = tile_n  (default min(n, 64)), clamped to n
 *   kk    = tile_kk, clamped to k; > 65536 is refused. Default: the largest
 *           power of two (16..65536) with 2*(m+tn)*kk <= 192 KiB, i.e. the
 *           double-buffered A and B tiles fit a 256 KiB SHARED with room for
 *           the accumulators (m=8, tn=64: 1024)
 *   split = split_k from p[2], else plan.split_k, else 1
 *   parts = min(split, cores, ntk): split parts run on distinct cores and
 *           each owns at least one K tile
 * K tile t covers [t*kk, min(k, (t+1)*kk)); part p owns K tiles
 * [p*ntk/parts, (p+1)*ntk/parts). */
struct ops_qgemm_tiles {
	int64_t tn, kk, split, parts;
	int64_t ntn, ntk;       /* ceil(n/tn), ceil(k/kk) */
};
int ops_qgemm_tiles_get(const struct ops_workload *w, const struct ops_plan *p,
			int cores, struct ops_qgemm_tiles *t, struct opr_error *err);

/* Bytes of one accumulator as stored between phases: 4 (int32) when the
 * exact result cannot overflow, k * max|a - zp| * 128 <= 2^31 - 1, else 8. */
int ops_qgemm_acc_bytes(const struct ops_workload *w);

/* Closed form of the GLOBAL bytes (both directions) of every launch of the
 * plan. With NT = ceil(n/tn), accb = ops_qgemm_acc_bytes, outb = 4 (fp32) or
 * 1 (s8), scb = 4n per-channel or 4*NT per-tensor (each n tile loads its
 * scales once):
 *   GEMM phase (any form):  A: NT*m*k (A is re-read by every n tile)
 *                           B: n*k    (each B row streamed once)
 *   one launch (fused group fused, or the plain qgemm group):
 *                           + scb + m*n*outb, + 4n bias (fused group, fp32)
 *   unfused fused group, fp32 out: qgemm writes the accumulators, then
 *     dequant, bias and activation launches each read and write y in GLOBAL:
 *                           + m*n*accb                      (qgemm out)
 *                           + m*n*accb + scb + 4mn          (dequant)
 *                           + 4mn + 4n + 4mn                (bias)
 *                           + 4mn + 4mn                     (activation)
 *   unfused fused group, s8 out: + m*n*accb, + m*n*accb + scb + mn (requant)
 * The split-K reduction is SHARED->SHARED and adds no GLOBAL bytes.
 * Returns 0 for an invalid plan. */
uint64_t ops_qgemm_global_bytes(const struct ops_workload *w, const struct ops_plan *plan);

/* Closed form of the DMA descriptors issued after splitting (*transfers) and
 * of the extra ones caused by max_last_dim L (*splits). A descriptor whose
 * last dimension is x becomes c(x) = ceil(x/L) transfers. Per n tile of
 * width w (NT-1 tiles of tn and one of n - (NT-1)*tn):
 *   GEMM:      2 * sum over K tiles c(kk_t)        (A [m,kk_t] and B [w,kk_t])
 *   reduction: (parts-1) * c(w)                    (partials SHARED->SHARED)
 *   epilogue:  c(w) scales (c(1) per-tensor) + c(w) bias (fused fp32) + c(w) y
 *   unfused:   c(w) acc out; dequant/requant c(w) + scales + c(w);
 *              bias 3 c(w); activation 2 c(w)
 * Returns 0 or OPR_EINPUT. */
int ops_qgemm_transfers(const struct ops_envelope *env, const struct ops_workload *w,
			const struct ops_plan *plan, uint64_t *transfers,
			uint64_t *splits, struct opr_error *err);

/* The exact kernel of the chosen path: c[i*tn + j] = sum_{q<kk} a[i*kk + q] *
 * b[j*kk + q] for i < m, j < tn (A [m,kk] of dtype at = u8 or s8, B [tn,kk]
 * s8, both contiguous; no zero point; c overwritten). kk <=
 * OPS_QGEMM_MAX_TILE_KK. a16 is scratch of m*OPS_QGEMM_KC int16, 32-byte
 * aligned. Every path is exact: AVX2 widens bytes to int16 and multiplies
 * with _mm256_madd_epi16 (pair sums <= 65280, unlike _mm256_maddubs_epi16
 * that saturates at 32767); AVX-512 uses vpdpbusd, which adds four u8 x s8
 * products into int32 without saturating (an s8 A as a + 128, corrected by
 * 128 sum b); the portable path sums in int32. */
void ops_qgemm_kernel(enum ops_dtype at, const void *a, const int8_t *b,
		      int64_t m, int64_t tn, int64_t kk, int32_t *c, int16_t *a16);
/* The same with rows lda (A) and ldb (B) elements apart (a K tile read in
 * place from the whole [m,k] and [n,k] matrices), and, when cs != NULL, B's
 * column sums of the tile into cs[tn] in the same pass (ops_qgemm_colsum). */
void ops_qgemm_kernel_ld(enum ops_dtype at, const void *a, int64_t lda, const int8_t *b,
			 int64_t ldb, int64_t m, int64_t tn, int64_t kk, int32_t *c, int32_t *cs,
			 int16_t *a16);
/* cs[j] = sum_{q<kk} b[j*kk + q] (the column sums of B used for the zero
 * point: sum (a - zp) b = sum a b - zp sum b); the _ld form with rows ldb
 * apart. */
void ops_qgemm_colsum(const int8_t *b, int64_t tn, int64_t kk, int32_t *cs);
void ops_qgemm_colsum_ld(const int8_t *b, int64_t ldb, int64_t tn, int64_t kk, int32_t *cs);

/* B packed for the chosen path (the AVX-512 VNNI one; elsewhere
 * ops_qgemm_pack_chunk() is 0 and B is read in place). Read in place, a K
 * chunk of B is tn runs of kc bytes each a row (k bytes) apart; packed, the
 * whole B is one sequential stream in the order the kernel reads it:
 *   n tile jt (columns j0 = jt*tn .. j0+w-1, w = min(tn, n - j0)) at
 *     bp + j0 * kp, kp = k rounded up to a multiple of kc;
 *   its K chunk c (K [c*kc, c*kc + kc)) at + c * w * kc;
 *   in a chunk, the columns in groups of 32 (the last one the w % 32 left
 *     over), group g (columns 32g .. 32g+G-1) at + 32g * kc;
 *   in a group, K's quads (4 bytes) in turn, quad t (K c*kc + 4t .. +3)
 *     at + t * 4G, the G columns' 4 bytes of it side by side: column
 *     32g+i's at + 4i, in K order;
 *   bytes past k are 0.
 * ops_qgemm_packed_bytes is the size of that layout; ops_qgemm_pack_b
 * writes it. ops_qgemm_kernel_packed is ops_qgemm_kernel_ld on it: bt is n
 * tile's base, [k0, k0+kk) the K range (k0 a multiple of 4, kk <=
 * OPS_QGEMM_MAX_TILE_KK), a the range's first column of A (rows lda apart),
 * c[i*w + j] overwritten, cs[w] the column sums when not NULL. */
int64_t ops_qgemm_pack_chunk(void);
uint64_t ops_qgemm_packed_bytes(int64_t n, int64_t k, int64_t kc);
void ops_qgemm_pack_b(const int8_t *b, int64_t n, int64_t k, int64_t tn, int64_t kc,
		      int8_t *bp);
void ops_qgemm_kernel_packed(enum ops_dtype at, const void *a, int64_t lda, const int8_t *bt,
			     int64_t w, int64_t k0, int64_t m, int64_t kk, int32_t *c,
			     int32_t *cs);

/* Exact int64 reference: acc[i*n + j] = sum_k (a[i*k + q] - zp) * b[j*k + q]
 * with plain scalar code. */
void ops_qgemm_ref_acc(const struct ops_workload *w, const void *a, const int8_t *b,
		       int64_t *acc);

/* The accumulators of the last real run of an instance of either qgemm group
 * ([m,n] int64, owned by the instance), or NULL before a real run. */
const int64_t *ops_qgemm_last_acc(const struct ops_instance *inst);

/* For a backend that runs the plan on another device (ops/cuda/): the
 * dequantisation scale of A and the requantisation scale of the output with
 * their defaults resolved, as this file's kernels use them. */
void ops_qgemm_scales(const struct ops_workload *w, double *a_scale, double *out_scale);
/* Records the [m,n] int64 accumulators of such a run, so that the quality
 * check compares them with the exact reference (exact_int). 0 or
 * OPR_EINTERNAL (a planning instance, or not a qgemm instance). */
int ops_qgemm_set_acc(struct ops_instance *inst, const int64_t *acc, struct opr_error *err);

#endif
