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
 * im2col and winograd) strategy, all launches of the plan included. Tiles run one after
 * the other and keep nothing on chip between tiles, so with
 *   T   = tiles per (image, group) = ceil(kpg/tk) * ceil(oh/toh) * ceil(ow/tow)
 *   R   = sum over oh-tiles of the input rows the tile's patch covers inside
 *         the image, C the same over ow-tiles for columns (the patch of an
 *         output tile [toh, tow] spans (toh-1)*sh + (r-1)*dh + 1 rows)
 *   es  = storage element size
 * the conv launch moves
 *   x:    n * groups * ceil(kpg/tk) * cpg * R * C * es   (patch separable in rows and columns)
 *   w:    n * groups * ceil(oh/toh) * ceil(ow/tow) * kpg * cpg * r * s * es
 *         (winograd: 4x that, U's 36 fp32 values a filter where w has 9, plus
 *         its filter launch, groups * kpg * cpg * (9 * es + 36 * 4))
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

/* One tile of a plan: image, group, output channels [k0, k0+nk), rows
 * [oh0, oh0+noh), columns [ow0, ow0+now) (npix = noh * now); tile t in the
 * order image, group, k block, row block, column block (the last fastest). */
struct ops_conv_tile {
	int64_t ni, g, k0, nk, oh0, noh, ow0, now, npix;
};
void ops_conv_tile_decode(const struct ops_conv_dims *d, const struct ops_conv_tiles *tl,
			  int64_t t, struct ops_conv_tile *p);
/* The cores a launch places its tiles on: the envelope's, 1..OPS_MAX_CORES. */
int ops_conv_cores(const struct ops_device *dev);
/* A 3-D transfer (shape n, source strides s, destination strides d, in
 * elements of es bytes), split at max_last_dim; count: only counted
 * (ops_dma_split_count), the host moving the bytes itself (a one-pass
 * launch), else moved (ops_dma_split). */
int ops_conv_dma3(struct ops_device *dev, int count, enum ops_space dsp, void *dst,
		  enum ops_space ssp, const void *src, size_t es,
		  int64_t n0, int64_t n1, int64_t n2, int64_t s0, int64_t s1,
		  int64_t s2, int64_t d0, int64_t d1, int64_t d2,
		  struct opr_error *err);
/* Tile t's position in the walk that keeps each core's tiles together
 * (tile t runs on core t % cores), for the strategies' launches. */
int64_t ops_conv_tile_order(int64_t i, int64_t ntiles, int cores);
/* Rows of the input patch of an output range [o0, o0+no) inside [0, in):
 * the patch starts at o0*stride - pad (*start) and spans (no-1)*stride +
 * (f-1)*dil + 1 (*len); its part inside the input is [*v0, *v0 + *nv). */
void ops_conv_patch_range(int64_t o0, int64_t no, int64_t stride, int64_t pad, int64_t f,
			  int64_t dil, int64_t in, int64_t *start, int64_t *len, int64_t *v0,
			  int64_t *nv);

/* ---- the winograd strategy (ops/conv_wino.c states it) ---- */

/* Winograd tiles (4x4 outputs) transformed and multiplied at a time: the
 * plan's V and M buffers hold this many. */
#define OPS_WINO_PC 64
/* NULL when the strategy computes the shape and dtype, else why not. */
const char *ops_conv_wino_refusal(const struct ops_conv_dims *d, enum ops_dtype dt);
/* SHARED bytes per core of a winograd plan with tiles t. */
uint64_t ops_conv_wino_footprint(const struct ops_conv_dims *d, const struct ops_conv_tiles *t,
				 int db, int epi);
/* Bytes of the transformed filters U (GLOBAL) under tiles t, and the most
 * any tiles take (what the instance's memory estimate counts). */
size_t ops_conv_wino_u_bytes(const struct ops_conv_dims *d, const struct ops_conv_tiles *t);
size_t ops_conv_wino_u_bytes_max(const struct ops_conv_dims *d);
struct ops_wino_args {
	struct ops_device *dev;
	const struct ops_conv_dims *d;
	const struct ops_conv_tiles *t;
	enum ops_dtype dt;
	int db, epi;            /* double-buffered; bias + act fused */
	enum ops_act act;
	/* x, w and y in dt (fp32, fp16 or bf16), bias fp32; NULL in a dry run */
	const void *x, *w;
	const float *bias;
	void *y;
	float **u;              /* U's host memory kept across runs (NULL: the
				 * launch's own); reallocated when its size changes */
	size_t *u_bytes;
	/* what the kept U was transformed from, the weights' data and version
	 * (ops_instance_input_changed): U is transformed again only when they
	 * differ from w and wver (the filter launch is counted either way) */
	const void **u_src;
	uint64_t *u_ver, wver;
};
/* The filter launch, then the tiles' launch named name. OPR_ELIMIT with
 * the refusal for a shape or dtype the strategy does not compute. */
int ops_conv_wino_run(const struct ops_wino_args *a, const char *name, struct opr_error *err);

/* The microkernels of each host path are in ops_kern (isa_int.h). */

#endif
