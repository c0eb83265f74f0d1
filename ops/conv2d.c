/* ops/conv2d.c: conv2d and conv2d+bias+activation (NCHW x, KCRS weights,
 * stride, padding, dilation, groups) on the device model: untiled, direct
 * tiled and im2col + GEMM strategies; fp32/fp16/bf16 storage, fp32 sums.
 *
 * Data flow of a tiled launch, per output tile [tile_k, tile_oh, tile_ow] of
 * one image and group, per channel block of tile_c: DMA the input patch
 * GLOBAL->SHARED (halo outside the image zero-filled on chip), DMA the weight
 * block GLOBAL->SHARED straight into the microkernel's packed layout, widen
 * fp16/bf16 to fp32 in SHARED, accumulate in an fp32 SHARED tile; then the
 * epilogue (bias + activation when fused, narrowing) and one DMA of the tile
 * SHARED->GLOBAL. Units: elements for shapes and strides, bytes for counts. */
#include <stdlib.h>
#include <string.h>

#include "conv2d_int.h"
#include "device_int.h"
#include "isa_int.h"

static const char *const conv_params[] = {
	"tile_k", "tile_oh", "tile_ow", "tile_c", NULL
};

/* Largest accepted extent of one dimension, so that sums like h + 2*pad and
 * dil*(r-1) cannot overflow before the product checks. */
#define CONV_DIM_MAX ((int64_t)1 << 31)

/* Output channels per packed weight block: 16 for the direct microkernel
 * (a panel of k), 6 for the GEMM microkernel (six broadcast rows); pixels per
 * block of the device's microkernels (DIRECT_PB, GEMM_PB), which the counts
 * follow whatever block the host path computes at a time. */
#define DIRECT_KB 16
#define DIRECT_PB 6
#define GEMM_KB 6
#define GEMM_PB 16
/* Output pixels per call of a path's pixel-vector direct kernel, at most. */
#define PX_RUN_MAX 1024

/* ---- shape ------------------------------------------------------------------ */

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* Floor division for a possibly negative numerator and b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* a*b*c*d into *out; 1 when it overflows int64 (or exceeds 2^62). */
static int prod4_over(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *out)
{
	int64_t x;

	if (__builtin_mul_overflow(a, b, &x) || __builtin_mul_overflow(x, c, &x) ||
	    __builtin_mul_overflow(x, d, &x) || x > ((int64_t)1 << 62))
		return 1;
	*out = x;
	return 0;
}

int ops_conv_dims_get(const struct ops_workload *wl, struct ops_conv_dims *d,
		      struct opr_error *err)
{
	const struct ops_conv_shape *s = &wl->conv;
	const struct { const char *name; int64_t v; int64_t min; } f[] = {
		{ "n", s->n, 1 }, { "c", s->c, 1 }, { "h", s->h, 1 },
		{ "w", s->w, 1 }, { "k", s->k, 1 }, { "r", s->r, 1 },
		{ "s", s->s, 1 }, { "stride_h", s->stride_h, 0 },
		{ "stride_w", s->stride_w, 0 }, { "pad_h", s->pad_h, 0 },
		{ "pad_w", s->pad_w, 0 }, { "dil_h", s->dil_h, 0 },
		{ "dil_w", s->dil_w, 0 }, { "groups", s->groups, 0 },
	};
	int64_t eh, ew, tmp;
	size_t i;

	for (i = 0; i < sizeof f / sizeof f[0]; i++) {
		if (f[i].v < f[i].min || f[i].v > CONV_DIM_MAX)
			return opr_error_set(err, OPR_EINPUT,
					     "conv2d '%s' must be %s integer up to 2^31 (got %lld)",
					     f[i].name,
					     f[i].min ? "a positive" : "a non-negative",
					     (long long)f[i].v);
	}
	memset(d, 0, sizeof *d);
	d->n = s->n; d->c = s->c; d->h = s->h; d->w = s->w;
	d->k = s->k; d->r = s->r; d->s = s->s;
	/* 0 in stride, dilation and groups means 1 */
	d->sh = s->stride_h ? s->stride_h : 1;
	d->sw = s->stride_w ? s->stride_w : 1;
	d->dh = s->dil_h ? s->dil_h : 1;
	d->dw = s->dil_w ? s->dil_w : 1;
	d->groups = s->groups ? s->groups : 1;
	d->ph = s->pad_h;
	d->pw = s->pad_w;
	if (d->c % d->groups || d->k % d->groups)
		return opr_error_set(err, OPR_EINPUT,
				     "conv2d 'groups' (%lld) must divide c (%lld) and k (%lld)",
				     (long long)d->groups, (long long)d->c, (long long)d->k);
	d->cpg = d->c / d->groups;
	d->kpg = d->k / d->groups;
	/* output size: oh = (h + 2*pad_h - dil_h*(r-1) - 1)/stride_h + 1 */
	eh = d->h + 2 * d->ph - d->dh * (d->r - 1) - 1;
	ew = d->w + 2 * d->pw - d->dw * (d->s - 1) - 1;
	if (eh < 0 || ew < 0)
		return opr_error_set(err, OPR_EINPUT,
				     "conv2d 'r'/'s' with dilation exceed the padded input (%lldx%lld): output would be empty",
				     (long long)(d->h + 2 * d->ph), (long long)(d->w + 2 * d->pw));
	d->oh = eh / d->sh + 1;
	d->ow = ew / d->sw + 1;
	if (prod4_over(d->n, d->c, d->h, d->w, &tmp) ||
	    prod4_over(d->k, d->cpg, d->r, d->s, &tmp) ||
	    prod4_over(d->n, d->k, d->oh, d->ow, &tmp) ||
	    prod4_over(tmp, d->cpg * d->r, d->s, 8, &tmp))
		return opr_error_set(err, OPR_EINPUT,
				     "conv2d shape n=%lld c=%lld h=%lld w=%lld k=%lld is too large",
				     (long long)d->n, (long long)d->c, (long long)d->h,
				     (long long)d->w, (long long)d->k);
	return 0;
}

/* Resolved tile: parameter (0 or negative: default) clamped to the shape.
 * Defaults fit a 256 KiB SHARED core for the usual 3x3 layers. */
void ops_conv_tiles_get(const struct ops_conv_dims *d, const struct ops_plan *p,
			struct ops_conv_tiles *t)
{
	t->tk = p->p[0] > 0 ? p->p[0] : 16;
	t->toh = p->p[1] > 0 ? p->p[1] : 4;
	t->tow = p->p[2] > 0 ? p->p[2] : 64;
	t->tc = p->p[3] > 0 ? p->p[3] : 32;
	t->tk = min64(t->tk, d->kpg);
	t->toh = min64(t->toh, d->oh);
	t->tow = min64(t->tow, d->ow);
	t->tc = min64(t->tc, d->cpg);
}

void ops_conv_patch_range(int64_t o0, int64_t no, int64_t stride, int64_t pad,
			int64_t f, int64_t dil, int64_t in, int64_t *start,
			int64_t *len, int64_t *v0, int64_t *nv)
{
	int64_t s0 = o0 * stride - pad;
	int64_t l = (no - 1) * stride + (f - 1) * dil + 1;
	int64_t a = max64(0, s0), b = min64(in, s0 + l);

	*start = s0;
	*len = l;
	*v0 = a;
	*nv = b > a ? b - a : 0;
}

/* Sum over the output tiles along one axis of the valid patch extent. */
static int64_t patch_valid_sum(int64_t out, int64_t tile, int64_t stride,
			       int64_t pad, int64_t f, int64_t dil, int64_t in)
{
	int64_t o0, sum = 0;

	for (o0 = 0; o0 < out; o0 += tile) {
		int64_t st, len, v0, nv;

		ops_conv_patch_range(o0, min64(tile, out - o0), stride, pad, f, dil, in,
			    &st, &len, &v0, &nv);
		sum += nv;
	}
	return sum;
}

uint64_t ops_conv_direct_global_bytes(const struct ops_workload *wl,
				      const struct ops_plan *plan)
{
	struct ops_conv_dims d;
	struct ops_conv_tiles t;
	uint64_t es, ntk, nth, ntw, rows, cols, xb, wb, yb, bb, total;
	int fused_group = wl->group == OPS_G_CONV_BIAS_ACT;

	if (ops_conv_dims_get(wl, &d, NULL) < 0)
		return 0;
	ops_conv_tiles_get(&d, plan, &t);
	es = ops_dtype_size(wl->dtype);
	ntk = (uint64_t)ceil_div(d.kpg, t.tk);
	nth = (uint64_t)ceil_div(d.oh, t.toh);
	ntw = (uint64_t)ceil_div(d.ow, t.tow);
	rows = (uint64_t)patch_valid_sum(d.oh, t.toh, d.sh, d.ph, d.r, d.dh, d.h);
	cols = (uint64_t)patch_valid_sum(d.ow, t.tow, d.sw, d.pw, d.s, d.dw, d.w);
	xb = (uint64_t)(d.n * d.groups) * ntk * (uint64_t)d.cpg * rows * cols * es;
	wb = (uint64_t)(d.n * d.groups) * nth * ntw *
	     (uint64_t)(d.kpg * d.cpg * d.r * d.s) * es;
	if (plan->strategy == OPS_STRAT_WINOGRAD) /* U's blocks (36 a filter, fp32), and
						    * the filter launch: w in, U out */
		wb = wb / es * 16 + (uint64_t)(d.groups * d.kpg * d.cpg) * (9 * es + 36 * 4);
	yb = (uint64_t)(d.n * d.k * d.oh * d.ow) * es;
	bb = (uint64_t)(d.n * d.groups) * nth * ntw * (uint64_t)d.kpg * 4;
	total = xb + wb + yb;
	if (fused_group && plan->fused)
		total += bb;
	else if (fused_group)
		total += 2 * yb + bb + 2 * yb; /* bias launch, activation launch */
	return total;
}

/* ---- device helpers ----------------------------------------------------------- */

/* base + idx elements, NULL in a dry run (no data anywhere). */
static void *at(const void *base, int64_t idx, size_t es)
{
	return base ? (char *)(uintptr_t)base + (size_t)idx * es : NULL;
}

int ops_conv_dma3(struct ops_device *dev, int count, enum ops_space dsp, void *dst,
		  enum ops_space ssp, const void *src, size_t es,
		  int64_t n0, int64_t n1, int64_t n2, int64_t s0, int64_t s1,
		  int64_t s2, int64_t d0, int64_t d1, int64_t d2,
		  struct opr_error *err)
{
	struct ops_dma_desc dd;

	memset(&dd, 0, sizeof dd);
	dd.rank = 3;
	dd.shape[0] = n0; dd.shape[1] = n1; dd.shape[2] = n2;
	dd.src_stride[0] = s0; dd.src_stride[1] = s1; dd.src_stride[2] = s2;
	dd.dst_stride[0] = d0; dd.dst_stride[1] = d1; dd.dst_stride[2] = d2;
	dd.elem_bytes = es;
	if (count)
		return ops_dma_split_count(dev, dsp, ssp, &dd, err);
	return ops_dma_split(dev, dsp, dst, ssp, src, &dd, err);
}

static int dma3(struct ops_device *dev, enum ops_space dsp, void *dst,
		enum ops_space ssp, const void *src, size_t es,
		int64_t n0, int64_t n1, int64_t n2, int64_t s0, int64_t s1,
		int64_t s2, int64_t d0, int64_t d1, int64_t d2,
		struct opr_error *err)
{
	return ops_conv_dma3(dev, 0, dsp, dst, ssp, src, es, n0, n1, n2, s0, s1, s2, d0, d1, d2, err);
}

/* A 1-D transfer of n elements: source stride s, destination stride d. */
static int dma1(struct ops_device *dev, enum ops_space dsp, void *dst, enum ops_space ssp,
		const void *src, size_t es, int64_t n, int64_t s, int64_t d, struct opr_error *err)
{
	struct ops_dma_desc dd;

	memset(&dd, 0, sizeof dd);
	dd.rank = 1;
	dd.shape[0] = n;
	dd.src_stride[0] = s;
	dd.dst_stride[0] = d;
	dd.elem_bytes = es;
	return ops_dma_split(dev, dsp, dst, ssp, src, &dd, err);
}

/* Jobs of the channel-last kernel that write y, run CL_JOBS at a time:
 * one call runs many tiles, and a tile's last sums go out while the next
 * tile's tdpbf16ps run (at one call a tile, the tile unit drained at every
 * return). Every job's y is disjoint from the others'. */
#define CL_JOBS 64
struct cl_queue {
	struct ops_cl_job job[CL_JOBS];
	int n;
};

/* What an instance keeps across its runs (inst->priv): the channel-last
 * kernel's packed weights, repacked only when the weights they came from
 * (their data and version: ops_int.h) or the plan's tiles change.
 * Packing them was 7% of the bench's bf16 launch. A byte-for-byte
 * comparison with a copy, as before, read both every run: half of a
 * 512-channel 7x7 layer's launch (4.5 MiB of weights twice, 310 of 624 us). */
struct conv_priv {
	uint16_t *wn;           /* the channel-last B tiles, or with wn_gemm
				 * the 1x1 GEMM's A tiles */
	int wn_gemm;
	int64_t nw;
	const void *wsrc;
	uint64_t wver;
	struct ops_conv_tiles t;
	float *wino_u;          /* the winograd strategy's U (conv_wino.c) */
	size_t wino_u_bytes;
	const void *wino_src;   /* the weights U came from, and their version */
	uint64_t wino_ver;
	/* a one-pass launch's counting (ops_launch_memo, cl_memo_of),
	 * replayed by its repeats: one memo for a run's first launch, one for the others,
	 * each valid for the tiles, kernel table and buffering it was taken
	 * under (the counts are a function of those, the shape and the
	 * device's envelope) */
	struct cl_memo {
		struct ops_launch_memo m;
		struct ops_conv_tiles t;
		const struct ops_kern *kern;
		int db;
	} memo[2];
};

/* Everything one conv launch needs. */
struct conv_ctx {
	struct ops_device *dev;
	struct ops_conv_dims d;
	struct ops_conv_tiles t;
	enum ops_strategy strat;
	enum ops_dtype dt;
	size_t es;
	int dry;
	int db;
	const void *x, *w;
	uint64_t wver;          /* the weights tensor's version (ops_int.h) */
	int epi;                /* fused epilogue: bias then act */
	const float *bias;      /* NULL in a dry run */
	enum ops_act act;
	void *y;
	int64_t ntk, nth, ntw, ntiles;
	int64_t phm, pwm;       /* patch layout (largest tile) */
	int32_t *off;           /* term -> patch offset, tc*r*s entries */
	int64_t off_nc;         /* the channel count off holds (0: none yet) */
	float *px;              /* host scratch of the pixel-vector kernel,
				 * DIRECT_KB x PX_RUN_MAX floats (NULL: unused) */
	int amx;                /* bf16 straight to the path's bf16 kernel,
				 * not widened: weights as rows in wa */
	uint16_t *wa;           /* DIRECT_KB x lda bf16 (amx only) */
	int64_t lda;            /* tc*r*s rounded up to 32 */
	/* amx by channel pairs (ops_kern.conv_bf16_pairs): the patch re-laid
	 * once per channel block in xp (npair pairs, plane positions apart),
	 * the filter taps toff[] apart in it, and every weight block of the
	 * launch laid out once in wq (see wq_block) */
	int pairs;
	uint16_t *xp;
	int64_t plane, npair;
	int32_t *toff;
	uint16_t *wq;
	int64_t nkbt, ncblk, wqblk; /* 16-channel blocks per tile, channel
				     * blocks, elements per weight block */
	int64_t cur_kt, cur_cblk;   /* the tile and channel block computed */
	/* one pass (conv_one_pass_fits): the input padded once per launch
	 * into bands, one per ow-tile of the patch's width pwm and the rows of
	 * every oh-tile's patch (bh), channels cp = bh * pwm apart; the tiles'
	 * transfers are counted and their kernels read the bands in place */
	int onep;
	int64_t bh, cp;
	int64_t bw;             /* row pitch of what the kernels read: pwm, or with
				 * the channel pairs' aligned copies pwm rounded up to 16 */
	int64_t nshift, cpj;    /* channel pairs: column-tap copies per pair plane
				 * and positions apart (1, 0: one copy) */
	int64_t cpitch;         /* channel pitch of what the kernels read: phm*pwm or cp */
	int64_t clw, clp;       /* the channel-last kernel's one band for every
				 * ow-tile: its row pitch and its blocks' stride
				 * (positions; cl_band_pitch) */
	int64_t clshare;        /* halo columns two rows share (cl_band_pitch) */
	float *xf;              /* fp32 bands [ntw][n][c][cp] (widened), or NULL */
	uint16_t *xh;           /* bf16 bands, the same layout (amx), or NULL */
	float *wf;              /* w widened to fp32 (KCRS), or NULL */
	float *wpk;             /* packed fp32 weight blocks [g][ntk][ncblk][wpkblk] */
	uint16_t *wab;          /* bf16 weight rows [g][ntk][ncblk][wabblk] (amx per term) */
	int64_t wpkblk, wabblk;
	int lanes;              /* fp32 on the path's channels-along-lanes kernel
				 * (lanes_fits): weights from wpk, sums straight into y */
	/* what the current channel block's kernel reads */
	int64_t ldw;            /* weight rows apart (px kernel) */
	const uint16_t *wacur;  /* bf16 weight rows (amx per term) */
	const uint16_t *xpcur;  /* channel pairs (amx pairs) */
	/* amx on channel-last blocks (ops_kern.conv_bf16_cl, one pass only):
	 * the bands as 32-channel blocks of whole pixels, nsb blocks per
	 * channel block of the plan, cp positions each (xn), and every
	 * weight block of the launch as the kernel's B tiles (wn) */
	int cl;
	uint16_t *xn, *wn;
	int64_t nsb, wnblk;     /* 32-channel blocks per channel block; elements
				 * per 16-channel weight block */
	const uint16_t *xncur;  /* the current tile's */
	struct conv_priv *priv; /* the instance's (NULL: none) */
	struct cl_queue *clq;   /* jobs of the channel-last kernel not yet run */
	int px_whole;           /* one pass: the pixel-vector kernel takes every
				 * channel block of a tile at once (conv_tile) */
	int wn_kept;            /* wn is priv's, not the launch's */
	/* a 1x1 conv at unit stride, unpadded and without an epilogue, on the
	 * channel-last launch's tiles and counting but computed as one GEMM
	 * a plane (ops_kern.conv_bf16_gemm) when they are done: wn holds its
	 * A tiles, gbuf its scratch, and no bands are laid out */
	int gemm;
	uint16_t *gbuf;
};

