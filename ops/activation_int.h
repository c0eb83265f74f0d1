/* ops/activation_int.h: the strided element-wise activation kernel, for the
 * files of ops/ and the tests only (the public entry is the workload
 * interface of ops.h with group OPS_G_ACTIVATION). */
#ifndef OPS_ACTIVATION_INT_H
#define OPS_ACTIVATION_INT_H

#include "ops_int.h"

/* y = act(x) over a strided tensor of rank 0..8 (rank 0: one element), dims
 * and strides in elements, row-major order (dims[rank-1] is the innermost).
 * x and y may be the same tensor (in place, equal strides); otherwise they
 * must not overlap. dtype fp32, fp16 or bf16 (computed in fp32). One launch on
 * dev; tiles of at most tile_elems elements of the coalesced tensor move
 * GLOBAL -> SHARED -> (compute) -> GLOBAL by DMA. A zero-size tensor still
 * counts one launch, with zero tiles. In a dry run x and y may be NULL.
 * Uses the default plan (ops_activation_default_tile, double-buffered). */
int ops_activation_strided(struct ops_device *dev, enum ops_act a, enum ops_dtype t,
			   int rank, const int64_t *dims, const void *x,
			   const int64_t *xstride, void *y, const int64_t *ystride,
			   struct opr_error *err);
/* The same under a plan: plan->p[0] is tile_elems (0: default),
 * plan->double_buffer selects two SHARED buffers (ping-pong) or one. */
int ops_activation_strided_plan(struct ops_device *dev, const struct ops_plan *plan,
				enum ops_act a, enum ops_dtype t, int rank,
				const int64_t *dims, const void *x,
				const int64_t *xstride, void *y,
				const int64_t *ystride, struct opr_error *err);
/* Default tile: the largest multiple of 16 elements of which two buffers fit
 * in one core's SHARED capacity (at least 16). */
int64_t ops_activation_default_tile(const struct ops_envelope *env, enum ops_dtype t);

#endif
