/* ops/conv2d_int.h: internals of conv2d shared with its tests: the normalised
 * shape, the resolved tile plan and the closed form of
 * the direct strategy's GLOBAL traffic. Never included outside ops/ and tests/. */
#ifndef OPS_CONV2D_INT_H
#define OPS_CONV2D_INT_H

#include <stdint.h>

#include "ops_int.h"

/* A conv2d workload with stride/dilation 0 read as 1 and the output size and
 * per-group channel counts derived. */
struct ops_conv_dims {
	int64_t n, c, h, w, k, r, s;
	int64_t sh, sw, ph, pw, dh, dw, groups;
	int64_t oh, ow;     /* (h + 2*ph - dh*(r-1) - 1)/sh + 1, same for w */
	int64_t cpg, kpg;   /* c/groups, k/groups */
};

/* A plan with its defaults resolved and clamped to the shape: tile_k <= kpg,
 * tile_oh <= oh, tile_ow <= ow, tile_c <= cpg. */
struct ops_conv_tiles {
	int64_t tk, toh, tow, tc;
};

/* Normalises and validates w->conv (OPR_EINPUT with the subject quoted). */
int ops_conv_dims_get(const struct ops_workload *w, struct ops_conv_dims *d,
		      struct opr_error *err);
/* Resolves plan parameters (0 = default) for a shape. */
void ops_conv_tiles_get(const struct ops_conv_dims *d, const struct ops_plan *p,
			struct ops_conv_tiles *t);

/* Closed form of the GLOBAL bytes (both directions) of the direct (and
 * im2col) strategy, all launches of the plan included. Tiles run one after
 * the other and keep nothing on chip between tiles, so with
 *   T   = tiles per (image, group) = ceil(kpg/tk) * ceil(oh/toh) * ceil(ow/tow)
 *   R   = sum over oh-tiles of the input rows the tile's patch covers inside
 *         the image, C the same over ow-tiles for columns (the patch of an
 *         output tile [toh, tow] spans (toh-1)*sh + (r-1)*dh + 1 rows)
 *   es  = storage element size
 * the conv launch moves
 *   x:    n * groups * ceil(kpg/tk) * cpg * R * C * es   (patch separable in rows and columns)
 *   w:    n * groups * ceil(oh/toh) * ceil(ow/tow) * kpg * cpg * r * s * es
 *   y:    n * k * oh * ow * es                             (each output written once)
 *   bias: n * groups * ceil(oh/toh) * ceil(ow/tow) * kpg * 4   (fused only)
 * and unfused conv+bias+act adds a bias launch (y in and out + the bias per
 * tile) and an activation launch (y in and out).
 * Returns 0 when the workload is invalid. */
uint64_t ops_conv_direct_global_bytes(const struct ops_workload *w,
				      const struct ops_plan *plan);

/* fp64 reference of y (n*k*oh*ow values, written to ref, caller-owned) from
 * the stored inputs; with bias != NULL y = act(conv + bias), else the plain
 * conv (act ignored). Out of memory gives a NaN reference. */
void ops_conv_reference(const struct ops_conv_dims *d, enum ops_dtype t,
			const void *x, const void *wt, const float *bias,
			enum ops_act act, double *ref);

/* The microkernels of each host path are in ops_kern (isa_int.h). */

#endif