/* The on-chip buffers of one core. */
#define CONV_NBUF 9
struct conv_bufs {
	struct ops_buf b[CONV_NBUF];
	int n;
	int live;
};
enum { B_X0, B_X1, B_X32, B_W0, B_W1, B_W32, B_COL, B_ACC, B_OUT };

static void bufs_release(struct ops_device *dev, struct conv_bufs *bs)
{
	int i;

	for (i = CONV_NBUF - 1; i >= 0; i--)
		if (bs->b[i].bytes)
			ops_buf_release(dev, &bs->b[i]);
	memset(bs, 0, sizeof *bs);
}

static int buf_get(struct ops_device *dev, struct conv_bufs *bs, int i,
		   enum ops_space sp, int64_t bytes, struct opr_error *err)
{
	int rc;

	if (bytes <= 0)
		return 0;
	rc = ops_buf_alloc(dev, sp, (size_t)bytes, &bs->b[i], err);
	if (rc < 0)
		memset(&bs->b[i], 0, sizeof bs->b[i]);
	return rc;
}

/* Placement: tile t runs on core t % cores, so the tiles of one core are
 * walked together and each core holds one buffer set at a time. */
int64_t ops_conv_tile_order(int64_t i, int64_t ntiles, int cores)
{
	int64_t per = ntiles / cores, rem = ntiles % cores;
	int64_t core, j, first;

	/* cores [0, rem) run per+1 tiles, the rest per */
	if (i < rem * (per + 1)) {
		core = i / (per + 1);
		j = i % (per + 1);
	} else {
		first = i - rem * (per + 1);
		core = rem + first / per;
		j = first % per;
	}
	return core + j * cores;
}

void ops_conv_tile_decode(const struct ops_conv_dims *d, const struct ops_conv_tiles *tl,
			  int64_t t, struct ops_conv_tile *p)
{
	const int64_t ntk = ceil_div(d->kpg, tl->tk), nth = ceil_div(d->oh, tl->toh);
	const int64_t ntw = ceil_div(d->ow, tl->tow);
	int64_t owt = t % ntw, oht, kt;

	t /= ntw;
	oht = t % nth;
	t /= nth;
	kt = t % ntk;
	t /= ntk;
	p->g = t % d->groups;
	p->ni = t / d->groups;
	p->k0 = kt * tl->tk;
	p->nk = min64(tl->tk, d->kpg - p->k0);
	p->oh0 = oht * tl->toh;
	p->noh = min64(tl->toh, d->oh - p->oh0);
	p->ow0 = owt * tl->tow;
	p->now = min64(tl->tow, d->ow - p->ow0);
	p->npix = p->noh * p->now;
}

int ops_conv_cores(const struct ops_device *dev)
{
	const int c = ops_device_envelope(dev)->cores;

	return c > 0 ? (c < OPS_MAX_CORES ? c : OPS_MAX_CORES) : 1;
}

/* Sizes (bytes) of the conv launch's per-core buffers. */
static void conv_buf_sizes(const struct conv_ctx *cx, int64_t sz[CONV_NBUF])
{
	const struct ops_conv_tiles *t = &cx->t;
	int64_t es = (int64_t)cx->es, terms = t->tc * cx->d.r * cx->d.s;
	int64_t kb = cx->strat == OPS_STRAT_DIRECT ? DIRECT_KB : GEMM_KB;
	int64_t patch = t->tc * cx->phm * cx->pwm;
	int64_t wpk = ceil_div(t->tk, kb) * kb * terms;
	int64_t npix = t->toh * t->tow;
	int wide = cx->dt != OPS_F32;

	memset(sz, 0, sizeof(int64_t) * CONV_NBUF);
	sz[B_X0] = patch * es;
	sz[B_X1] = cx->db ? patch * es : 0;
	sz[B_X32] = wide ? patch * 4 : 0;
	sz[B_W0] = wpk * es;
	sz[B_W1] = cx->db ? wpk * es : 0;
	sz[B_W32] = wide ? wpk * 4 : 0;
	sz[B_COL] = cx->strat == OPS_STRAT_IM2COL ?
		    ceil_div(npix, GEMM_PB) * GEMM_PB * terms * 4 : 0;
	sz[B_ACC] = t->tk * npix * 4 + (cx->epi ? t->tk * 4 : 0);
	sz[B_OUT] = wide ? t->tk * npix * es : 0;
}

static int bufs_get(const struct conv_ctx *cx, struct conv_bufs *bs,
		    struct opr_error *err)
{
	int64_t sz[CONV_NBUF];
	int i, rc;

	conv_buf_sizes(cx, sz);
	memset(bs, 0, sizeof *bs);
	for (i = 0; i < CONV_NBUF; i++) {
		rc = buf_get(cx->dev, bs, i, OPS_SHARED, sz[i], err);
		if (rc < 0) {
			bufs_release(cx->dev, bs);
			return rc;
		}
	}
	bs->live = 1;
	return 0;
}

/* ---- the tiled conv launch ------------------------------------------------------ */

/* Zeros what the patch's DMA will not write of nc planes [plane] of rows
 * pwm apart in xb (elements of es bytes): everything but rows [r0, r0+nr)
 * x columns [c0, c0+ncv) of each plane, as a memset of the whole patch did
 * before the DMA. The cells to zero between two rows of the box are one
 * run (the right halo of a row and the left one of the next), of a few
 * elements on a 3x3 filter: one 16-byte store covers such a run, spilling
 * into cells the DMA writes next, where the memset wrote the whole patch
 * (a quarter of the patch's copy time on 28-wide fp32 tiles). */
static void zero_halo(void *xb, size_t es, int64_t nc, int64_t plane, int64_t pwm,
		      int64_t r0, int64_t nr, int64_t c0, int64_t ncv)
{
	unsigned char *b = xb;
	static const unsigned char z16[16];
	size_t prev = 0, end = (size_t)(nc * plane) * es;

	if (nr <= 0 || ncv <= 0) {
		memset(b, 0, end);
		return;
	}
	for (int64_t c = 0; c < nc; c++)
		for (int64_t i = 0; i < nr; i++) {
			size_t start = (size_t)(c * plane + (r0 + i) * pwm + c0) * es;

			if (start - prev <= sizeof z16 && prev + sizeof z16 <= end)
				memcpy(b + prev, z16, sizeof z16);
			else
				memset(b + prev, 0, start - prev);
			prev = start + (size_t)ncv * es;
		}
	memset(b + prev, 0, end - prev);
}

/* Brings channels [c0, c0+nc) of the tile's input patch into xb (layout
 * [nc][phm][pwm]) with the halo zeroed; widens to x32 when stored narrow. */
static int load_patch(struct conv_ctx *cx, const struct ops_conv_tile *tp,
		      int64_t c0, int64_t nc, void *xb, float *x32,
		      struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t rs, rl, rv0, rnv, cs, cl, cv0, cnv, valid, all;
	int rc;

	ops_conv_patch_range(tp->oh0, tp->noh, d->sh, d->ph, d->r, d->dh, d->h, &rs, &rl, &rv0, &rnv);
	ops_conv_patch_range(tp->ow0, tp->now, d->sw, d->pw, d->s, d->dw, d->w, &cs, &cl, &cv0, &cnv);
	valid = nc * rnv * cnv;
	all = nc * rl * cl;
	if (valid < all) {
		/* zero-fill of the halo (padding) on chip */
		if (!cx->dry && !cx->onep)
			zero_halo(xb, cx->es, nc, cx->phm * cx->pwm, cx->pwm, rv0 - rs, rnv,
				  cv0 - cs, cnv);
		ops_compute(cx->dev, cx->dt, 0, 0, 0, (uint64_t)(all - valid) * cx->es);
	}
	if (valid > 0) {
		int64_t src = (((tp->ni * d->c) + tp->g * d->cpg + c0) * d->h + rv0) * d->w + cv0;
		int64_t dst = (rv0 - rs) * cx->pwm + (cv0 - cs);

		rc = ops_conv_dma3(cx->dev, cx->onep, OPS_SHARED, at(xb, dst, cx->es), OPS_GLOBAL,
			   at(cx->x, src, cx->es), cx->es, nc, rnv, cnv,
			   d->h * d->w, d->w, 1, cx->phm * cx->pwm, cx->pwm, 1, err);
		if (rc < 0)
			return rc;
	}
	if (cx->dt != OPS_F32) {
		if (!cx->dry && !cx->amx && !cx->onep)
			ops_to_f32(cx->dt, xb, x32, (size_t)(nc * cx->phm * cx->pwm));
		ops_compute(cx->dev, cx->dt, 0, 0, (uint64_t)all * cx->es,
			    (uint64_t)all * 4);
	}
	return 0;
}

/* One weight transfer GLOBAL->SHARED; with cx->amx only counted, the host
 * copying the same weights itself into the bf16 kernel's rows (cx->wa):
 * the accelerator's packed layout would be transposed back for the AMX
 * tiles, two transposes per tile that cost more than the tile's tdpbf16ps
 * (as ops_dma_split_count's one-pass launches do, device_int.h). */
static int weight_dma(struct conv_ctx *cx, void *dst, const void *src,
		      const struct ops_dma_desc *dd, struct opr_error *err)
{
	if (cx->amx || cx->onep)
		return ops_dma_split_count(cx->dev, OPS_SHARED, OPS_GLOBAL, dd, err);
	return ops_dma_split(cx->dev, OPS_SHARED, dst, OPS_GLOBAL, src, dd, err);
}

/* Brings weights [k0, k0+nk) x [c0, c0+nc) x r x s into wb in the packed
 * layout [nk/kb][nc*r*s][kb] (k padded with zeros to a multiple of kb),
 * by DMA with a transposing destination stride; widens to w32. The
 * pixel-vector kernel (cx->px) broadcasts its weights one at a time and
 * takes them as the KCRS rows [nk][nc*r*s] instead (padded with zero rows
 * to the same multiple of kb): a plain row copy, one run when the tile
 * has all of a group's channels, where the packed layout takes blocked
 * transposes. Both issue the same descriptors' bytes and zero fill, so the
 * counters do not depend on the path (dry == real). */
static int load_weights(struct conv_ctx *cx, const struct ops_conv_tile *tp,
			int64_t c0, int64_t nc, int64_t kb, void *wb, float *w32,
			struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t rs = d->r * d->s, terms = nc * rs, crs = d->cpg * rs;
	int64_t nfull = tp->nk / kb, rem = tp->nk % kb, nkb = ceil_div(tp->nk, kb);
	int64_t src = ((tp->g * d->kpg + tp->k0) * d->cpg + c0) * rs;
	int rows = cx->px && !cx->amx;
	int rc;

	struct ops_dma_desc dd;

	if (rem) {
		if (cx->dry || cx->amx || cx->onep)
			;
		else if (rows)
			memset(at(wb, tp->nk * terms, cx->es), 0,
			       (size_t)((kb - rem) * terms) * cx->es);
		else
			memset(wb, 0, (size_t)(nkb * kb * terms) * cx->es);
		ops_compute(cx->dev, cx->dt, 0, 0, 0,
			    (uint64_t)((kb - rem) * terms) * cx->es);
	}
	if (nfull) {
		memset(&dd, 0, sizeof dd);
		if (rows) {
			dd.rank = 2;
			dd.shape[0] = nfull * kb; dd.shape[1] = terms;
			dd.src_stride[0] = crs; dd.src_stride[1] = 1;
			dd.dst_stride[0] = terms; dd.dst_stride[1] = 1;
		} else {
			dd.rank = 3;
			dd.shape[0] = nfull; dd.shape[1] = kb; dd.shape[2] = terms;
			dd.src_stride[0] = kb * crs; dd.src_stride[1] = crs; dd.src_stride[2] = 1;
			dd.dst_stride[0] = terms * kb; dd.dst_stride[1] = 1; dd.dst_stride[2] = kb;
		}
		dd.elem_bytes = cx->es;
		rc = weight_dma(cx, wb, at(cx->w, src, cx->es), &dd, err);
		if (rc < 0)
			return rc;
	}
	if (rem) {
		memset(&dd, 0, sizeof dd);
		dd.rank = 2;
		dd.shape[0] = rem; dd.shape[1] = terms;
		dd.src_stride[0] = crs; dd.src_stride[1] = 1;
		dd.dst_stride[0] = rows ? terms : 1; dd.dst_stride[1] = rows ? 1 : kb;
		dd.elem_bytes = cx->es;
		rc = weight_dma(cx, at(wb, nfull * kb * terms, cx->es),
				at(cx->w, src + nfull * kb * crs, cx->es), &dd, err);
		if (rc < 0)
			return rc;
	}
	if (cx->amx && !cx->pairs && !cx->onep && !cx->dry) {
		/* the rows of the bf16 kernel's A tiles, straight from KCRS */
		const uint16_t *ws = (const uint16_t *)cx->w + src;
		int64_t l;

		for (l = 0; l < tp->nk; l++) {
			memcpy(cx->wa + l * cx->lda, ws + l * crs, (size_t)terms * sizeof *cx->wa);
			memset(cx->wa + l * cx->lda + terms, 0,
			       (size_t)(cx->lda - terms) * sizeof *cx->wa);
		}
		for (; l < nkb * kb; l++)
			memset(cx->wa + l * cx->lda, 0, (size_t)cx->lda * sizeof *cx->wa);
	}
	if (cx->dt != OPS_F32) {
		if (!cx->dry && !cx->amx && !cx->onep)
			ops_to_f32(cx->dt, wb, w32, (size_t)(nkb * kb * terms));
		ops_compute(cx->dev, cx->dt, 0, 0, (uint64_t)(nkb * kb * terms) * cx->es,
			    (uint64_t)(nkb * kb * terms) * 4);
	}
	return 0;
}

/* Patch offset of output pixel p of the tile (row-major over [noh, now]). */
static int64_t pix_off(const struct conv_ctx *cx, const struct ops_conv_tile *tp, int64_t p)
{
	return (p / tp->now) * cx->d.sh * cx->bw + (p % tp->now) * cx->d.sw;
}

/* The term offsets of a channel block of nc channels: the same for every
 * tile of the launch with that many channels (the patch layout is the
 * launch's), so filled again only when nc changes (per tile, they were 2%
 * of the bench's one-pass fp32 conv). */
static void fill_offsets(struct conv_ctx *cx, int64_t nc)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t c, i, j, n = 0;

	if (cx->off_nc == nc)
		return;
	cx->off_nc = nc;
	for (c = 0; c < nc; c++)
		for (i = 0; i < d->r; i++)
			for (j = 0; j < d->s; j++)
				cx->off[n++] = (int32_t)(c * cx->cpitch +
							 i * d->dh * cx->bw + j * d->dw);
}

/* Each filter tap's offset in a patch of row pitch pitch (cx->toff), for
 * the kernels that read every tap from one layout of the patch. */
static void fill_tap_offsets(struct conv_ctx *cx, int64_t pitch)
{
	const struct ops_conv_dims *d = &cx->d;

	for (int64_t i = 0; i < d->r; i++)
		for (int64_t j = 0; j < d->s; j++)
			cx->toff[i * d->s + j] = (int32_t)(i * d->dh * pitch + j * d->dw);
}

/* The index of the AMX kernels' weight block for group g, k-tile kt, its
 * 16-channel block kb and channel block cbk: wq (channel pairs) and wn
 * (channel-last) are both [g][kt][kb][cbk] blocks of their size, so a
 * 16-channel block's channel blocks lie one after the other. */
static int64_t wblock(const struct conv_ctx *cx, int64_t g, int64_t kt, int64_t kb, int64_t cbk)
{
	return ((g * cx->ntk + kt) * cx->nkbt + kb) * cx->ncblk + cbk;
}

/* The weights of 16-channel block kb of tile tp and channel block
 * cx->cur_cblk in wq: [ncb 32-channel blocks][r*s taps][16 k][32 c]. */
static const uint16_t *wq_block(const struct conv_ctx *cx, const struct ops_conv_tile *tp,
				int64_t kb)
{
	return cx->wq + wblock(cx, tp->g, cx->cur_kt, kb, cx->cur_cblk) * cx->wqblk;
}

/* The output channels of 16-channel block kb of k-tile kt within its
 * group: [*kfirst, the value returned). */
static int64_t kblock_range(const struct conv_ctx *cx, int64_t kt, int64_t kb, int64_t *kfirst)
{
	*kfirst = kt * cx->t.tk + kb * DIRECT_KB;
	return min64(min64(kt * cx->t.tk + cx->t.tk, cx->d.kpg), *kfirst + DIRECT_KB);
}

/* Lays out every weight block of the launch for conv_bf16_pairs once:
 * the weights are the same GLOBAL tensor for every tile, and the tiles'
 * transfers are counted as they are (load_weights); packing them per tile
 * cost more than the tile's tdpbf16ps. */
static void wq_fill(struct conv_ctx *cx)
{
	const struct ops_conv_dims *d = &cx->d;
	const uint16_t *w = cx->w;
	int64_t rs = d->r * d->s;

	for (int64_t g = 0; g < d->groups; g++)
	for (int64_t kt = 0; kt < cx->ntk; kt++)
	for (int64_t kb = 0; kb < cx->nkbt; kb++)
	for (int64_t cbk = 0; cbk < cx->ncblk; cbk++) {
		uint16_t *blk = cx->wq + wblock(cx, g, kt, kb, cbk) * cx->wqblk;
		int64_t kfirst, kend = kblock_range(cx, kt, kb, &kfirst);
		int64_t c0 = cbk * cx->t.tc, nc = min64(cx->t.tc, d->cpg - c0);

		/* zeros where the block is not full (channels or k) */
		if (kend - kfirst < DIRECT_KB || nc % 32)
			memset(blk, 0, (size_t)cx->wqblk * sizeof *blk);
		/* for each k and 32-channel block, [c][tap] of KCRS transposed to
		 * the A tiles' [tap][..][c] by the path's 16-bit transpose */
		for (int64_t k = kfirst; k < kend; k++)
			for (int64_t cb = 0; cb * 32 < nc; cb++)
				ops_kern->transpose[1](w + ((g * d->kpg + k) * d->cpg + c0 + 32 * cb) * rs,
						       rs, blk + cb * rs * 512 + (k - kfirst) * 32, 512,
						       min64(32, nc - 32 * cb), rs);
	}
}

/* The pixel-vector kernel's sums for tile-local channels [k, k+nk) of
 * rows [r0, r0+nr) x columns [c0, c0+ncol) (cx->px, rows pitch apart), with
 * the fused bias and activation when the launch has them (epilogue_f32's
 * arithmetic, applied to the whole run: the pixels between rows are
 * dropped), narrowed and written straight into y at y's pitch: a one-pass
 * tile of a single channel block, whose store is counted (store_tile). */
static void px_to_y(const struct conv_ctx *cx, const struct ops_conv_tile *tp, int64_t k,
		    int64_t nk, int64_t r0, int64_t nr, int64_t c0, int64_t ncol, int64_t nq,
		    int64_t pitch, int64_t lds)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t kg = tp->g * d->kpg + tp->k0 + k;
	uint16_t n16[PX_RUN_MAX]; /* one run narrowed */

	for (int64_t l = 0; l < nk; l++) {
		float *src = cx->px + l * lds;
		int64_t dst = ((tp->ni * d->k + kg + l) * d->oh + tp->oh0 + r0) * d->ow +
			      tp->ow0 + c0;

		if (cx->epi) {
			float b = cx->bias[kg + l];

			for (int64_t q = 0; q < nq; q++)
				src[q] += b;
			if (cx->act != OPS_ACT_NONE)
				ops_act_f32(cx->act, src, src, (size_t)nq);
		}
		if (cx->dt != OPS_F32) {
			/* narrowed as one run, then copied row by row: a
			 * conversion call per 28-pixel row cost more than it
			 * converted */
			if (ops_kern->f32_to_half_rows) {
				ops_kern->f32_to_half_rows(cx->dt, src, pitch,
							   (uint16_t *)at(cx->y, dst, cx->es), d->ow,
							   (size_t)ncol, nr);
				continue;
			}
			ops_from_f32(cx->dt, src, n16, (size_t)nq);
			ops_kern->copy_rows((unsigned char *)at(cx->y, dst, cx->es),
					    d->ow * (int64_t)cx->es, (const unsigned char *)n16,
					    pitch * (int64_t)cx->es, (size_t)ncol * cx->es, nr);
			continue;
		}
		ops_kern->copy_rows((unsigned char *)((float *)cx->y + dst),
				    d->ow * (int64_t)sizeof(float), (const unsigned char *)src,
				    pitch * (int64_t)sizeof(float), (size_t)ncol * sizeof(float), nr);
	}
}

/* Floats between the channel-last kernel's output rows in cx->px: not a
 * multiple of 4 KiB, whose rows all fell in one L1 set (the kernel took
 * 1.5x as long at 1024). */
#define CL_LDO (PX_RUN_MAX - 16)

/* The channel-last kernel over n jobs of the launch: every channel block
 * of a tile, at the bands' geometry. */
static void cl_run(const struct conv_ctx *cx, const struct ops_cl_job *jobs, int n)
{
	const struct ops_conv_dims *d = &cx->d;

	ops_kern->conv_bf16_cl(jobs, n, cx->clp, (int)(cx->ncblk * cx->nsb), cx->toff,
			       (int)(d->r * d->s), d->sh * cx->clw, d->sw, CL_LDO, d->oh * d->ow,
			       d->ow);
}

/* Job b joined to job a where it continues a, the same channels from
 * the same band: along a's rows (the next ow-tile of the same rows), or,
 * both being whole rows (ncol = ow), down y's rows. Returns 1 if joined. */
static int cl_join_cols(const struct conv_ctx *cx, struct ops_cl_job *a,
			const struct ops_cl_job *b)
{
	if (a->b != b->b || a->b2 != b->b2 || a->nk != b->nk || a->nr != b->nr ||
	    b->y != a->y + a->ncol || b->xn != a->xn + a->ncol * cx->d.sw * 32)
		return 0;
	a->ncol += b->ncol;
	return 1;
}

static int cl_join_rows(const struct conv_ctx *cx, struct ops_cl_job *a,
			const struct ops_cl_job *b)
{
	const struct ops_conv_dims *d = &cx->d;

	if (a->b != b->b || a->b2 != b->b2 || a->nk != b->nk || a->ncol != d->ow ||
	    b->ncol != d->ow || b->y != a->y + a->nr * d->ow ||
	    b->xn != a->xn + a->nr * d->sh * cx->clw * 32)
		return 0;
	a->nr += b->nr;
	return 1;
}

/* One pass of join over the n jobs, each joined to the one before where
 * it can be; returns how many are left. */
static int cl_join_pass(const struct conv_ctx *cx, struct ops_cl_job *job, int n,
			int (*join)(const struct conv_ctx *, struct ops_cl_job *,
				    const struct ops_cl_job *))
{
	int m = 0;

	for (int i = 0; i < n; i++)
		if (!m || !join(cx, &job[m - 1], &job[i]))
			job[m++] = job[i];
	return m;
}

static int cl_job_cmp(const void *a, const void *b)
{
	uintptr_t ya = (uintptr_t)((const struct ops_cl_job *)a)->y;
	uintptr_t yb = (uintptr_t)((const struct ops_cl_job *)b)->y;

	return ya < yb ? -1 : ya > yb;
}

/* The 1x1 GEMM launch's whole output (cx->gemm): one kernel call for each
 * image and group, its planes whole. */
static void gemm_run(const struct conv_ctx *cx)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t plane = d->h * d->w, ablk = ceil_div(d->kpg, DIRECT_KB) * ceil_div(d->cpg, 32) * 512;

	if (cx->dt == OPS_F32) {
		for (int64_t ni = 0; ni < d->n; ni++)
			for (int64_t g = 0; g < d->groups; g++)
				ops_kern->conv_f32_gemm((const float *)cx->x +
							(ni * d->c + g * d->cpg) * plane,
							d->cpg, plane, (const float *)cx->w + g * d->kpg * d->cpg,
							d->kpg,
							(float *)cx->y + (ni * d->k + g * d->kpg) * plane);
		return;
	}
	for (int64_t ni = 0; ni < d->n; ni++)
		for (int64_t g = 0; g < d->groups; g++)
			ops_kern->conv_bf16_gemm((const uint16_t *)cx->x + (ni * d->c + g * d->cpg) * plane,
						 d->cpg, plane, cx->wn + g * ablk, d->kpg,
						 (uint16_t *)cx->y + (ni * d->k + g * d->kpg) * plane,
						 cx->gbuf);
}

/* Runs the channel-last kernel's queued jobs (cx->clq), in y's order,
 * each job that continues the one before along y's rows joined to it
 * (cl_join_cols): the two halves of a row of y then come out of the tiles
 * one group apart, so that each of its lines is read for its stores once
 * instead of once per ow-tile; then the whole rows that continue one
 * another down y (cl_join_rows), so that the kernel's pieces of 16 run
 * over the row blocks' ends too and a job's last lone piece comes once
 * (the bench's 14 jobs of 8 rows become 2 of 56). Jobs write disjoint
 * outputs, so neither the order nor the joins change what they write. */
static void cl_flush(const struct conv_ctx *cx)
{
	struct cl_queue *q = cx->clq;
	int n;

	if (cx->gemm) {
		gemm_run(cx);
		return;
	}
	if (!q || !q->n)
		return;
	qsort(q->job, (size_t)q->n, sizeof q->job[0], cl_job_cmp);
	n = cl_join_pass(cx, q->job, q->n, cl_join_cols);
	n = cl_join_pass(cx, q->job, n, cl_join_rows);
	cl_run(cx, q->job, n);
	q->n = 0;
}

/* The runs of output channels the host computes for a tile, up to width
 * (16 or 32) at a time: run i is [ks0 + width*i, min(that + width, kend))
 * of the tile's group, i < n. With width 32, k-tiles of 16 channels (tk an
 * odd multiple of 16) pair up across tiles: vectors 2u and 2u+1 of a group
 * are computed together by the tile that holds the last of them, the tile
 * before leaving its vector to it. Every tile of one spatial position has
 * the same pixels, and the one-pass bands hold the whole input, so only
 * when the host computes moves; each tile's transfers and MACs are counted
 * as its own (conv_tile). */
struct kruns {
	int64_t ks0, kend, n, width;
};

static void kruns_of(const struct conv_ctx *cx, const struct ops_conv_tile *tp, int64_t width,
		     struct kruns *kr)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t tk = cx->t.tk;

	kr->width = width;
	if (width != 2 * DIRECT_KB || cx->ntk == 1 || tk % DIRECT_KB || tk % (2 * DIRECT_KB) == 0) {
		kr->ks0 = tp->k0;
		kr->kend = tp->k0 + tp->nk;
		kr->n = ceil_div(tp->nk, width);
		return;
	}
	int64_t v0 = tp->k0 / DIRECT_KB, v1 = v0 + ceil_div(tp->nk, DIRECT_KB);
	int64_t nvt = ceil_div(d->kpg, DIRECT_KB), vs = v0 & ~(int64_t)1, ve = (v1 - 1) & ~(int64_t)1;

	if (!(ve == v1 - 1 && ve + 1 < nvt)) /* the last pair ends here, not in the next tile */
		ve += 2;
	kr->ks0 = vs * DIRECT_KB;
	kr->kend = d->kpg;
	kr->n = (ve - vs) / 2;
}

/* Run i of kr: its first channel (returned) and *nk channels. */
static int64_t krun(const struct kruns *kr, int64_t i, int *nk)
{
	int64_t ks = kr->ks0 + kr->width * i;

	*nk = (int)min64(kr->width, kr->kend - ks);
	return ks;
}

/* The k-tile of channel c of a group and c's 16-channel vector in it. */
static int64_t kvec(const struct conv_ctx *cx, int64_t c, int64_t *vl)
{
	int64_t kt = c / cx->t.tk;

	*vl = (c - kt * cx->t.tk) / DIRECT_KB;
	return kt;
}

/* The channel-last kernel's B tiles for the 16 output channels from c of
 * group g (cl_fill_weights' layout: every channel block of them). */
static const uint16_t *cl_weights(const struct conv_ctx *cx, int64_t g, int64_t c)
{
	int64_t vl, kt = kvec(cx, c, &vl);

	return cx->wn + wblock(cx, g, kt, vl, 0) * cx->wnblk;
}

/* A one-pass bf16 tile on channel-last blocks (cx->cl), every channel
 * block of it in one pass (the bands hold them all; the tile's transfers
 * are counted per channel block by conv_tile): the tile's rows, as many as
 * the scratch holds per job, each output row whole, 32 output channels a
 * job (kruns_of). Without an epilogue the jobs are queued and their sums
 * rounded into y; with one, 16 channels a job, the kernel's [k][r*now + c]
 * sums go through px_to_y. */
static void compute_direct_cl(const struct conv_ctx *cx, const struct ops_conv_tile *tp)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t now = tp->now, rows = max64(1, CL_LDO / now), rp = d->sh * cx->clw;
	struct kruns kr;

	kruns_of(cx, tp, cx->epi ? DIRECT_KB : 2 * DIRECT_KB, &kr);
	for (int64_t i = 0; i < kr.n; i++) {
		int nkl;
		int64_t ks = krun(&kr, i, &nkl);
		const uint16_t *b = cl_weights(cx, tp->g, ks);
		const uint16_t *b2 = nkl > DIRECT_KB ? cl_weights(cx, tp->g, ks + DIRECT_KB) : NULL;

		for (int64_t r0 = 0; r0 < tp->noh; r0 += rows) {
			int64_t nr = min64(rows, tp->noh - r0), nq = nr * now;
			struct ops_cl_job jb = { cx->xncur + r0 * rp * 32, b, b2, cx->px, NULL,
						 nkl, nr, now };

			/* without an epilogue the kernel rounds its sums into y,
			 * queued */
			if (!cx->epi) {
				jb.y = (uint16_t *)cx->y + ((tp->ni * d->k + tp->g * d->kpg + ks) *
							    d->oh + tp->oh0 + r0) * d->ow + tp->ow0;
				cx->clq->job[cx->clq->n++] = jb;
				if (cx->clq->n == CL_JOBS)
					cl_flush(cx);
				continue;
			}
			cl_run(cx, &jb, 1);
			px_to_y(cx, tp, ks - tp->k0, nkl, r0, nr, 0, now, nq, now, CL_LDO);
		}
	}
}

/* One call of the lanes kernel: channels [ks, ks + nk) of the tile's group
 * (nk <= 32, two weight vectors ldv floats apart past 16), plus the bias
 * where the launch fuses it, straight into y's rows, then the activation
 * over those rows in place (epilogue_f32's arithmetic, in its order). */
static void lanes_run(const struct conv_ctx *cx, const struct ops_conv_tile *tp, int64_t terms,
		      const float *xs, int64_t ks, int nk, const float *wp, int64_t ldv)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t kg = tp->g * d->kpg + ks, plane = d->oh * d->ow;
	float *y = (float *)cx->y + ((tp->ni * d->k + kg) * d->oh + tp->oh0) * d->ow + tp->ow0;

	ops_kern->conv_direct_lanes(xs, d->sh * cx->bw, cx->off, terms, wp, ldv, nk, tp->noh,
				    tp->now, cx->epi ? cx->bias + kg : NULL, y, plane, d->ow);
	if (!cx->epi || cx->act == OPS_ACT_NONE)
		return;
	for (int64_t l = 0; l < nk; l++)
		for (int64_t r = 0; r < tp->noh; r++) {
			float *row = y + l * plane + r * d->ow;

			ops_act_f32(cx->act, row, row, (size_t)tp->now);
		}
}

/* The lanes kernel's weights for the 16 output channels from c of group
 * g (lanes_setup's layout, terms a vector). */
static const float *lanes_weights(const struct conv_ctx *cx, int64_t g, int64_t c, int64_t terms)
{
	int64_t vl, kt = kvec(cx, c, &vl);

	return cx->wpk + (g * cx->ntk + kt) * cx->wpkblk + vl * terms * DIRECT_KB;
}

/* A one-pass tile on the lanes kernel, 32 channels a call (kruns_of; two
 * weight vectors: 16 loads to 28 FMAs, against 29 with one). */
static void compute_direct_lanes(const struct conv_ctx *cx, const struct ops_conv_tile *tp,
				 int64_t terms, const float *xs)
{
	struct kruns kr;

	kruns_of(cx, tp, 2 * DIRECT_KB, &kr);
	for (int64_t i = 0; i < kr.n; i++) {
		int nk;
		int64_t ks = krun(&kr, i, &nk);
		const float *wa = lanes_weights(cx, tp->g, ks, terms);
		const float *wb = nk > DIRECT_KB ? lanes_weights(cx, tp->g, ks + DIRECT_KB, terms) : wa;

		lanes_run(cx, tp, terms, xs, ks, nk, wa, wb - wa);
	}
}

/* compute_direct by the path's pixel-vector kernel (unit stride along w).
 * The tile's output rows lie sh*pwm apart in the patch; with sh == 1 and
 * little halo that pitch is close to now, so runs of whole rows go to the
 * kernel as one virtual row (the pixels between rows computed and dropped);
 * otherwise row by row, and rows longer than PX_RUN_MAX in pieces. The
 * kernel's [k][q] result lands in acc[k][p] row by row. xs and ws are the
 * widened fp32 patch and weights (as KCRS rows, load_weights), or with cx->amx the bf16 patch and ws
 * unused (the weights are cx->wa's rows, load_weights). */
static void compute_direct_px(const struct conv_ctx *cx, const struct ops_conv_tile *tp,
			      int64_t terms, const void *xs, const void *ws,
			      float *acc, int first, int to_y)
{
	const struct ops_kern *kern = ops_kern;
	int64_t pitch = cx->d.sh * cx->bw, now = tp->now;
	int dense = now <= PX_RUN_MAX && (pitch - now) * 4 <= now;
	int64_t kb, r0, c0, nkb = ceil_div(tp->nk, DIRECT_KB);
	float *tmp = cx->px;

	if (cx->lanes) { /* (one pass, every channel block: to_y) */
		compute_direct_lanes(cx, tp, terms, xs);
		return;
	}
	for (kb = 0; kb < nkb; kb++) {
		const float *wp = cx->amx ? NULL : (const float *)ws + kb * DIRECT_KB * cx->ldw;
		int nkl = (int)min64(DIRECT_KB, tp->nk - kb * DIRECT_KB);

		for (r0 = 0; r0 < tp->noh;) {
			int64_t nr = dense ? min64(tp->noh - r0, (PX_RUN_MAX - now) / pitch + 1) : 1;

			for (c0 = 0; c0 < now; c0 += PX_RUN_MAX) {
				int64_t ncol = min64(now - c0, PX_RUN_MAX);
				int64_t nq = (nr - 1) * pitch + ncol, l, rr, j;

				if (cx->pairs)
					kern->conv_bf16_pairs(cx->xpcur + (r0 * pitch + c0) * 2, cx->plane,
							      (int)ceil_div(terms / (cx->d.r * cx->d.s), 32),
							      cx->toff, (int)(cx->d.r * cx->d.s),
							      wq_block(cx, tp, kb), nkl, nq, tmp,
							      PX_RUN_MAX);
				else if (cx->amx)
					kern->conv_direct_bf16((const uint16_t *)xs + r0 * pitch + c0,
							       cx->off, terms,
							       cx->wacur + kb * DIRECT_KB * cx->lda, cx->lda,
							       nkl, nq, tmp, PX_RUN_MAX);
				else
					kern->conv_direct_px((const float *)xs + r0 * pitch + c0,
							     cx->off, terms, wp, cx->ldw, nkl, nq, tmp,
							     PX_RUN_MAX);
				if (to_y) {
					px_to_y(cx, tp, kb * DIRECT_KB, nkl, r0, nr, c0, ncol, nq,
						pitch, PX_RUN_MAX);
					continue;
				}
				for (l = 0; l < nkl; l++) {
					float *row0 = acc + (kb * DIRECT_KB + l) * tp->npix + r0 * now + c0;

					if (first) { /* nr rows of ncol, one call */
						kern->copy_rows((unsigned char *)row0,
								now * (int64_t)sizeof *row0,
								(const unsigned char *)(tmp + l * PX_RUN_MAX),
								pitch * (int64_t)sizeof *tmp,
								(size_t)ncol * sizeof *tmp, nr);
						continue;
					}
					for (rr = 0; rr < nr; rr++) {
						const float *src = tmp + l * PX_RUN_MAX + rr * pitch;
						float *row = row0 + rr * now;

						for (j = 0; j < ncol; j++)
							row[j] += src[j];
					}
				}
			}
			r0 += nr;
		}
	}
}

/* acc[nk][npix] (=, or += when !first) over the terms of one channel block,
 * by the chosen path's direct kernel: blocks of direct_pb pixels x one or
 * two 16-channel weight panels. */
static void compute_direct(const struct conv_ctx *cx, const struct ops_conv_tile *tp,
			   int64_t terms, const float *x32, const float *w32,
			   float *acc, int first)
{
	const struct ops_kern *kern = ops_kern;
	int64_t nkb = ceil_div(tp->nk, DIRECT_KB);
	int64_t kb, pb, j, l;
	float tmp[OPS_KERN_MAX_PB * 2 * DIRECT_KB];
	const float *pix[OPS_KERN_MAX_PB];

	if (cx->px) {
		compute_direct_px(cx, tp, terms, x32, w32, acc, first, 0);
		return;
	}
	for (kb = 0; kb < nkb;) {
		const float *wp = w32 + kb * terms * DIRECT_KB;
		int two = kern->direct_pb[1] > 0 && kb + 1 < nkb;
		int64_t PB = kern->direct_pb[two], KW = two ? 2 * DIRECT_KB : DIRECT_KB;
		int64_t nkl = min64(KW, tp->nk - kb * DIRECT_KB), npb = ceil_div(tp->npix, PB);

		for (pb = 0; pb < npb; pb++) {
			int64_t np = min64(PB, tp->npix - pb * PB);

			/* a partial block repeats its last pixel (not stored) */
			for (j = 0; j < PB; j++)
				pix[j] = x32 + pix_off(cx, tp, pb * PB + min64(j, np - 1));
			kern->conv_direct(pix, cx->off, terms, wp, two ? terms * DIRECT_KB : 0, tmp);
			for (l = 0; l < nkl; l++) {
				float *row = acc + (kb * DIRECT_KB + l) * tp->npix + pb * PB;

				if (first)
					for (j = 0; j < np; j++)
						row[j] = tmp[j * KW + l];
				else
					for (j = 0; j < np; j++)
						row[j] += tmp[j * KW + l];
			}
		}
		kb += two ? 2 : 1;
	}
}

/* im2col of the patch into GEMM_PB-pixel panels col[pb][term][16], then
 * acc[nk][npix] (=, or +=) = packed weights x col by the chosen path's
 * GEMM kernel (6 rows x one or two panels). */
static void compute_im2col(const struct conv_ctx *cx, const struct ops_conv_tile *tp,
			   int64_t terms, const float *x32, const float *w32,
			   float *col, float *acc, int first)
{
	const struct ops_kern *kern = ops_kern;
	const int64_t NW = kern->gemm_nw;
	int64_t nkb = ceil_div(tp->nk, GEMM_KB), npb = ceil_div(tp->npix, GEMM_PB);
	int64_t kb, pb, i, j, l;
	float tmp[GEMM_KB * 2 * GEMM_PB];

	for (pb = 0; pb < npb; pb++) {
		int64_t po[GEMM_PB];
		float *cp = col + pb * terms * GEMM_PB;

		int contiguous = 1;

		for (j = 0; j < GEMM_PB; j++) {
			po[j] = pix_off(cx, tp, min64(pb * GEMM_PB + j, tp->npix - 1));
			contiguous &= po[j] == po[0] + j;
		}
		/* unit stride inside one output row: each term is one run */
		for (i = 0; i < terms; i++) {
			const float *src = x32 + cx->off[i];

			if (contiguous)
				memcpy(cp + i * GEMM_PB, src + po[0], GEMM_PB * sizeof *cp);
			else
				for (j = 0; j < GEMM_PB; j++)
					cp[i * GEMM_PB + j] = src[po[j]];
		}
	}
	for (kb = 0; kb < nkb; kb++) {
		const float *a = w32 + kb * terms * GEMM_KB;
		int64_t nkl = min64(GEMM_KB, tp->nk - kb * GEMM_KB);

		for (pb = 0; pb < npb; pb += NW / GEMM_PB) {
			int two = NW > GEMM_PB && pb + 1 < npb;
			int64_t np = min64(two ? 2 * GEMM_PB : GEMM_PB, tp->npix - pb * GEMM_PB);
			int64_t bstride = two ? terms * GEMM_PB : 0;
			const float *b = col + pb * terms * GEMM_PB;

			if (nkl == GEMM_KB && np == NW) {
				/* a full block goes straight to the accumulator */
				kern->conv_gemm(a, b, bstride, terms,
						acc + kb * GEMM_KB * tp->npix + pb * GEMM_PB,
						tp->npix, !first);
				continue;
			}
			/* (a missing second panel repeats the first, not stored) */
			kern->conv_gemm(a, b, bstride, terms, tmp, NW, 0);
			for (l = 0; l < nkl; l++) {
				float *row = acc + (kb * GEMM_KB + l) * tp->npix + pb * GEMM_PB;
				const float *tr = tmp + l * NW;

				if (first)
					memcpy(row, tr, (size_t)np * sizeof *row);
				else
					for (j = 0; j < np; j++)
						row[j] += tr[j];
			}
		}
	}
}

/* Bias + activation on an fp32 tile [nk][npix] in SHARED (bias[nk]). */
static void epilogue_f32(enum ops_act act, const float *bias, float *acc,
			 int64_t nk, int64_t npix)
{
	int64_t l, j;

	for (l = 0; l < nk; l++) {
		float *row = acc + l * npix;

		if (bias)
			for (j = 0; j < npix; j++)
				row[j] += bias[l];
		if (act != OPS_ACT_NONE)
			ops_act_f32(act, row, row, (size_t)npix);
	}
}

/* Narrows the fp32 tile (if needed) and DMAs it to y. One pass: the
 * transfer is counted and the host writes acc into y itself, narrowing row
 * by row, unless the kernel already wrote y (y_done, px_to_y). */
static int store_tile(struct conv_ctx *cx, const struct ops_conv_tile *tp,
		      const float *acc, void *out, int y_done, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t n = tp->nk * tp->npix;
	int64_t dst = ((tp->ni * d->k + tp->g * d->kpg + tp->k0) * d->oh + tp->oh0) *
		      d->ow + tp->ow0;
	const void *src = acc;

	if (cx->dt != OPS_F32) {
		if (!cx->dry && !cx->onep)
			ops_from_f32(cx->dt, acc, out, (size_t)n);
		ops_compute(cx->dev, cx->dt, 0, 0, (uint64_t)n * 4, (uint64_t)n * cx->es);
		src = out;
	}
	if (cx->onep && !cx->dry && !y_done) {
		for (int64_t l = 0; l < tp->nk; l++) {
			const float *a = acc + l * tp->npix;
			int64_t yl = dst + l * d->oh * d->ow;

			if (cx->dt == OPS_F32) {
				ops_kern->copy_rows((unsigned char *)((float *)cx->y + yl),
						    d->ow * (int64_t)sizeof(float),
						    (const unsigned char *)a,
						    tp->now * (int64_t)sizeof(float),
						    (size_t)tp->now * sizeof(float), tp->noh);
				continue;
			}
			for (int64_t r = 0; r < tp->noh; r++)
				ops_from_f32(cx->dt, a + r * tp->now, at(cx->y, yl + r * d->ow, cx->es),
					     (size_t)tp->now);
		}
	}
	return ops_conv_dma3(cx->dev, cx->onep, OPS_GLOBAL, at(cx->y, dst, cx->es), OPS_SHARED, src,
		     cx->es, tp->nk, tp->noh, tp->now, tp->npix, tp->now, 1,
		     d->oh * d->ow, d->ow, 1, err);
}

/* A one-pass tile's operands for channel block c0: its patch in the
 * bands (*x, or cx->xpcur by channel pairs) and its weights (*w: the KCRS
 * rows of w, widened once, for the pixel-vector kernel, ldw = cpg*r*s
 * apart; else the block packed once, or cx->wacur's bf16 rows). */
static void onep_operands(struct conv_ctx *cx, const struct ops_conv_tile *tp, int64_t c0,
			  const void **x, const float **w)
{
	const struct ops_conv_dims *d = &cx->d;

	if (cx->cl) { /* every channel block of the tile's group, at its position */
		cx->xncur = cx->xn + (((tp->ni * d->groups + tp->g) * cx->ncblk) * cx->nsb * cx->clp +
				      tp->oh0 * d->sh * cx->clw + tp->ow0 * d->sw) * 32;
		return;
	}
	int64_t rs = d->r * d->s, owt = tp->ow0 / cx->t.tow, kt = tp->k0 / cx->t.tk;
	int64_t cblk = c0 / cx->t.tc, blk = (tp->g * cx->ntk + kt) * cx->ncblk + cblk;
	int64_t row = tp->oh0 * d->sh * cx->bw;
	int64_t xo = ((owt * d->n + tp->ni) * d->c + tp->g * d->cpg + c0) * cx->cp + row;

	if (cx->pairs)
		cx->xpcur = cx->xp + ((((owt * d->n + tp->ni) * d->groups + tp->g) * cx->ncblk + cblk) *
				      cx->npair * cx->plane + row) * 2;
	else if (cx->amx)
		*x = cx->xh + xo;
	else
		*x = cx->xf + xo;
	if (cx->amx) {
		cx->wacur = cx->wab ? cx->wab + blk * cx->wabblk : NULL;
	} else if (cx->px && !cx->lanes) {
		*w = (cx->wf ? cx->wf : (const float *)cx->w) +
		     ((tp->g * d->kpg + tp->k0) * d->cpg + c0) * rs;
		cx->ldw = d->cpg * rs;
	} else {
		*w = cx->wpk + blk * cx->wpkblk;
	}
}

/* A tile on the channel-last kernel: every channel block of it. */
static void cl_tile(struct conv_ctx *cx, const struct ops_conv_tile *tp)
{
	const void *xk;
	const float *wk;

	if (cx->gemm) /* computed whole when the tiles are done (cl_flush) */
		return;
	onep_operands(cx, tp, 0, &xk, &wk);
	compute_direct_cl(cx, tp);
}

/* Whether every tile of a one-pass launch writes its outputs to y from
 * its compute alone (nothing through the tile's accumulator): the
 * channel-last and 1x1 GEMM kernels, and the fp32 pixel-vector and lanes
 * kernels on one channel block or every block at once (px_whole), bias
 * and activation included (px_to_y). Such a tile's counting (its
 * transfers, counted as they were, and its compute) is a function of the
 * shape, the plan and the device's envelope, not of the data. */
static int onep_writes_y(const struct conv_ctx *cx)
{
	return cx->onep && (cx->cl || cx->gemm ||
			    (cx->px && !cx->amx && (cx->px_whole || cx->ncblk == 1)));
}

/* The memo that stands for this launch's counting, or NULL: a one-pass
 * launch whose tiles write y themselves (onep_writes_y), taken under the
 * same tiles, kernels and buffering (the bench's fp32 3x3 conv on the
 * direct strategy: 1.6% faster on the driver loop's best, eight paired
 * runs; a 512-channel 7x7 one's kernel dwarfs its counting). */
static struct cl_memo *cl_memo_of(const struct conv_ctx *cx)
{
	if (!cx->priv || cx->dry || !onep_writes_y(cx))
		return NULL;
	return &cx->priv->memo[cx->dev->nrecs != 0];
}

static int cl_memo_fits(const struct conv_ctx *cx, const struct cl_memo *cm)
{
	return cm && ops_launch_memo_fits(cx->dev, &cm->m) && cm->kern == ops_kern &&
	       cm->db == cx->db && !memcmp(&cm->t, &cx->t, sizeof cm->t);
}

/* What conv_tile computes for a tile of such a launch, without its
 * counting: the channel-last kernel's jobs queued (the GEMM's whole
 * output comes at cl_flush), or the pixel-vector or lanes kernel over
 * every channel at once, into y (the accumulator unused: to_y). */
static void onep_tile(struct conv_ctx *cx, const struct ops_conv_tile *tp)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t rs = d->r * d->s, last = (cx->ncblk - 1) * cx->t.tc;
	const void *xk = NULL;
	const float *wk = NULL;

	if (cx->cl) {
		cl_tile(cx, tp);
		return;
	}
	if (cx->gemm)
		return;
	cx->ldw = (d->cpg - last) * rs; /* as conv_tile leaves it at the last block */
	onep_operands(cx, tp, 0, &xk, &wk);
	fill_offsets(cx, d->cpg);
	compute_direct_px(cx, tp, d->cpg * rs, xk, wk, NULL, 1, 1);
}

/* The launch's tiles computed without counting, then the memo's counts
 * and record added (cl_memo_fits said so): the same outputs, counters and
 * record as a counted launch (test_launch_memo). */
static int cl_replay(struct conv_ctx *cx, const struct cl_memo *cm, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	const struct ops_conv_tiles *tl = &cx->t;
	struct ops_conv_tile tp;

	/* every tile once, in the decoded order's nesting without its
	 * divisions (a dozen a tile were 2% of the bench's bf16 launch); the
	 * order does not matter here: tiles write disjoint outputs, and the
	 * queued jobs run sorted (cl_flush) */
	for (tp.ni = 0; tp.ni < d->n; tp.ni++)
	for (tp.g = 0; tp.g < d->groups; tp.g++)
	for (tp.k0 = 0; tp.k0 < d->kpg; tp.k0 += tl->tk)
	for (tp.oh0 = 0; tp.oh0 < d->oh; tp.oh0 += tl->toh)
	for (tp.ow0 = 0; tp.ow0 < d->ow; tp.ow0 += tl->tow) {
		tp.nk = min64(tl->tk, d->kpg - tp.k0);
		tp.noh = min64(tl->toh, d->oh - tp.oh0);
		tp.now = min64(tl->tow, d->ow - tp.ow0);
		tp.npix = tp.noh * tp.now;
		onep_tile(cx, &tp);
	}
	cl_flush(cx);
	return ops_launch_replay(cx->dev, &cm->m, err);
}

static int conv_tile(struct conv_ctx *cx, struct conv_bufs *bs,
		     const struct ops_conv_tile *tp, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	int direct = cx->strat == OPS_STRAT_DIRECT;
	int64_t kb = direct ? DIRECT_KB : GEMM_KB, pbw = direct ? DIRECT_PB : GEMM_PB;
	int64_t c0, it = 0;
	float *acc = bs->b[B_ACC].data;
	float *bias = acc ? acc + cx->t.tk * cx->t.toh * cx->t.tow : NULL;
	int rc, y_done = 0;

	for (c0 = 0; c0 < d->cpg; c0 += cx->t.tc, it++) {
		int64_t nc = min64(cx->t.tc, d->cpg - c0), terms = nc * d->r * d->s;
		int slot = cx->db ? (int)(it & 1) : 0;
		void *xb = bs->b[B_X0 + slot].data, *wb = bs->b[B_W0 + slot].data;
		float *x32 = cx->dt == OPS_F32 ? xb : bs->b[B_X32].data;
		float *w32 = cx->dt == OPS_F32 ? wb : bs->b[B_W32].data;
		int64_t nkb = ceil_div(tp->nk, kb), npb = ceil_div(tp->npix, pbw);
		uint64_t rd, wr;

		rc = load_patch(cx, tp, c0, nc, xb, x32, err);
		if (rc < 0)
			return rc;
		rc = load_weights(cx, tp, c0, nc, kb, wb, w32, err);
		if (rc < 0)
			return rc;
		/* compute reads: per microkernel call and term, kb weights and
		 * pbw inputs (fp32); plus the partial sums read back */
		rd = (uint64_t)(nkb * npb * terms * (kb + pbw)) * 4 +
		     (c0 ? (uint64_t)(tp->nk * tp->npix) * 4 : 0);
		wr = (uint64_t)(tp->nk * tp->npix) * 4;
		if (!direct) {
			/* the im2col panels written then read */
			wr += (uint64_t)(npb * GEMM_PB * terms) * 4;
			rd += (uint64_t)(npb * GEMM_PB * terms) * 4;
		}
		if (!cx->dry) {
			const void *xk = cx->amx ? (const void *)xb : (const void *)x32;
			const float *wk = w32;
			/* a one-pass tile of one channel block on the pixel-vector
			 * kernel writes y itself (px_to_y) */
			int to_y = cx->onep && cx->px && nc == d->cpg;
			/* computed whole at its last channel block (cl, px_whole) */
			int whole = cx->cl || cx->gemm || (cx->px && cx->px_whole && !cx->amx);

			cx->ldw = terms;
			cx->wacur = cx->wa;
			cx->xpcur = cx->xp;
			if (cx->onep && !whole)
				onep_operands(cx, tp, c0, &xk, &wk);
			if (!cx->pairs && !whole) /* (the pairs kernel takes cx->toff) */
				fill_offsets(cx, nc);
			if (cx->pairs) {
				int64_t np = cx->phm * cx->pwm;

				cx->cur_kt = tp->k0 / cx->t.tk;
				cx->cur_cblk = c0 / cx->t.tc;
				if (!cx->onep)
					ops_kern->conv_bf16_pack_pairs(xb, np, nc, np, cx->xp,
								       cx->plane,
								       ceil_div(nc, 32) * 16);
			}
			if (cx->cl) {
				/* every channel block in one pass, at the last one */
				if (c0 + cx->t.tc >= d->cpg)
					cl_tile(cx, tp);
				to_y = 1;
			} else if (cx->gemm) {
				to_y = 1; /* computed whole at the launch's end */
			} else if (whole) {
				/* the same on the pixel-vector or the lanes kernel
				 * (which finds its weights itself, lanes_weights) */
				if (c0 + cx->t.tc >= d->cpg) {
					onep_operands(cx, tp, 0, &xk, &wk);
					fill_offsets(cx, d->cpg);
					compute_direct_px(cx, tp, d->cpg * d->r * d->s, xk, wk, acc, 1, 1);
				}
				to_y = 1;
			} else if (cx->px)
				compute_direct_px(cx, tp, terms, xk, wk, acc, c0 == 0, to_y);
			else if (direct)
				compute_direct(cx, tp, terms, xk, wk, acc, c0 == 0);
			else
				compute_im2col(cx, tp, terms, xk, wk,
					       bs->b[B_COL].data, acc, c0 == 0);
			y_done = to_y;
		}
		ops_compute(cx->dev, cx->dt, (uint64_t)(tp->nk * tp->npix * terms), 0, rd, wr);
	}
	if (cx->epi) {
		uint64_t n = (uint64_t)(tp->nk * tp->npix);
		struct ops_dma_desc dd;

		memset(&dd, 0, sizeof dd);
		dd.rank = 1;
		dd.shape[0] = tp->nk;
		dd.src_stride[0] = 1;
		dd.dst_stride[0] = 1;
		dd.elem_bytes = 4;
		if (cx->onep) {
			rc = ops_dma_split_count(cx->dev, OPS_SHARED, OPS_GLOBAL, &dd, err);
			bias = cx->dry ? NULL : (float *)(uintptr_t)cx->bias + tp->g * d->kpg + tp->k0;
		} else {
			rc = ops_dma_split(cx->dev, OPS_SHARED, bias, OPS_GLOBAL,
					   at(cx->bias, tp->g * d->kpg + tp->k0, 4), &dd, err);
		}
		if (rc < 0)
			return rc;
		if (!cx->dry && !y_done)
			epilogue_f32(cx->act, bias, acc, tp->nk, tp->npix);
		ops_compute(cx->dev, OPS_F32, 0, cx->act != OPS_ACT_NONE ? 2 * n : n,
			    (cx->act != OPS_ACT_NONE ? 2 * n : n) * 4 + (uint64_t)tp->nk * 4,
			    (cx->act != OPS_ACT_NONE ? 2 * n : n) * 4);
	}
	return store_tile(cx, tp, acc, bs->b[B_OUT].data, y_done, err);
}

/* Channel blocks of at least 16 channels take the channel-pair kernel
 * (fewer than 16 would be more than half zeros in its 32-channel blocks):
 * its scratch, the tap offsets and the launch's weights laid out once.
 * Larger than WQ_MAX_ELEMS weights stay with the per-term kernel. */
#define WQ_MAX_ELEMS ((int64_t)1 << 26)
static int pairs_setup(struct conv_ctx *cx, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	const struct ops_kern *kn = ops_kern;
	int64_t rs = d->r * d->s, nq;

	cx->nkbt = ceil_div(cx->t.tk, DIRECT_KB);
	cx->ncblk = ceil_div(d->cpg, cx->t.tc);
	cx->wqblk = ceil_div(cx->t.tc, 32) * rs * 512;
	if (!kn->conv_bf16_pairs || !kn->conv_bf16_pack_pairs || cx->t.tc < 16 ||
	    prod4_over(d->groups * cx->ntk, cx->nkbt, cx->ncblk, cx->wqblk, &nq) ||
	    nq > WQ_MAX_ELEMS)
		return 0;
	cx->npair = ceil_div(cx->t.tc, 32) * 16;
	/* reads reach 15 positions past the patch (isa_int.h); one pass:
	 * past the band, whose pairs are laid out for the whole launch */
	cx->plane = ceil_div(cx->phm * cx->pwm + 16, 16) * 16;
	if (!cx->onep)
		cx->xp = calloc((size_t)(cx->npair * cx->plane * 2), sizeof *cx->xp);
	nq = d->groups * cx->ntk * cx->nkbt * cx->ncblk * cx->wqblk;
	cx->toff = malloc(sizeof *cx->toff * (size_t)rs);
	/* 64-byte aligned: an A tile load of unaligned rows was slower
	 * (22 against 26 ns a tdpbf16ps with aligned A rows, this host) */
	cx->wq = aligned_alloc(64, (size_t)ceil_div(nq * (int64_t)sizeof *cx->wq, 64) * 64);
	if ((!cx->onep && !cx->xp) || !cx->toff || !cx->wq)
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the kernel's scratch");
	fill_tap_offsets(cx, cx->bw);
	wq_fill(cx);
	cx->pairs = 1;
	return 0;
}

/* The channel-last band's row pitch and block stride. A row's right halo
 * columns are zeros, as are the next row's left ones: rows one pitch
 * apart that overlap them (the pitch short of the padded width by up to
 * min(pw, the right halo)) read the same zeros past a row's end, in the
 * next row's left halo, and a block has that many zero positions of slack
 * past its last row. The bench's 3x3 conv at 56x56: 57 positions a row
 * instead of 58, so its pieces of 16 laid over the rows' ends (cl_geom_of)
 * are 200 where they were 203, and the bands 1.7% smaller. */
static void cl_band_pitch(struct conv_ctx *cx)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t full = (d->ow - 1) * d->sw + (d->s - 1) * d->dw + 1;
	int64_t share = max64(0, min64(d->pw, full - d->pw - d->w));

	cx->clw = full - share;
	cx->clshare = share;
	cx->clp = cx->bh * cx->clw + share;
}

/* Whether a one-pass bf16 launch on AMX takes the channel-last kernel:
 * channel blocks of at least 16 channels (fewer would be more than half
 * zeros in its 32-channel blocks) and the launch's B tiles within
 * WQ_MAX_ELEMS. Sets its geometry and the tap offsets. */
static int cl_setup(struct conv_ctx *cx, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t rs = d->r * d->s, nel;

	if (!ops_kern->conv_bf16_cl || !ops_kern->conv_bf16_cl_row || !cx->onep || cx->t.tc < 16 ||
	    cx->ncblk * ceil_div(cx->t.tc, 32) * rs > OPS_CL_MAX_STEPS)
		return 0;
	cx->nkbt = ceil_div(cx->t.tk, DIRECT_KB);
	cx->nsb = ceil_div(cx->t.tc, 32);
	cx->wnblk = cx->nsb * rs * 512;
	if (prod4_over(d->groups * cx->ntk, cx->ncblk, cx->nkbt, cx->wnblk, &nel) ||
	    nel > WQ_MAX_ELEMS)
		return 0;
	cx->toff = malloc(sizeof *cx->toff * (size_t)rs);
	cx->clq = calloc(1, sizeof *cx->clq);
	if (!cx->toff || !cx->clq)
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the kernel's scratch");
	cl_band_pitch(cx);
	fill_tap_offsets(cx, cx->clw);
	cx->cl = 1;
	cx->gemm = ops_kern->conv_bf16_gemm && rs == 1 && d->sh == 1 && d->sw == 1 && d->ph == 0 &&
		   d->pw == 0 && !cx->epi;
	return 0;
}

/* ---- one pass ------------------------------------------------------------------
 * A host has no DMA engine beside its core: a tile's patch, weights and
 * output staged through SHARED are copies on the thread that computes,
 * per tile (the patch once per k-tile, the weights once per spatial tile),
 * 40% of make bench's fp32 conv. A one-pass launch pads the input once into
 * bands (one per ow-tile, pwm columns wide, the rows of every oh-tile's
 * patch: the same row pitch as a tile's patch, so the pixel-vector
 * kernel's runs of whole rows stay as dense) and lays the weights out once;
 * every tile's kernel reads them in place, and writes y. Each tile's
 * transfers are counted as they were (ops_dma_split_count): the counters
 * are the accelerator's, unchanged. The bands are host scratch, not a device
 * buffer, so nothing is counted for them. */

/* Bands of at most ONEP_MAX_ELEMS elements and ONEP_MAX_RATIO times the
 * input (plus 2^16): tiny ow-tiles of a wide filter repeat most columns in
 * every band, and such plans keep the staged path. */
#define ONEP_MAX_ELEMS ((int64_t)1 << 26)
#define ONEP_MAX_RATIO 4

/* Whether the tiled launch runs in one pass: from the shape and plan only,
 * so that a dry run and every ISA path mark the same launches. Sets the
 * bands' geometry (cx->bh, cx->cp). */
static int conv_one_pass_fits(struct conv_ctx *cx)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t nel, nx;

	cx->bh = (d->oh - 1) * d->sh + (d->r - 1) * d->dh + 1;
	cx->cp = cx->bh * cx->pwm;
	if (cx->strat == OPS_STRAT_UNTILED ||
	    prod4_over(cx->ntw, d->n, d->c, cx->cp, &nel) || nel > ONEP_MAX_ELEMS ||
	    prod4_over(d->n, d->c, d->h, d->w, &nx) || nel > ONEP_MAX_RATIO * nx + ((int64_t)1 << 16) ||
	    cx->t.tc * cx->cp >= INT32_MAX)
		return 0;
	return 1;
}

/* n elements of es bytes at p set to zero (a few, at a band's edges). */
static void zero_small(void *p, size_t es, int64_t n)
{
	if (es == 4)
		for (int64_t i = 0; i < n; i++)
			((float *)p)[i] = 0.0f;
	else
		for (int64_t i = 0; i < n; i++)
			((uint16_t *)p)[i] = 0;
}

/* The input padded into the bands: dst[((b*n + ni)*c + ch)*cp + row*pwm +
 * col] = x[ni, ch, row - ph, b*tow*sw - pw + col], zero outside the image;
 * fp32 widened from the storage dtype (f32 != 0), else the storage
 * elements copied. */
static void bands_fill(const struct conv_ctx *cx, void *dst, int f32)
{
	const struct ops_conv_dims *d = &cx->d;
	const size_t des = f32 ? 4 : cx->es, ses = cx->es;
	int64_t rv0 = min64(d->ph, cx->bh), rv1 = min64(d->ph + d->h, cx->bh);

	for (int64_t b = 0; b < cx->ntw; b++) {
		int64_t col0 = b * cx->t.tow * d->sw - d->pw;
		int64_t lo = min64(max64(0, -col0), cx->pwm), hi = max64(lo, min64(cx->pwm, d->w - col0));
		const int64_t bw = cx->bw;

		for (int64_t p = 0; p < d->n * d->c; p++) {
			unsigned char *pl = (unsigned char *)dst + (size_t)((b * d->n * d->c + p) * cx->cp) * des;
			const unsigned char *sp = (const unsigned char *)cx->x + (size_t)(p * d->h * d->w) * ses;

			if (rv1 <= rv0 || hi <= lo) {
				memset(pl, 0, (size_t)cx->cp * des);
				continue;
			}
			memset(pl, 0, (size_t)(rv0 * bw) * des);
			memset(pl + (size_t)(rv1 * bw) * des, 0, (size_t)((cx->bh - rv1) * bw) * des);
			for (int64_t row = rv0; row < rv1; row++) {
				unsigned char *dr = pl + (size_t)(row * bw) * des;

				zero_small(dr, des, lo);
				zero_small(dr + (size_t)hi * des, des, bw - hi);
			}
			sp += (size_t)((rv0 - d->ph) * d->w + col0 + lo) * ses;
			pl += (size_t)(rv0 * bw + lo) * des;
			if (!f32 || cx->dt == OPS_F32)
				ops_kern->copy_rows(pl, bw * (int64_t)des, sp, d->w * (int64_t)ses,
						    (size_t)(hi - lo) * des, rv1 - rv0);
			else
				for (int64_t row = rv0; row < rv1; row++)
					ops_to_f32(cx->dt, sp + (size_t)((row - rv0) * d->w) * ses,
						   (float *)(void *)(pl + (size_t)((row - rv0) * bw) * des),
						   (size_t)(hi - lo));
		}
	}
}

/* The weights of every (group, k-tile, channel block of tc channels, ncblk
 * of them) in the layout the chosen kernel reads, once for the launch
 * (load_weights' layouts; the lanes kernel's one block of every channel). */
static void weights_fill(struct conv_ctx *cx, const float *wsrc, int64_t tc, int64_t ncblk)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t rs = d->r * d->s, crs = d->cpg * rs;
	int64_t kb = cx->strat == OPS_STRAT_DIRECT ? DIRECT_KB : GEMM_KB;

	for (int64_t g = 0; g < d->groups; g++)
	for (int64_t kt = 0; kt < cx->ntk; kt++)
	for (int64_t cb = 0; cb < ncblk; cb++) {
		int64_t blk = (g * cx->ntk + kt) * ncblk + cb;
		int64_t k0 = kt * cx->t.tk, nk = min64(cx->t.tk, d->kpg - k0);
		int64_t c0 = cb * tc, terms = min64(tc, d->cpg - c0) * rs;
		int64_t nkb = ceil_div(nk, kb);

		if (cx->wab) {
			/* the bf16 kernel's A rows, lda apart, zero past terms and nk */
			const uint16_t *ws = (const uint16_t *)cx->w + ((g * d->kpg + k0) * d->cpg + c0) * rs;
			uint16_t *a = cx->wab + blk * cx->wabblk;

			memset(a, 0, (size_t)cx->wabblk * sizeof *a);
			for (int64_t l = 0; l < nk; l++)
				memcpy(a + l * cx->lda, ws + l * crs, (size_t)terms * sizeof *a);
			continue;
		}
		/* [nkb][terms][kb], zero past nk */
		float *o = cx->wpk + blk * cx->wpkblk;
		const float *ws = wsrc + ((g * d->kpg + k0) * d->cpg + c0) * rs;

		/* each kb-row block of KCRS rows transposed by the path's kernel
		 * (an element at a time this was 1% of the bench's fp32 conv) */
		memset(o, 0, (size_t)(nkb * kb * terms) * sizeof *o);
		for (int64_t b = 0; b < nkb; b++)
			ops_kern->transpose[2](ws + b * kb * crs, crs, o + b * terms * kb, kb,
					       min64(kb, nk - b * kb), terms);
	}
}

/* The channel pairs of a one-pass launch: the tile loads of B rows that
 * are not 64-byte aligned took twice as long (a 3x3 tile's 16 x 238
 * pixels: 4.4 against 2.2 us), and the taps one column apart cannot all
 * be aligned in one copy. So with filters up to 4 wide the bands' rows are
 * padded to a multiple of 16 pixels and every pair plane holds one copy per
 * column tap, copy j shifted by j*dw: every tap's B tile starts on a
 * 64-byte boundary. Wider filters (or copies over ONEP_MAX_ELEMS) keep one
 * copy at the patch width. */
static void pairs_onep_layout(struct conv_ctx *cx)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t bw = ceil_div(cx->pwm, 16) * 16, cpj = ceil_div(cx->bh * bw + 16, 16) * 16, nel;

	cx->nshift = 1;
	if (d->s <= 4 && !prod4_over(cx->ntw * d->n, d->groups * cx->ncblk * cx->npair,
				     d->s * cpj, 2, &nel) && nel <= 2 * ONEP_MAX_ELEMS) {
		cx->nshift = d->s;
		cx->bw = bw;
		cx->cp = cx->bh * bw;
		cx->cpitch = cx->cp;
	}
	cx->cpj = ceil_div(cx->cp + 16, 16) * 16;
	cx->plane = cx->nshift * cx->cpj;
	for (int64_t i = 0; i < d->r; i++)
		for (int64_t j = 0; j < d->s; j++)
			cx->toff[i * d->s + j] = (int32_t)(i * d->dh * cx->bw +
							   (cx->nshift > 1 ? j * cx->cpj : j * d->dw));
}

/* The input padded into channel-last blocks, cx->xn[(blk*clp + row*clw +
 * col)*32 + c] for the blocks blk = (ni*groups + g)*ncblk*nsb + cblk*nsb +
 * sb, each 32 channels of a position in one 64-byte row: one band of the
 * whole padded width for every ow-tile (bands_fill's per ow-tile would
 * hold the halo columns twice and keep two ow-tiles' jobs from merging,
 * cl_flush). */
static void cl_fill_input(const struct conv_ctx *cx)
{
	const struct ops_conv_dims *d = &cx->d;
	const uint16_t *x = cx->x;
	int64_t rv0 = min64(d->ph, cx->bh), rv1 = min64(d->ph + d->h, cx->bh);
	int64_t lo = min64(d->pw, cx->clw), hi = max64(lo, min64(cx->clw, d->w + d->pw));
	uint16_t *dst = cx->xn;

	for (int64_t ni = 0; ni < d->n; ni++)
	for (int64_t g = 0; g < d->groups; g++)
	for (int64_t cbk = 0; cbk < cx->ncblk; cbk++)
	for (int64_t sb = 0; sb < cx->nsb; sb++, dst += cx->clp * 32) {
		int64_t c0 = cbk * cx->t.tc + 32 * sb;
		int64_t nc = max64(0, min64(min64(32, cx->t.tc - 32 * sb), d->cpg - c0));
		const uint16_t *src = x + ((ni * d->c + g * d->cpg + c0) * d->h) * d->w + lo - d->pw;

		for (int64_t row = 0; row < cx->bh; row++) {
			uint16_t *dr = dst + row * cx->clw * 32;

			if (row < rv0 || row >= rv1 || hi <= lo || nc == 0)
				memset(dr, 0, (size_t)cx->clw * 32 * sizeof *dr);
			else
				ops_kern->conv_bf16_cl_row(src + (row - d->ph) * d->w, d->h * d->w,
							   (int)nc, lo, hi, cx->clw, dr);
		}
		/* the shared halo past the last row */
		memset(dst + cx->bh * cx->clw * 32, 0, (size_t)cx->clshare * 32 * sizeof *dst);
	}
}

/* The launch's weights as the kernel's B tiles in cx->wn (ops_kern's
 * conv_bf16_cl), [g][k-tile][16-channel block][channel block][wnblk]: per
 * 16-channel block, each channel's [c][tap] row transposed to [tap][c] in
 * tk (16 x taps x nsb*32, zero past nk and the channels), then for each
 * 32-channel block and tap the 16 x 16 channel pairs (32-bit) transposed
 * to the B tile's [pair][k]. A scalar loop over the 36 K weights of the
 * bench's conv cost 15% of its launch. */
static void cl_fill_weights(const struct conv_ctx *cx, uint16_t *tk)
{
	const struct ops_conv_dims *d = &cx->d;
	const uint16_t *w = cx->w;
	int64_t rs = d->r * d->s, ncp = cx->nsb * 32;

	for (int64_t g = 0; g < d->groups; g++)
	for (int64_t kt = 0; kt < cx->ntk; kt++)
	for (int64_t cbk = 0; cbk < cx->ncblk; cbk++)
	for (int64_t kb = 0; kb < cx->nkbt; kb++) {
		uint16_t *o = cx->wn + wblock(cx, g, kt, kb, cbk) * cx->wnblk;
		int64_t kfirst, nk = max64(0, kblock_range(cx, kt, kb, &kfirst) - kfirst);
		int64_t cfirst = cbk * cx->t.tc, nc = min64(cx->t.tc, d->cpg - cfirst);

		memset(tk, 0, (size_t)(DIRECT_KB * rs * ncp) * sizeof *tk);
		for (int64_t k = 0; k < nk; k++)
			ops_kern->transpose[1](w + ((g * d->kpg + kfirst + k) * d->cpg + cfirst) * rs, rs,
					       tk + k * rs * ncp, ncp, nc, rs);
		for (int64_t sb = 0; sb < cx->nsb; sb++)
			for (int64_t t = 0; t < rs; t++)
				ops_kern->transpose[2](tk + t * ncp + 32 * sb, rs * ncp / 2,
						       o + (sb * rs + t) * 512, 16, DIRECT_KB, 16);
	}
}

/* Whether the instance kept B tiles for these weights and tiles: then
 * cx->wn is theirs. (The weights' size is the instance's shape's, which
 * never changes: their data and version name them.) */
static int cl_weights_kept(struct conv_ctx *cx, int64_t nw)
{
	const struct conv_priv *pv = cx->priv;

	if (!pv || !pv->wn || pv->nw != nw || pv->t.tk != cx->t.tk ||
	    pv->t.tc != cx->t.tc || pv->t.toh != cx->t.toh || pv->t.tow != cx->t.tow ||
	    pv->wsrc != cx->w || pv->wver != cx->wver || pv->wn_gemm != cx->gemm)
		return 0;
	cx->wn = pv->wn;
	cx->wn_kept = 1;
	return 1;
}

/* Hands the launch's freshly packed B tiles to the instance, with what
 * names the weights they came from. */
static void cl_weights_keep(struct conv_ctx *cx, int64_t nw)
{
	struct conv_priv *pv = cx->priv;

	if (!pv)
		return;
	free(pv->wn);
	pv->wn = cx->wn;
	pv->nw = nw;
	pv->wsrc = cx->w;
	pv->wver = cx->wver;
	pv->wn_gemm = cx->gemm;
	pv->t = cx->t;
	cx->wn_kept = 1;
}

/* The 1x1 GEMM launch's A tiles in cx->wn, [g][16-channel vector][32-channel
 * block][16][32] (conv_bf16_gemm's layout, zero past the channels), kept
 * by the instance as the channel-last B tiles are, and its scratch. */
static int gemm_layout(struct conv_ctx *cx, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	const uint16_t *w = cx->w;
	int64_t nv = ceil_div(d->kpg, DIRECT_KB), ncb = ceil_div(d->cpg, 32);
	int64_t nw = d->groups * nv * ncb * 512;

	cx->gbuf = aligned_alloc(64, sizeof *cx->gbuf * 2048 * (size_t)ncb);
	if (!cx->gbuf)
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the 1x1 GEMM's scratch");
	if (cl_weights_kept(cx, nw))
		return 0;
	cx->wn = aligned_alloc(64, (size_t)ceil_div(nw * 2, 64) * 64);
	if (!cx->wn)
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the 1x1 GEMM's weights");
	memset(cx->wn, 0, (size_t)nw * sizeof *cx->wn);
	for (int64_t g = 0; g < d->groups; g++)
		for (int64_t k = 0; k < d->kpg; k++)
			for (int64_t c = 0; c < d->cpg; c++)
				cx->wn[((g * nv + k / DIRECT_KB) * ncb + c / 32) * 512 +
				       (k % DIRECT_KB) * 32 + c % 32] = w[(g * d->kpg + k) * d->cpg + c];
	cl_weights_keep(cx, nw);
	return 0;
}

/* The channel-last kernel's input and weights for the launch (see
 * cl_fill_input, cl_fill_weights). */
static int cl_layout(struct conv_ctx *cx, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t nblk = d->n * d->groups * cx->ncblk * cx->nsb, nel;
	int64_t nw = d->groups * cx->ntk * cx->ncblk * cx->nkbt * cx->wnblk, rs = d->r * d->s;
	uint16_t *tk;

	if (cx->gemm)
		return gemm_layout(cx, err);
	if (prod4_over(nblk, cx->clp, 32, 1, &nel))
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the one-pass input bands");
	cx->xn = aligned_alloc(64, (size_t)ceil_div(nel * 2, 64) * 64);
	if (!cx->xn)
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the one-pass input bands");
	cl_fill_input(cx);
	if (cl_weights_kept(cx, nw))
		return 0;
	cx->wn = aligned_alloc(64, (size_t)ceil_div(nw * 2, 64) * 64);
	tk = malloc(sizeof *tk * (size_t)(DIRECT_KB * rs * cx->nsb * 32));
	if (!cx->wn || !tk) {
		free(tk);
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the one-pass input bands");
	}
	cl_fill_weights(cx, tk);
	free(tk);
	cl_weights_keep(cx, nw);
	return 0;
}

/* Whether a one-pass launch takes the path's channels-along-lanes kernel:
 * fp32 storage on the pixel-vector path (direct, unit stride along w) and
 * one channel block or every block at once (px_whole), so that each tile's
 * sums are whole when the kernel writes them to y. fp16 widened to fp32
 * keeps the pixel-vector kernel, whose px_to_y narrows. */
static int lanes_fits(const struct conv_ctx *cx)
{
	return cx->px && cx->dt == OPS_F32 && ops_kern->conv_direct_lanes &&
	       (cx->ncblk == 1 || cx->px_whole);
}

/* The launch's weights packed once for conv_direct_lanes, [nkb][terms][16]
 * per (group, k-tile) (weights_fill), every block 64-byte aligned: each
 * term's weight vector is one cache line. */
static int lanes_setup(struct conv_ctx *cx, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	/* several channel blocks (px_whole): one block of every channel */
	int64_t tc = cx->ncblk > 1 ? d->cpg : cx->t.tc, nel;

	cx->wpkblk = ceil_div(cx->t.tk, DIRECT_KB) * DIRECT_KB * tc * d->r * d->s;
	nel = d->groups * cx->ntk * cx->wpkblk;
	cx->wpk = aligned_alloc(64, (size_t)ceil_div(nel * (int64_t)sizeof *cx->wpk, 64) * 64);
	if (!cx->wpk)
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the packed weights");
	weights_fill(cx, cx->w, tc, 1);
	cx->lanes = 1;
	return 0;
}

/* Whether a one-pass fp32 launch is an unpadded 1x1 conv at unit stride
 * without an epilogue, on planes of at least GEMM_F32_MIN_PLANE positions,
 * which the path computes as one GEMM a plane from x and w as they are
 * (ops_kern.conv_f32_gemm, gemm_run): its tiles are counted as the direct
 * strategy's, and computed when they are done. On smaller planes the
 * lanes kernel was faster (14x14, 256 -> 256: 197 against 251 us; 7x7
 * was the other way, 1079 against 878 us, 512 -> 2048, but left alone). */
#define GEMM_F32_MIN_PLANE 400

static int gemm_f32_fits(const struct conv_ctx *cx)
{
	const struct ops_conv_dims *d = &cx->d;

	return cx->dt == OPS_F32 && ops_kern->conv_f32_gemm && cx->onep && cx->px &&
	       cx->strat == OPS_STRAT_DIRECT && !cx->epi && d->r == 1 && d->s == 1 && d->sh == 1 &&
	       d->sw == 1 && d->ph == 0 && d->pw == 0 && d->h * d->w >= GEMM_F32_MIN_PLANE;
}

/* The one-pass launch's scratch (real runs): bands, weights and, with the
 * channel-pair kernel, the bands re-laid as channel pairs once. */
static int onep_setup(struct conv_ctx *cx, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	int64_t nb = cx->ntw * d->n * d->c * cx->cp + 64, nw = d->k * d->cpg * d->r * d->s;
	const float *wsrc = cx->w;
	int rc = 0;

	if (cx->cl)
		return cl_layout(cx, err);
	if (cx->gemm) /* fp32: x and w read as they are (gemm_run) */
		return 0;
	/* bands_fill writes every element but the 64 of slack at the end
	 * (calloc cleared the whole bands first) */
	if (cx->amx) {
		cx->xh = malloc(sizeof *cx->xh * (size_t)nb);
		if (!cx->xh)
			goto nomem;
		bands_fill(cx, cx->xh, 0);
		memset(cx->xh + nb - 64, 0, 64 * sizeof *cx->xh);
	} else {
		cx->xf = malloc(sizeof *cx->xf * (size_t)nb);
		if (!cx->xf)
			goto nomem;
		bands_fill(cx, cx->xf, 1);
		memset(cx->xf + nb - 64, 0, 64 * sizeof *cx->xf);
	}
	if (cx->pairs) {
		/* every band's channel blocks as pairs, nshift copies of each
		 * pair plane cpj apart, copy j shifted by column tap j
		 * (pack_pairs zeroes the pairs past a block's channels; each
		 * copy's tail is zeroed here) */
		int64_t np = cx->bh * cx->bw, nel;

		if (prod4_over(cx->ntw * d->n, d->groups * cx->ncblk, cx->npair, cx->plane * 2, &nel))
			goto nomem;
		cx->xp = aligned_alloc(64, (size_t)ceil_div(nel * (int64_t)sizeof *cx->xp, 64) * 64);
		if (!cx->xp)
			goto nomem;
		for (int64_t b = 0; b < cx->ntw * d->n; b++)
		for (int64_t g = 0; g < d->groups; g++)
		for (int64_t cb = 0; cb < cx->ncblk; cb++) {
			int64_t c0 = cb * cx->t.tc, nc = min64(cx->t.tc, d->cpg - c0);
			const uint16_t *src = cx->xh + (b * d->c + g * d->cpg + c0) * cx->cp;
			uint16_t *dst = cx->xp + ((b * d->groups + g) * cx->ncblk + cb) *
						 cx->npair * cx->plane * 2;

			/* copy 0 packed, copy j its positions from j*dw on (one
			 * contiguous move per pair: cheaper than packing again) */
			ops_kern->conv_bf16_pack_pairs(src, cx->cp, nc, np, dst, cx->plane, cx->npair);
			for (int64_t pr = 0; pr < cx->npair; pr++) {
				uint16_t *p0 = dst + pr * cx->plane * 2;

				memset(p0 + np * 2, 0, (size_t)(cx->cpj - np) * 2 * sizeof *dst);
				for (int64_t j = 1; j < cx->nshift; j++) {
					int64_t n = np - j * d->dw;

					memcpy(p0 + j * cx->cpj * 2, p0 + j * d->dw * 2,
					       (size_t)n * 2 * sizeof *dst);
					memset(p0 + (j * cx->cpj + n) * 2, 0,
					       (size_t)(cx->cpj - n) * 2 * sizeof *dst);
				}
			}
		}
		free(cx->xh);
		cx->xh = NULL;
		return 0;
	}
	if (cx->amx) {
		cx->wabblk = ceil_div(cx->t.tk, DIRECT_KB) * DIRECT_KB * cx->lda;
		cx->wab = malloc(sizeof *cx->wab * (size_t)(d->groups * cx->ntk * cx->ncblk * cx->wabblk));
		if (!cx->wab)
			goto nomem;
		weights_fill(cx, NULL, cx->t.tc, cx->ncblk);
		return 0;
	}
	if (cx->dt != OPS_F32) {
		cx->wf = malloc(sizeof *cx->wf * (size_t)nw);
		if (!cx->wf)
			goto nomem;
		ops_to_f32(cx->dt, cx->w, cx->wf, (size_t)nw);
		wsrc = cx->wf;
	}
	if (lanes_fits(cx))
		return lanes_setup(cx, err);
	if (!cx->px) {
		int64_t kb = cx->strat == OPS_STRAT_DIRECT ? DIRECT_KB : GEMM_KB;

		cx->wpkblk = ceil_div(cx->t.tk, kb) * kb * cx->t.tc * d->r * d->s;
		cx->wpk = malloc(sizeof *cx->wpk * (size_t)(d->groups * cx->ntk * cx->ncblk * cx->wpkblk));
		if (!cx->wpk)
			goto nomem;
		weights_fill(cx, wsrc, cx->t.tc, cx->ncblk);
	}
	return rc;
nomem:
	return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the one-pass input bands");
}

/* Walks the tiles core by core (see ops_conv_tile_order), one buffer set per core. */
static int conv_launch_tiled(struct conv_ctx *cx, const char *name,
			     struct opr_error *err)
{
	int cores = ops_conv_cores(cx->dev);
	struct conv_bufs bs;
	int64_t i, prev_core = -1, patch;
	int rc;

	cx->phm = (cx->t.toh - 1) * cx->d.sh + (cx->d.r - 1) * cx->d.dh + 1;
	cx->pwm = (cx->t.tow - 1) * cx->d.sw + (cx->d.s - 1) * cx->d.dw + 1;
	patch = cx->t.tc * cx->phm * cx->pwm;
	if (patch >= INT32_MAX)
		return opr_error_set(err, OPR_ELIMIT,
				     "conv2d input patch of %lld elements is too large for one tile",
				     (long long)patch);
	cx->ntk = ceil_div(cx->d.kpg, cx->t.tk);
	cx->nth = ceil_div(cx->d.oh, cx->t.toh);
	cx->ntw = ceil_div(cx->d.ow, cx->t.tow);
	cx->ntiles = cx->d.n * cx->d.groups * cx->ntk * cx->nth * cx->ntw;
	cx->ncblk = ceil_div(cx->d.cpg, cx->t.tc);
	cx->onep = conv_one_pass_fits(cx);
	cx->cpitch = cx->onep ? cx->cp : cx->phm * cx->pwm;
	cx->bw = cx->pwm;
	cx->nshift = 1;
	cx->off = NULL;
	/* one pass with several channel blocks: the pixel-vector kernel takes
	 * a tile's every channel at its last block, the bands holding them all
	 * (the sums were otherwise added up block by block in the tile's
	 * accumulator and written from there: 12% slower on the default
	 * profile's conv under a tile_c = 32 plan) */
	cx->px_whole = cx->onep && cx->ncblk > 1 && cx->d.cpg * cx->cp < INT32_MAX;
	if (!cx->dry) {
		cx->off = malloc(sizeof *cx->off *
				 (size_t)((cx->px_whole ? cx->d.cpg : cx->t.tc) * cx->d.r * cx->d.s));
		cx->off_nc = 0;
		if (!cx->off)
			return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the offset table");
		const struct ops_kern *kn = ops_kern;
		const int amx_ready = cx->dt == OPS_BF16 && kn->conv_bf16_ready && kn->conv_bf16_ready();
		/* the pixel-vector and AMX pair kernels take unit stride along w;
		 * the channel-last one any stride (its A rows sw positions apart):
		 * a stride-2 bf16 conv ran widened to fp32 at a tenth of oneDNN's
		 * AMX kernel */
		const int unit = cx->d.sw == 1 && kn->conv_direct_px;

		if (cx->strat == OPS_STRAT_DIRECT && (unit || (amx_ready && kn->conv_bf16_cl))) {
			cx->amx = amx_ready && (kn->conv_direct_bf16 || !unit);
			cx->lda = ceil_div(cx->t.tc * cx->d.r * cx->d.s, 32) * 32;
			cx->px = malloc(sizeof *cx->px * DIRECT_KB * PX_RUN_MAX);
			if (cx->amx)
				cx->wa = malloc(sizeof *cx->wa *
						(size_t)(ceil_div(cx->t.tk, DIRECT_KB) * DIRECT_KB * cx->lda));
			if (!cx->px || (cx->amx && !cx->wa)) {
				free(cx->off);
				free(cx->px);
				cx->off = NULL;
				cx->px = NULL;
				cx->amx = 0;
				return opr_error_set(err, OPR_ENOMEM,
						     "conv2d: out of memory for the kernel's scratch");
			}
			if (cx->amx && (rc = cl_setup(cx, err)) < 0)
				goto free_off;
			if (!unit && !cx->cl) { /* nothing else here takes this stride */
				free(cx->px);
				free(cx->wa);
				cx->px = NULL;
				cx->wa = NULL;
				cx->amx = 0;
			}
			if (cx->amx && !cx->cl && (rc = pairs_setup(cx, err)) < 0)
				goto free_off;
		}
		if (cx->onep && cx->pairs)
			pairs_onep_layout(cx);
		cx->gemm |= gemm_f32_fits(cx);
		if (cx->onep && (rc = onep_setup(cx, err)) < 0)
			goto free_off;
	}
	struct cl_memo *cm = cl_memo_of(cx);
	struct ops_counters before;
	int take = 0;

	if (cl_memo_fits(cx, cm)) {
		rc = cl_replay(cx, cm, err);
		goto free_off;
	}
	if (cm)
		take = ops_launch_memo_begin(cx->dev, &before);
	memset(&bs, 0, sizeof bs);
	rc = ops_launch_begin(cx->dev, name, cx->db, err);
	if (rc < 0)
		goto memo;
	if (cx->strat == OPS_STRAT_IM2COL)
		ops_launch_alt_kernel(cx->dev); /* a GPU runs it on tensor cores */
	/* One pass (device_int.h): the host no longer stages a tile's
	 * operands, it computes from the bands and writes y, so on a
	 * dma.serial envelope the model prices what it does, max(C, G) + D,
	 * and not a copy phase per tile before compute, max(C, Sc) + max(G,
	 * Sd) + D. The input's padding, once per launch, is not priced: it is
	 * a copy of x, a few percent of the launch (make bench: 0.05 of 1.3
	 * ms). Accelerator envelopes price the launch as before (only the
	 * record's one_pass differs). */
	if (cx->onep)
		ops_launch_one_pass(cx->dev);
	for (i = 0; i < cx->ntiles; i++) {
		int64_t t = ops_conv_tile_order(i, cx->ntiles, cores);
		struct ops_conv_tile tp;

		ops_tile_begin(cx->dev, t);
		if (t % cores != prev_core) {
			bufs_release(cx->dev, &bs);
			rc = bufs_get(cx, &bs, err);
			if (rc < 0)
				goto release;
			prev_core = t % cores;
		}
		ops_conv_tile_decode(&cx->d, &cx->t, t, &tp);
		rc = conv_tile(cx, &bs, &tp, err);
		if (rc < 0)
			goto release;
	}
	cl_flush(cx);
	rc = 0;
release:
	bufs_release(cx->dev, &bs);
	/* a failed launch is still closed so the device stays usable */
	if (rc == 0)
		rc = ops_launch_end(cx->dev, err);
	else
		ops_launch_end(cx->dev, NULL);
memo:
	if (take) {
		ops_launch_memo_end(cx->dev, &before, rc == 0, &cm->m);
		cm->t = cx->t;
		cm->kern = ops_kern;
		cm->db = cx->db;
	}
free_off:
	free(cx->off);
	free(cx->px);
	free(cx->wa);
	free(cx->xp);
	free(cx->toff);
	free(cx->wq);
	free(cx->xf);
	free(cx->xh);
	free(cx->wf);
	free(cx->wpk);
	free(cx->wab);
	free(cx->xn);
	free(cx->gbuf);
	cx->gbuf = NULL;
	cx->gemm = 0;
	if (!cx->wn_kept)
		free(cx->wn);
	free(cx->clq);
	cx->clq = NULL;
	cx->wn_kept = 0;
	cx->xn = NULL;
	cx->wn = NULL;
	cx->cl = 0;
	cx->xf = NULL;
	cx->xh = NULL;
	cx->wf = NULL;
	cx->wpk = NULL;
	cx->wab = NULL;
	cx->onep = 0;
	cx->off = NULL;
	cx->px = NULL;
	cx->wa = NULL;
	cx->xp = NULL;
	cx->toff = NULL;
	cx->wq = NULL;
	cx->amx = 0;
	cx->pairs = 0;
	cx->lanes = 0;
	return rc;
}

/* ---- the untiled launch --------------------------------------------------------- */

/* The untiled launch's LOCAL buffers and the host rows they convert into. */
struct untiled_bufs {
	struct ops_buf xs, ws, accb, outb, bb;
	float *xf, *wf;
};

/* One output row's MACs: for each input channel and filter tap, the run of
 * x it touches (stride sw) and the tap's weight (stride 0, re-read per
 * element) come from GLOBAL into LOCAL and accumulate into the fp32 row. */
static int untiled_row_macs(struct conv_ctx *cx, struct untiled_bufs *u, int64_t ni, int64_t g, int64_t ko,
			    int64_t oy, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	size_t es = cx->es;
	uint64_t macs = 0;
	float *acc = u->accb.data;
	int rc;

	if (!cx->dry)
		memset(acc, 0, sizeof *acc * (size_t)d->ow);
	for (int64_t cc = 0; cc < d->cpg; cc++)
	for (int64_t rr = 0; rr < d->r; rr++) {
		int64_t iy = oy * d->sh - d->ph + rr * d->dh;

		if (iy < 0 || iy >= d->h)
			continue;
		for (int64_t ss = 0; ss < d->s; ss++) {
			/* ix = ox*sw - pw + ss*dw must lie in [0, w) */
			int64_t sh = ss * d->dw - d->pw;
			int64_t lo = max64(0, floor_div(-sh + d->sw - 1, d->sw));
			int64_t hi = min64(d->ow, floor_div(d->w - 1 - sh, d->sw) + 1);
			int64_t nv = hi - lo, xi, wi;

			if (nv <= 0)
				continue;
			xi = ((ni * d->c + g * d->cpg + cc) * d->h + iy) * d->w + lo * d->sw + sh;
			wi = ((ko * d->cpg + cc) * d->r + rr) * d->s + ss;
			if ((rc = dma1(cx->dev, OPS_LOCAL, u->xs.data, OPS_GLOBAL, at(cx->x, xi, es), es, nv, d->sw, 1,
				       err)) < 0 ||
			    (rc = dma1(cx->dev, OPS_LOCAL, u->ws.data, OPS_GLOBAL, at(cx->w, wi, es), es, nv, 0, 1,
				       err)) < 0)
				return rc;
			macs += (uint64_t)nv;
			if (cx->dry)
				continue;
			ops_to_f32(cx->dt, u->xs.data, u->xf, (size_t)nv);
			ops_to_f32(cx->dt, u->ws.data, u->wf, (size_t)nv);
			for (int64_t i = 0; i < nv; i++)
				acc[lo + i] += u->xf[i] * u->wf[i];
		}
	}
	ops_compute(cx->dev, cx->dt, macs, 0, macs * 2 * es + macs * 4, macs * 4);
	return 0;
}

/* One output row's epilogue: the fused bias and activation (when the launch
 * carries them), the narrowing to the storage dtype, and the row's one store
 * LOCAL -> GLOBAL at y[ni, ko, oy, :]. */
static int untiled_row_out(struct conv_ctx *cx, struct untiled_bufs *u, int64_t ni, int64_t ko, int64_t oy,
			   struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	size_t es = cx->es;
	uint64_t n = (uint64_t)d->ow;
	int64_t yi = ((ni * d->k + ko) * d->oh + oy) * d->ow;
	float *acc = u->accb.data;
	const void *src = acc;
	int rc;

	if (cx->epi) {
		uint64_t ops = cx->act != OPS_ACT_NONE ? 2 * n : n;

		rc = dma1(cx->dev, OPS_LOCAL, u->bb.data, OPS_GLOBAL, at(cx->bias, ko, 4), 4, 1, 1, 1, err);
		if (rc < 0)
			return rc;
		if (!cx->dry) {
			float b = *(const float *)u->bb.data;

			for (int64_t i = 0; i < d->ow; i++)
				acc[i] += b;
			if (cx->act != OPS_ACT_NONE)
				ops_act_f32(cx->act, acc, acc, (size_t)d->ow);
		}
		ops_compute(cx->dev, OPS_F32, 0, ops, ops * 4 + 4, ops * 4);
	}
	if (cx->dt != OPS_F32) {
		if (!cx->dry)
			ops_from_f32(cx->dt, acc, u->outb.data, (size_t)n);
		ops_compute(cx->dev, cx->dt, 0, 0, n * 4, n * es);
		src = u->outb.data;
	}
	rc = dma1(cx->dev, OPS_GLOBAL, at(cx->y, yi, es), OPS_LOCAL, src, es, d->ow, 1, 1, err);
	return rc < 0 ? rc : 0;
}

/* Naive loops on one core: every operand element comes from GLOBAL each time
 * a MAC uses it (x by a strided run per filter tap and output row, the
 * weight re-read with stride 0), nothing is reused on chip. The fp32 output
 * row is staged in LOCAL and written once. */
static int conv_launch_untiled(struct conv_ctx *cx, const char *name,
			       struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	struct untiled_bufs u = { 0 };
	size_t es = cx->es;
	int rc;

	if (!cx->dry) {
		u.xf = malloc(sizeof *u.xf * (size_t)d->ow);
		u.wf = malloc(sizeof *u.wf * (size_t)d->ow);
		if (!u.xf || !u.wf) {
			rc = opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the untiled rows");
			goto free_host;
		}
	}
	rc = ops_launch_begin(cx->dev, name, cx->db, err);
	if (rc < 0)
		goto free_host;
	ops_tile_begin(cx->dev, 0);
	if ((rc = ops_buf_alloc(cx->dev, OPS_LOCAL, (size_t)d->ow * es, &u.xs, err)) < 0 ||
	    (rc = ops_buf_alloc(cx->dev, OPS_LOCAL, (size_t)d->ow * es, &u.ws, err)) < 0 ||
	    (rc = ops_buf_alloc(cx->dev, OPS_LOCAL, (size_t)d->ow * 4, &u.accb, err)) < 0 ||
	    (cx->dt != OPS_F32 &&
	     (rc = ops_buf_alloc(cx->dev, OPS_LOCAL, (size_t)d->ow * es, &u.outb, err)) < 0) ||
	    (cx->epi && (rc = ops_buf_alloc(cx->dev, OPS_LOCAL, 4, &u.bb, err)) < 0))
		goto release;
	for (int64_t ni = 0; ni < d->n; ni++)
	for (int64_t g = 0; g < d->groups; g++)
	for (int64_t kk = 0; kk < d->kpg; kk++)
	for (int64_t oy = 0; oy < d->oh; oy++) {
		int64_t ko = g * d->kpg + kk;

		if ((rc = untiled_row_macs(cx, &u, ni, g, ko, oy, err)) < 0 ||
		    (rc = untiled_row_out(cx, &u, ni, ko, oy, err)) < 0)
			goto release;
	}
	rc = 0;
release:
	if (u.bb.bytes)
		ops_buf_release(cx->dev, &u.bb);
	if (u.outb.bytes)
		ops_buf_release(cx->dev, &u.outb);
	if (u.accb.bytes)
		ops_buf_release(cx->dev, &u.accb);
	if (u.ws.bytes)
		ops_buf_release(cx->dev, &u.ws);
	if (u.xs.bytes)
		ops_buf_release(cx->dev, &u.xs);
	if (rc == 0)
		rc = ops_launch_end(cx->dev, err);
	else
		ops_launch_end(cx->dev, NULL);
free_host:
	free(u.xf);
	free(u.wf);
	return rc;
}

/* ---- unfused bias and activation launches ----------------------------------------- */

/* One element-wise launch over y with the conv's output tiles: each tile
 * goes GLOBAL->SHARED, gets bias (bias != NULL) or the activation, and goes
 * back SHARED->GLOBAL. */
static int ew_launch(struct conv_ctx *cx, const char *name, int with_bias,
		     const float *bias, enum ops_act act, struct opr_error *err)
{
	const struct ops_conv_dims *d = &cx->d;
	int cores = ops_conv_cores(cx->dev);
	int64_t tile = cx->t.tk * cx->t.toh * cx->t.tow, i, prev_core = -1, it = 0;
	struct ops_buf b[4];
	int wide = cx->dt != OPS_F32, rc = 0, j;

	cx->ntk = ceil_div(d->kpg, cx->t.tk);
	cx->nth = ceil_div(d->oh, cx->t.toh);
	cx->ntw = ceil_div(d->ow, cx->t.tow);
	cx->ntiles = d->n * d->groups * cx->ntk * cx->nth * cx->ntw;
	memset(b, 0, sizeof b);
	rc = ops_launch_begin(cx->dev, name, cx->db, err);
	if (rc < 0)
		return rc;
	for (i = 0; i < cx->ntiles; i++) {
		int64_t t = ops_conv_tile_order(i, cx->ntiles, cores), n, src;
		struct ops_conv_tile tp;
		void *raw;
		float *f;

		ops_tile_begin(cx->dev, t);
		if (t % cores != prev_core) {
			for (j = 3; j >= 0; j--)
				if (b[j].bytes)
					ops_buf_release(cx->dev, &b[j]);
			memset(b, 0, sizeof b);
			/* raw tile (two when double-buffered), fp32 tile, bias */
			if ((rc = ops_buf_alloc(cx->dev, OPS_SHARED, (size_t)tile * cx->es, &b[0], err)) < 0 ||
			    (cx->db && (rc = ops_buf_alloc(cx->dev, OPS_SHARED, (size_t)tile * cx->es, &b[1], err)) < 0) ||
			    (wide && (rc = ops_buf_alloc(cx->dev, OPS_SHARED, (size_t)tile * 4, &b[2], err)) < 0) ||
			    (with_bias && (rc = ops_buf_alloc(cx->dev, OPS_SHARED, (size_t)cx->t.tk * 4, &b[3], err)) < 0))
				goto release;
			prev_core = t % cores;
		}
		ops_conv_tile_decode(&cx->d, &cx->t, t, &tp);
		n = tp.nk * tp.npix;
		raw = b[cx->db ? (it++ & 1) : 0].data;
		f = wide ? b[2].data : raw;
		src = ((tp.ni * d->k + tp.g * d->kpg + tp.k0) * d->oh + tp.oh0) * d->ow + tp.ow0;
		rc = dma3(cx->dev, OPS_SHARED, raw, OPS_GLOBAL, at(cx->y, src, cx->es),
			  cx->es, tp.nk, tp.noh, tp.now, d->oh * d->ow, d->ow, 1,
			  tp.npix, tp.now, 1, err);
		if (rc < 0)
			goto release;
		if (wide) {
			if (!cx->dry)
				ops_to_f32(cx->dt, raw, f, (size_t)n);
			ops_compute(cx->dev, cx->dt, 0, 0, (uint64_t)n * cx->es, (uint64_t)n * 4);
		}
		if (with_bias) {
			struct ops_dma_desc dd;

			memset(&dd, 0, sizeof dd);
			dd.rank = 1;
			dd.shape[0] = tp.nk;
			dd.src_stride[0] = 1;
			dd.dst_stride[0] = 1;
			dd.elem_bytes = 4;
			rc = ops_dma_split(cx->dev, OPS_SHARED, b[3].data, OPS_GLOBAL,
					   at(bias, tp.g * d->kpg + tp.k0, 4), &dd, err);
			if (rc < 0)
				goto release;
			if (!cx->dry)
				epilogue_f32(OPS_ACT_NONE, b[3].data, f, tp.nk, tp.npix);
			ops_compute(cx->dev, OPS_F32, 0, (uint64_t)n,
				    (uint64_t)n * 4 + (uint64_t)tp.nk * 4, (uint64_t)n * 4);
		} else {
			uint64_t ops = act != OPS_ACT_NONE ? (uint64_t)n : 0;

			if (!cx->dry)
				epilogue_f32(act, NULL, f, tp.nk, tp.npix);
			ops_compute(cx->dev, OPS_F32, 0, ops, ops * 4, ops * 4);
		}
		if (wide) {
			if (!cx->dry)
				ops_from_f32(cx->dt, f, raw, (size_t)n);
			ops_compute(cx->dev, cx->dt, 0, 0, (uint64_t)n * 4, (uint64_t)n * cx->es);
		}
		rc = dma3(cx->dev, OPS_GLOBAL, at(cx->y, src, cx->es), OPS_SHARED, raw,
			  cx->es, tp.nk, tp.noh, tp.now, tp.npix, tp.now, 1,
			  d->oh * d->ow, d->ow, 1, err);
		if (rc < 0)
			goto release;
	}
	rc = 0;
release:
	for (j = 3; j >= 0; j--)
		if (b[j].bytes)
			ops_buf_release(cx->dev, &b[j]);
	if (rc == 0)
		rc = ops_launch_end(cx->dev, err);
	else
		ops_launch_end(cx->dev, NULL);
	return rc;
}

/* ---- the workload interface --------------------------------------------------------- */

static int conv_check_dtype(const struct ops_workload *w, struct opr_error *err)
{
	if (w->dtype != OPS_F32 && w->dtype != OPS_F16 && w->dtype != OPS_BF16)
		return opr_error_set(err, OPR_EINPUT,
				     "conv2d dtype '%s' is not supported (fp32, fp16 or bf16)",
				     (unsigned)w->dtype < OPS_NDTYPES ? ops_dtype_name(w->dtype) : "?");
	return 0;
}

static int conv_check(const struct ops_workload *w, struct opr_error *err)
{
	struct ops_conv_dims d;
	int rc = conv_check_dtype(w, err);

	if (rc < 0)
		return rc;
	return ops_conv_dims_get(w, &d, err);
}

static int conv_bias_act_check(const struct ops_workload *w, struct opr_error *err)
{
	int rc = conv_check(w, err);

	if (rc < 0)
		return rc;
	if ((unsigned)w->act >= OPS_NACTS)
		return opr_error_set(err, OPR_EINPUT,
				     "conv2d+bias+activation activation %d is unknown", (int)w->act);
	return 0;
}

/* Tensors plus the fp64 reference of y that quality() allocates. */
static uint64_t conv_bytes(const struct ops_workload *w)
{
	struct ops_conv_dims d;
	uint64_t es = ops_dtype_size(w->dtype), ny;

	if (ops_conv_dims_get(w, &d, NULL) < 0)
		return 0;
	ny = (uint64_t)(d.n * d.k * d.oh * d.ow);
	return (uint64_t)(d.n * d.c * d.h * d.w) * es +
	       (uint64_t)(d.k * d.cpg * d.r * d.s) * es +
	       (w->group == OPS_G_CONV_BIAS_ACT ? (uint64_t)d.k * 4 : 0) +
	       ny * es + ny * sizeof(double) +
	       /* the weights kept packed (padded), and their copy */
	       (uint64_t)(d.k * d.cpg * d.r * d.s) * es * 3 +
	       /* winograd's U where the strategy applies */
	       (ops_conv_wino_refusal(&d, w->dtype) ? 0 : (uint64_t)ops_conv_wino_u_bytes_max(&d));
}

static void conv_release(struct ops_instance *inst)
{
	struct conv_priv *pv = inst->priv;

	if (!pv)
		return;
	free(pv->wn);
	free(pv->wino_u);
	free(pv);
	inst->priv = NULL;
}

static int conv_prepare(struct ops_instance *inst, struct opr_error *err)
{
	const struct ops_workload *w = &inst->work;
	struct ops_conv_dims d;
	int rc;

	rc = ops_conv_dims_get(w, &d, err);
	if (rc < 0)
		return rc;
	if ((rc = ops_instance_add_tensor(inst, "x", w->dtype, d.n * d.c * d.h * d.w,
					  0, -1.0, 1.0, err)) < 0)
		return rc;
	if ((rc = ops_instance_add_tensor(inst, "w", w->dtype, d.k * d.cpg * d.r * d.s,
					  0, -1.0, 1.0, err)) < 0)
		return rc;
	if (w->group == OPS_G_CONV_BIAS_ACT &&
	    (rc = ops_instance_add_tensor(inst, "bias", OPS_F32, d.k, 0, -1.0, 1.0, err)) < 0)
		return rc;
	if ((rc = ops_instance_add_tensor(inst, "y", w->dtype, d.n * d.k * d.oh * d.ow,
					  1, 0.0, 0.0, err)) < 0)
		return rc;
	inst->out_index = rc;
	return 0;
}

/* The winograd strategy's two launches (ops/conv_wino.c), U kept with the
 * instance across its runs. */
static int conv_launch_wino(struct conv_ctx *cx, const char *name, struct opr_error *err)
{
	struct ops_wino_args a;

	memset(&a, 0, sizeof a);
	a.dev = cx->dev;
	a.d = &cx->d;
	a.t = &cx->t;
	a.dt = cx->dt;
	a.db = cx->db;
	a.epi = cx->epi;
	a.act = cx->act;
	a.x = cx->x;
	a.w = cx->w;
	a.bias = cx->bias;
	a.y = cx->y;
	if (cx->priv) {
		a.u = &cx->priv->wino_u;
		a.u_bytes = &cx->priv->wino_u_bytes;
		a.u_src = &cx->priv->wino_src;
		a.u_ver = &cx->priv->wino_ver;
	}
	a.wver = cx->wver;
	return ops_conv_wino_run(&a, name, err);
}

static int conv_run(struct ops_device *dev, struct ops_instance *inst,
		    struct opr_error *err)
{
	const struct ops_workload *w = &inst->work;
	const struct ops_plan *p = &inst->plan;
	struct ops_tensor *tx = ops_instance_tensor(inst, "x");
	struct ops_tensor *tw = ops_instance_tensor(inst, "w");
	struct ops_tensor *tb = ops_instance_tensor(inst, "bias");
	struct ops_tensor *ty = ops_instance_tensor(inst, "y");
	int fused_group = w->group == OPS_G_CONV_BIAS_ACT;
	struct conv_ctx cx;
	int rc;

	memset(&cx, 0, sizeof cx);
	rc = ops_conv_dims_get(w, &cx.d, err);
	if (rc < 0)
		return rc;
	if (!tx || !tw || !ty || (fused_group && !tb))
		return opr_error_set(err, OPR_EINTERNAL, "conv2d instance lacks its tensors");
	if ((unsigned)p->strategy >= OPS_NSTRATS)
		return opr_error_set(err, OPR_EINPUT, "conv2d strategy %d is unknown",
				     (int)p->strategy);
	ops_conv_tiles_get(&cx.d, p, &cx.t);
	cx.dev = dev;
	cx.strat = p->strategy;
	cx.dt = w->dtype;
	cx.es = ops_dtype_size(w->dtype);
	cx.dry = ops_device_dry_run(dev);
	cx.db = p->double_buffer ? 1 : 0;
	cx.x = cx.dry ? NULL : tx->data;
	cx.w = cx.dry ? NULL : tw->data;
	cx.wver = tw->version;
	cx.y = cx.dry ? NULL : ty->data;
	cx.act = OPS_ACT_NONE;
	if (!cx.dry && !inst->priv)
		inst->priv = calloc(1, sizeof(struct conv_priv)); /* (NULL: nothing kept) */
	cx.priv = cx.dry ? NULL : inst->priv;
	if (fused_group && p->fused) {
		/* bias + activation on the accumulator tile, one launch */
		cx.epi = 1;
		cx.bias = cx.dry ? NULL : tb->data;
		cx.act = w->act;
	}
	if (cx.strat == OPS_STRAT_UNTILED)
		rc = conv_launch_untiled(&cx, fused_group && p->fused ?
					 "conv2d+bias+act-untiled" : "conv2d-untiled", err);
	else if (cx.strat == OPS_STRAT_WINOGRAD)
		rc = conv_launch_wino(&cx, fused_group && p->fused ?
				      "conv2d+bias+act-wino" : "conv2d-wino", err);
	else
		rc = conv_launch_tiled(&cx, fused_group && p->fused ?
				       "conv2d+bias+act" : "conv2d", err);
	if (rc < 0 || !fused_group || p->fused)
		return rc;
	rc = ew_launch(&cx, "bias", 1, cx.dry ? NULL : tb->data, OPS_ACT_NONE, err);
	if (rc < 0)
		return rc;
	return ew_launch(&cx, "activation", 0, NULL, w->act, err);
}

/* Widens n stored elements to fp64 (0 on an unexpected dtype). */
static void to_f64(enum ops_dtype t, const void *src, double *dst, int64_t n)
{
	int64_t i;

	for (i = 0; i < n; i++) {
		if (t == OPS_F32)
			dst[i] = ((const float *)src)[i];
		else if (t == OPS_F16)
			dst[i] = ops_f16_to_f32(((const uint16_t *)src)[i]);
		else
			dst[i] = ops_bf16_to_f32(((const uint16_t *)src)[i]);
	}
}

/* The definition, in fp64 over the stored (rounded) inputs:
 *   y[n,k,oy,ox] = act(bias[k] + sum_{c,i,j} x[n, g*cpg + c, oy*sh - ph + i*dh,
 *                  ox*sw - pw + j*dw] * w[k, c, i, j]),  g = k / kpg,
 * taps outside the image contributing 0. */
void ops_conv_reference(const struct ops_conv_dims *d, enum ops_dtype t,
			const void *x, const void *wt, const float *bias,
			enum ops_act act, double *ref)
{
	int64_t nx = d->n * d->c * d->h * d->w, nw = d->k * d->cpg * d->r * d->s;
	double *xd = malloc(sizeof *xd * (size_t)nx);
	double *wd = malloc(sizeof *wd * (size_t)nw);
	int64_t ni, ko, oy, ox, c, i, j;

	if (!xd || !wd) {
		/* no memory: a NaN reference makes the quality check fail */
		for (i = 0; i < d->n * d->k * d->oh * d->ow; i++)
			ref[i] = 0.0 / 0.0;
		goto out;
	}
	to_f64(t, x, xd, nx);
	to_f64(t, wt, wd, nw);
	for (ni = 0; ni < d->n; ni++)
	for (ko = 0; ko < d->k; ko++) {
		int64_t g = ko / d->kpg;
		const double *wk = wd + ko * d->cpg * d->r * d->s;

		for (oy = 0; oy < d->oh; oy++)
		for (ox = 0; ox < d->ow; ox++) {
			double sum = 0.0;

			for (c = 0; c < d->cpg; c++) {
				const double *xc = xd + ((ni * d->c) + g * d->cpg + c) * d->h * d->w;

				for (i = 0; i < d->r; i++) {
					int64_t iy = oy * d->sh - d->ph + i * d->dh;

					if (iy < 0 || iy >= d->h)
						continue;
					for (j = 0; j < d->s; j++) {
						int64_t ix = ox * d->sw - d->pw + j * d->dw;

						if (ix < 0 || ix >= d->w)
							continue;
						sum += xc[iy * d->w + ix] *
						       wk[(c * d->r + i) * d->s + j];
					}
				}
			}
			if (bias)
				sum = ops_act_ref(act, sum + bias[ko]);
			ref[((ni * d->k + ko) * d->oh + oy) * d->ow + ox] = sum;
		}
	}
out:
	free(xd);
	free(wd);
}

static int conv_quality(const struct ops_instance *inst, struct ops_quality *q,
			struct opr_error *err)
{
	struct ops_instance *mi = (struct ops_instance *)(uintptr_t)inst;
	const struct ops_workload *w = &inst->work;
	struct ops_tensor *tx = ops_instance_tensor(mi, "x");
	struct ops_tensor *tw = ops_instance_tensor(mi, "w");
	struct ops_tensor *tb = ops_instance_tensor(mi, "bias");
	struct ops_tensor *ty = ops_instance_tensor(mi, "y");
	struct ops_conv_dims d;
	double *ref;
	int64_t ny;
	int rc;

	rc = ops_conv_dims_get(w, &d, err);
	if (rc < 0)
		return rc;
	if (!tx || !tw || !ty || !tx->data || !tw->data || !ty->data)
		return opr_error_set(err, OPR_EINTERNAL, "conv2d instance lacks its tensors");
	ny = d.n * d.k * d.oh * d.ow;
	ref = malloc(sizeof *ref * (size_t)ny);
	if (!ref)
		return opr_error_set(err, OPR_ENOMEM, "conv2d: out of memory for the reference");
	ops_conv_reference(&d, w->dtype, tx->data, tw->data,
			   w->group == OPS_G_CONV_BIAS_ACT && tb ? tb->data : NULL,
			   w->act, ref);
	memset(q, 0, sizeof *q);
	q->rel_l2 = ops_rel_l2(w->dtype, ty->data, ref, ny);
	free(ref);
	return 0;
}

/* SHARED bytes per core of a tiled plan (the conv launch's buffers). */
static uint64_t conv_plan_footprint(const struct ops_conv_dims *d,
				   const struct ops_workload *w,
				   const struct ops_plan *p, int fused)
{
	struct conv_ctx cx;
	int64_t sz[CONV_NBUF], sum = 0;
	int i;

	memset(&cx, 0, sizeof cx);
	cx.d = *d;
	ops_conv_tiles_get(d, p, &cx.t);
	cx.strat = p->strategy;
	cx.dt = w->dtype;
	cx.es = ops_dtype_size(w->dtype);
	cx.db = p->double_buffer ? 1 : 0;
	cx.epi = fused && w->group == OPS_G_CONV_BIAS_ACT;
	if (p->strategy == OPS_STRAT_WINOGRAD)
		return ops_conv_wino_footprint(d, &cx.t, cx.db, cx.epi);
	cx.phm = (cx.t.toh - 1) * d->sh + (d->r - 1) * d->dh + 1;
	cx.pwm = (cx.t.tow - 1) * d->sw + (d->s - 1) * d->dw + 1;
	conv_buf_sizes(&cx, sz);
	for (i = 0; i < CONV_NBUF; i++)
		sum += sz[i];
	return (uint64_t)sum;
}

/* Candidates: untiled once, then direct, im2col and (where it computes the
 * shape and dtype: ops_conv_wino_refusal) winograd over tile_k in {16, 32,
 * 64, kpg} x tile_oh in {1, 4, 8, oh} x tile_ow in {ow, 28} x tile_c in {cpg,
 * 32, 64}, clamped to the shape, deduplicated and double-buffered; winograd
 * without tile_oh 1 (three quarters of its 4x4 outputs discarded) and
 * without k blocks under 64 channels (or kpg): each k block transforms the
 * input again, and under 64 the transforms and transposes outweigh the
 * GEMM they feed, which the model's one rate for all of them does not see
 * (tile_k 16 ran 1.15-1.40 ms on the bench shape where 64 ran 0.70 ms, both
 * modelled 0.50-0.54 ms on this host's calibrated envelope). The ones
 * whose SHARED footprint fits the envelope come first, so a short list still
 * holds the useful plans; the rest follow for the planner to reject with
 * their reason. */
#define CONV_MAX_CAND (3 * 4 * 4 * 2 * 3)
static size_t conv_plans(const struct ops_envelope *env, const struct ops_workload *w,
			 int fused, struct ops_plan *out, size_t max)
{
	struct ops_conv_dims d;
	struct ops_plan cand[CONV_MAX_CAND];
	unsigned char fits[CONV_MAX_CAND];
	int64_t tks[4], tohs[4], tows[2], tcs[3];
	uint64_t cap = env ? (uint64_t)(env->shared_capacity_kib * 1024.0) : UINT64_MAX;
	size_t nc = 0, n, a, b, c, e, m;
	int st, pass;

	if (ops_conv_dims_get(w, &d, NULL) < 0 || max == 0)
		return 0;
	const int wino = !ops_conv_wino_refusal(&d, w->dtype) && !(env && env->cuda_executor);
	tks[0] = 16; tks[1] = 32; tks[2] = 64; tks[3] = d.kpg;
	tohs[0] = 1; tohs[1] = 4; tohs[2] = 8; tohs[3] = d.oh;
	tows[0] = d.ow; tows[1] = 28;
	tcs[0] = d.cpg; tcs[1] = 32; tcs[2] = 64;
	for (a = 0; a < 4; a++)
	for (b = 0; b < 4; b++)
	for (c = 0; c < 2; c++)
	for (e = 0; e < 3; e++)
	for (st = OPS_STRAT_DIRECT; st <= OPS_STRAT_WINOGRAD; st++) {
		struct ops_plan p;
		struct ops_conv_tiles t;
		int dup = 0;

		if (st == OPS_STRAT_WINOGRAD &&
		    (!wino || (tohs[b] == 1 && d.oh > 1) || tks[a] < min64(64, d.kpg)))
			continue;

		memset(&p, 0, sizeof p);
		p.p[0] = tks[a];
		p.p[1] = tohs[b];
		p.p[2] = tows[c];
		p.p[3] = tcs[e];
		ops_conv_tiles_get(&d, &p, &t);
		p.p[0] = t.tk;
		p.p[1] = t.toh;
		p.p[2] = t.tow;
		p.p[3] = t.tc;
		p.fused = fused;
		p.strategy = (enum ops_strategy)st;
		p.double_buffer = 1;
		for (m = 0; m < nc && !dup; m++)
			dup = cand[m].strategy == p.strategy && cand[m].p[0] == p.p[0] &&
			      cand[m].p[1] == p.p[1] && cand[m].p[2] == p.p[2] &&
			      cand[m].p[3] == p.p[3];
		if (dup)
			continue;
		fits[nc] = conv_plan_footprint(&d, w, &p, fused) <= cap;
		cand[nc++] = p;
	}
	memset(&out[0], 0, sizeof out[0]);
	out[0].fused = fused;
	out[0].strategy = OPS_STRAT_UNTILED;
	n = 1;
	/* the fitting winograd plans first, at most a quarter of the list: they
	 * come last in the enumeration and a short list would cut them off */
	for (m = 0; m < nc && n < 1 + max / 4; m++)
		if (fits[m] && cand[m].strategy == OPS_STRAT_WINOGRAD) {
			out[n++] = cand[m];
			fits[m] = 2; /* (taken) */
		}
	for (pass = 1; pass >= 0; pass--)
		for (m = 0; m < nc && n < max; m++)
			if (fits[m] == pass)
				out[n++] = cand[m];
	return n;
}

const struct ops_group_impl ops_impl_conv = {
	.group = OPS_G_CONV,
	.check = conv_check,
	.bytes = conv_bytes,
	.prepare = conv_prepare,
	.run = conv_run,
	.quality = conv_quality,
	.plans = conv_plans,
	.release = conv_release,
	.params = conv_params,
};

const struct ops_group_impl ops_impl_conv_bias_act = {
	.group = OPS_G_CONV_BIAS_ACT,
	.check = conv_bias_act_check,
	.bytes = conv_bytes,
	.prepare = conv_prepare,
	.run = conv_run,
	.quality = conv_quality,
	.plans = conv_plans,
	.release = conv_release,
	.params = conv_params,
};
