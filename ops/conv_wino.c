/* ops/conv_wino.c: conv2d's winograd strategy, F(4x4, 3x3) (Lavin & Gray,
 * "Fast Algorithms for Convolutional Neural Networks", CVPR 2016): each 4x4
 * block of output pixels ("a Winograd tile") of one output channel is
 *   Y = A^T [ sum over input channels c of (G g_c G^T) . (B^T d_c B) ] A
 * with d_c the 6x6 input block under it, g_c the 3x3 filter and . the
 * element-wise product: 36 x C multiplies per tile and output channel where
 * the direct convolution does 16 x 9 x C, 4x fewer. The sum over c at each
 * of the 36 positions is a GEMM; the transforms are additions and small
 * multiples. Only for 3x3 filters at stride 1 and dilation 1, and only on
 * fp32 data: the transforms' constants (up to 8 in A, 1/24 in G) amplify
 * rounding, about 4x the direct sums' relative error in fp32 (1.7e-6
 * against 4.3e-7 relative L2 on [1,64,56,56] -> 64 of uniform data), which
 * fp16 or bf16 storage of the transformed operands would take past their
 * thresholds.
 *
 * Two launches:
 *   conv2d-wino-weights  U = G g G^T of every filter into GLOBAL, one tile
 *                        per (group, tile_k block): w in, U out
 *   conv2d-wino (or conv2d+bias+act-wino)
 *                        the plan's tiles as in the direct strategy: for
 *                        each tile (image, group, tile_k output channels,
 *                        tile_oh x tile_ow pixels) and channel block of
 *                        tile_c, the input patch and the block of U come in,
 *                        OPS_WINO_PC Winograd tiles at a time are
 *                        transformed (V), multiplied (M = V U at each of the
 *                        36 positions) and transformed back into the tile's
 *                        accumulator; after the last channel block the
 *                        epilogue, then y goes out.
 * The input patch is the direct strategy's (the rows and columns its
 * outputs need, zero beyond the image); the Winograd tiles past the plan
 * tile's last row or column read zeros there and their outputs are
 * discarded, so x's and y's traffic is the direct strategy's and U's is 4x
 * w's (36 against 9 values a filter).
 *
 * Layouts (the channels along the vector lanes, so every transform is
 * vertical; channel counts padded to 16 with zeros):
 *   patch  [rows][cols][ncp]       the tile's input, channels last
 *   U      [g][36][cpad][ku]       in GLOBAL; ku: u_row
 *   V      [36][PC][ncp]           SHARED
 *   M      [36][PC][nkp]           SHARED
 *   acc    [noh][now][nkp]         SHARED, the tile's outputs, channels last
 * and the host moves x into the patch and acc into y with its transposes:
 * a DMA engine with strides does the same (the count is the same bytes).
 *
 * Counts: the transforms' additions and multiplies count as fp32 MACs, one
 * each (on a vector unit an add takes an FMA's issue slot), WINO_IN_OPS a
 * tile and input channel, WINO_OUT_OPS a tile and output channel,
 * WINO_WT_OPS a filter; the GEMM's 36 MACs a tile, input and output
 * channel. */
#include "conv2d_int.h"
#include "device_int.h"
#include "isa_int.h"

#include <stdlib.h>
#include <string.h>

#define WINO_IN_OPS 156  /* 12 six-point transforms of 13 operations */
#define WINO_OUT_OPS 100 /* 10 transforms of 10 */
#define WINO_WT_OPS 108  /* 9 of 12 */
#define WINO_POS 36
/* V's and M's positions are their rows plus one cache line apart: at a
 * power-of-two stride (64 tiles x 64 channels, 16 KiB) a tile's 36 values
 * fell in one L1 set, and the input transform ran at a third of its speed. */
#define WINO_XPAD 16

static int64_t cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int64_t mn(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t up16(int64_t a)
{
	return cdiv(a, 16) * 16;
}

const char *ops_conv_wino_refusal(const struct ops_conv_dims *d, enum ops_dtype dt)
{
	if (d->r != 3 || d->s != 3)
		return "winograd F(4x4, 3x3) needs a 3x3 filter";
	if (d->sh != 1 || d->sw != 1 || d->dh != 1 || d->dw != 1)
		return "winograd F(4x4, 3x3) needs stride 1 and dilation 1";
	if (dt != OPS_F32)
		return "winograd F(4x4, 3x3) runs on fp32 data only (its transforms amplify rounding)";
	return NULL;
}

/* Everything a launch needs, derived once. */
struct wino {
	struct ops_device *dev;
	const struct ops_conv_dims *d;
	const struct ops_conv_tiles *t;
	int dry, db, epi, onep;
	enum ops_act act;
	const float *x, *w, *bias;
	float *y, *u;
	int64_t cpad, ku;       /* U's channel rows and row length */
	int64_t ntk, nth, ntw, ncb, ntiles;
	int64_t prows, pcols, ncp; /* the patch of the largest tile */
	int64_t nkp;            /* tk rounded up to 16 */
	int64_t pc;             /* Winograd tiles a chunk: V's and M's rows */
};

/* ku: U's row, the group's kpg output channels and zeros after them, as
 * far as the last k block's run [k0, k0 + up16(nk)) reaches: up16(kpg)
 * where the blocks are multiples of 16, at most up16(kpg + 15). A row
 * always that long was 12% slower on the bench shape (U 737 against 590
 * KiB beside V and M in the L2; eight paired runs). */
static int64_t u_row(const struct ops_conv_dims *d, const struct ops_conv_tiles *t)
{
	int64_t ku = 0;

	for (int64_t k0 = 0; k0 < d->kpg; k0 += t->tk) {
		int64_t end = k0 + up16(mn(t->tk, d->kpg - k0));
		ku = end > ku ? end : ku;
	}
	return ku;
}

size_t ops_conv_wino_u_bytes(const struct ops_conv_dims *d, const struct ops_conv_tiles *t)
{
	return (size_t)(d->groups * WINO_POS * up16(d->cpg) * u_row(d, t)) * sizeof(float);
}

size_t ops_conv_wino_u_bytes_max(const struct ops_conv_dims *d)
{
	return (size_t)(d->groups * WINO_POS * up16(d->cpg) * up16(d->kpg + 15)) * sizeof(float);
}

/* SHARED bytes per core of a plan: the patch and U block (twice
 * double-buffered), V and M, the accumulator and the bias. */
uint64_t ops_conv_wino_footprint(const struct ops_conv_dims *d, const struct ops_conv_tiles *t,
				 int db, int epi)
{
	(void)d; /* t is clamped to the shape */
	int64_t ncp = up16(t->tc), nkp = up16(t->tk);
	int64_t patch = (cdiv(t->toh, 4) * 4 + 2) * (cdiv(t->tow, 4) * 4 + 2) * ncp;
	int64_t ublk = WINO_POS * ncp * nkp;
	int64_t pc = mn(OPS_WINO_PC, cdiv(t->toh, 4) * cdiv(t->tow, 4));
	int64_t sum = (db ? 2 : 1) * (patch + ublk) +
		      WINO_POS * (pc * (ncp + nkp) + 2 * WINO_XPAD) +
		      t->toh * t->tow * nkp + (epi ? nkp : 0);

	return (uint64_t)sum * 4;
}

/* dst[j*ldd + i] = src[i*lds + j], i < rows, j < cols (the path's 8 x 8
 * register transposes: its 16 x 16 ones took 5-15% longer on the launch,
 * five paired runs). */
static void tr_f32(const float *src, int64_t lds, float *dst, int64_t ldd, int64_t rows,
		   int64_t cols)
{
	ops_kern->transpose[2](src, lds, dst, ldd, rows, cols);
}

/* ---- the filter transform ---------------------------------------------------- */

/* Every filter of group g on input channels [c0, c0+nc): w's rows (KCRS)
 * transposed so the output channels run along the lanes (wt[(c*9 + e)*nkp
 * + k], zero past kpg), then G g G^T of each input channel into U's
 * columns [0, up16(kpg)) (the rest of the row stays zero from the
 * allocation). */
static void wt_compute(const struct wino *wg, int64_t g, int64_t c0, int64_t nc, float *wt)
{
	const struct ops_conv_dims *d = wg->d;
	const int64_t nk = d->kpg, nkp = up16(nk);
	float *u = wg->u + (g * WINO_POS * wg->cpad + c0) * wg->ku;

	if (nkp > nk)
		memset(wt, 0, sizeof *wt * (size_t)(nc * 9 * nkp));
	tr_f32(wg->w + (g * d->kpg * d->cpg + c0) * 9, d->cpg * 9, wt, nkp, nk, nc * 9);
	for (int64_t c = 0; c < nc; c++)
		ops_kern->wino_wt(wt + c * 9 * nkp, nkp, nkp, u + c * wg->ku, wg->cpad * wg->ku);
}

/* One tile of the filter launch (group, tile_k block, tile_c block): w's
 * block in, U's block [36][nc][nk] out. The host transforms every k block
 * of (group, channel block) at its first (the transfers and operations are
 * still counted tile by tile, as the direct strategy's one-pass launches
 * do): U's row then holds no padding between k blocks. */
static int wt_tile(struct wino *wg, int64_t g, int64_t k0, int64_t nk, int64_t c0, int64_t nc,
		   float *wt, struct opr_error *err)
{
	struct ops_dma_desc dd;
	int rc;

	memset(&dd, 0, sizeof dd);
	dd.rank = 2;
	dd.shape[0] = nk;
	dd.shape[1] = nc * 9;
	dd.src_stride[0] = wg->d->cpg * 9;
	dd.src_stride[1] = dd.dst_stride[1] = 1;
	dd.dst_stride[0] = nc * 9;
	dd.elem_bytes = 4;
	if ((rc = ops_dma_split_count(wg->dev, OPS_SHARED, OPS_GLOBAL, &dd, err)) < 0)
		return rc;
	if (!wg->dry && k0 == 0)
		wt_compute(wg, g, c0, nc, wt);
	ops_compute(wg->dev, OPS_F32, (uint64_t)(nk * nc) * WINO_WT_OPS, 0,
		    (uint64_t)(nk * nc * 9) * 4, (uint64_t)(WINO_POS * nk * nc) * 4);
	memset(&dd, 0, sizeof dd);
	dd.rank = 3;
	dd.shape[0] = WINO_POS;
	dd.shape[1] = nc;
	dd.shape[2] = nk;
	dd.src_stride[0] = nc * nk;
	dd.src_stride[1] = nk;
	dd.src_stride[2] = 1;
	dd.dst_stride[0] = wg->cpad * wg->ku;
	dd.dst_stride[1] = wg->ku;
	dd.dst_stride[2] = 1;
	dd.elem_bytes = 4;
	return ops_dma_split_count(wg->dev, OPS_GLOBAL, OPS_SHARED, &dd, err);
}

static int weights_launch(struct wino *wg, struct opr_error *err)
{
	const struct ops_conv_dims *d = wg->d;
	const struct ops_conv_tiles *t = wg->t;
	int cores = ops_device_envelope(wg->dev)->cores;
	int64_t ntiles = d->groups * wg->ntk * wg->ncb, prev = -1;
	float *wt = NULL;
	struct ops_buf bw, bu;
	int rc;

	cores = cores > 0 ? (cores < OPS_MAX_CORES ? cores : OPS_MAX_CORES) : 1;
	memset(&bw, 0, sizeof bw);
	memset(&bu, 0, sizeof bu);
	if (!wg->dry && !(wt = malloc(sizeof *wt * (size_t)(t->tc * 9 * up16(d->kpg)))))
		return opr_error_set(err, OPR_ENOMEM, "conv2d winograd: out of memory for the filters");
	if ((rc = ops_launch_begin(wg->dev, "conv2d-wino-weights", 0, err)) < 0) {
		free(wt);
		return rc;
	}
	if (wg->onep)
		ops_launch_one_pass(wg->dev);
	for (int64_t i = 0; i < ntiles && rc == 0; i++) {
		int64_t tix = ops_conv_tile_order(i, ntiles, cores);
		int64_t cb = tix % wg->ncb, kt = (tix / wg->ncb) % wg->ntk, g = tix / wg->ncb / wg->ntk;
		int64_t k0 = kt * t->tk, c0 = cb * t->tc;

		ops_tile_begin(wg->dev, tix);
		if (tix % cores != prev) {
			if (bu.bytes)
				ops_buf_release(wg->dev, &bu);
			if (bw.bytes)
				ops_buf_release(wg->dev, &bw);
			if ((rc = ops_buf_alloc(wg->dev, OPS_SHARED, (size_t)(t->tk * t->tc * 9) * 4,
						&bw, err)) < 0 ||
			    (rc = ops_buf_alloc(wg->dev, OPS_SHARED,
						(size_t)(WINO_POS * t->tc * t->tk) * 4, &bu, err)) < 0)
				break;
			prev = tix % cores;
		}
		rc = wt_tile(wg, g, k0, mn(t->tk, d->kpg - k0), c0, mn(t->tc, d->cpg - c0), wt, err);
	}
	if (bu.bytes)
		ops_buf_release(wg->dev, &bu);
	if (bw.bytes)
		ops_buf_release(wg->dev, &bw);
	free(wt);
	if (rc == 0)
		return ops_launch_end(wg->dev, err);
	ops_launch_end(wg->dev, NULL);
	return rc;
}

/* ---- the tiles ---------------------------------------------------------------- */

struct wtile {
	int64_t ni, g, k0, nk, oh0, noh, ow0, now;
	int64_t th, tw;         /* Winograd tiles down and across */
};

static void wtile_decode(const struct wino *wg, int64_t t, struct wtile *p)
{
	const struct ops_conv_dims *d = wg->d;
	int64_t owt = t % wg->ntw, oht, kt;

	t /= wg->ntw;
	oht = t % wg->nth;
	t /= wg->nth;
	kt = t % wg->ntk;
	t /= wg->ntk;
	p->g = t % d->groups;
	p->ni = t / d->groups;
	p->k0 = kt * wg->t->tk;
	p->nk = mn(wg->t->tk, d->kpg - p->k0);
	p->oh0 = oht * wg->t->toh;
	p->noh = mn(wg->t->toh, d->oh - p->oh0);
	p->ow0 = owt * wg->t->tow;
	p->now = mn(wg->t->tow, d->ow - p->ow0);
	p->th = cdiv(p->noh, 4);
	p->tw = cdiv(p->now, 4);
}

/* The valid part [v0, v0+nv) of the input range the outputs [o0, o0+no)
 * need, and where the Winograd patch starts (o0 - pad). */
static void in_range(int64_t o0, int64_t no, int64_t pad, int64_t in, int64_t *start,
		     int64_t *v0, int64_t *nv)
{
	int64_t st, len;

	ops_conv_patch_range(o0, no, 1, pad, 3, 1, in, &st, &len, v0, nv);
	*start = st;
}

/* Zeros everywhere in a patch [rows][cols][ncp] but the channels [0, nc) of
 * the pixels rows [r0, r0+nr) x cols [c0, c0+ncl), which the transposes
 * write (a whole-patch memset was 6% of the launch). */
static void patch_zero(float *patch, int64_t rows, int64_t cols, int64_t nc, int64_t ncp,
		       int64_t r0, int64_t nr, int64_t c0, int64_t ncl)
{
	const size_t px = sizeof *patch * (size_t)ncp;

	if (nr <= 0 || ncl <= 0) {
		memset(patch, 0, px * (size_t)(rows * cols));
		return;
	}
	memset(patch, 0, px * (size_t)(r0 * cols));
	memset(patch + (r0 + nr) * cols * ncp, 0, px * (size_t)((rows - r0 - nr) * cols));
	for (int64_t r = r0; r < r0 + nr; r++) {
		float *row = patch + r * cols * ncp;

		memset(row, 0, px * (size_t)c0);
		memset(row + (c0 + ncl) * ncp, 0, px * (size_t)(cols - c0 - ncl));
		if (ncp > nc)
			for (int64_t c = c0; c < c0 + ncl; c++)
				memset(row + c * ncp + nc, 0, sizeof *patch * (size_t)(ncp - nc));
	}
}

/* Channel block [c0, c0+nc) of the tile's patch, counted as the direct
 * strategy's transfer; the host lays it out channels last with zeros
 * around (the padding and the rows past the tile's outputs). */
static int patch_in(const struct wino *wg, const struct wtile *tp, int64_t c0, int64_t nc,
		    float *patch, struct opr_error *err)
{
	const struct ops_conv_dims *d = wg->d;
	int64_t rs, rv0, rnv, cs, cv0, cnv;
	const int64_t ncp = up16(nc), rows = tp->th * 4 + 2, cols = tp->tw * 4 + 2;
	struct ops_dma_desc dd;

	in_range(tp->oh0, tp->noh, d->ph, d->h, &rs, &rv0, &rnv);
	in_range(tp->ow0, tp->now, d->pw, d->w, &cs, &cv0, &cnv);
	if (!wg->dry) {
		patch_zero(patch, rows, cols, nc, ncp, rv0 - rs, rnv, cv0 - cs, cnv);
		for (int64_t r = 0; r < rnv && cnv > 0; r++) {
			const float *src = wg->x + ((tp->ni * d->c + tp->g * d->cpg + c0) * d->h +
						    rv0 + r) * d->w + cv0;
			float *dst = patch + ((rv0 - rs + r) * cols + (cv0 - cs)) * ncp;

			tr_f32(src, d->h * d->w, dst, ncp, nc, cnv);
		}
	}
	ops_compute(wg->dev, OPS_F32, 0, 0, 0, (uint64_t)(rows * cols * ncp - nc * rnv * cnv) * 4);
	if (rnv <= 0 || cnv <= 0)
		return 0;
	memset(&dd, 0, sizeof dd);
	dd.rank = 3;
	dd.shape[0] = nc;
	dd.shape[1] = rnv;
	dd.shape[2] = cnv;
	dd.src_stride[0] = d->h * d->w;
	dd.src_stride[1] = d->w;
	dd.src_stride[2] = 1;
	dd.dst_stride[0] = 1;
	dd.dst_stride[1] = cols * ncp;
	dd.dst_stride[2] = ncp;
	dd.elem_bytes = 4;
	return ops_dma_split_count(wg->dev, OPS_SHARED, OPS_GLOBAL, &dd, err);
}

/* U's block for the tile's output channels and channel block c0, counted
 * (the host reads it in place). */
static int u_in(const struct wino *wg, int64_t nk, int64_t nc, struct opr_error *err)
{
	struct ops_dma_desc dd;

	memset(&dd, 0, sizeof dd);
	dd.rank = 3;
	dd.shape[0] = WINO_POS;
	dd.shape[1] = nc;
	dd.shape[2] = nk;
	dd.src_stride[0] = wg->cpad * wg->ku;
	dd.src_stride[1] = wg->ku;
	dd.src_stride[2] = 1;
	dd.dst_stride[0] = up16(nc) * up16(nk);
	dd.dst_stride[1] = up16(nk);
	dd.dst_stride[2] = 1;
	dd.elem_bytes = 4;
	return ops_dma_split_count(wg->dev, OPS_SHARED, OPS_GLOBAL, &dd, err);
}

/* Winograd tiles [q0, q0+nq) of the tile: in, GEMM, out into acc. */
static void chunk_compute(const struct wino *wg, const struct wtile *tp, int64_t c0, int64_t nc,
			  const float *patch, float *v, float *m, float *acc, int add)
{
	const struct ops_kern *kn = ops_kern;
	const int64_t ncp = up16(nc), nkp = up16(tp->nk), cols = tp->tw * 4 + 2;
	const float *u = wg->u + ((tp->g * WINO_POS) * wg->cpad + c0) * wg->ku + tp->k0;
	const int64_t xv = wg->pc * ncp + WINO_XPAD, xm = wg->pc * nkp + WINO_XPAD;

	for (int64_t q0 = 0; q0 < tp->th * tp->tw; q0 += wg->pc) {
		int64_t nq = mn(wg->pc, tp->th * tp->tw - q0);

		for (int64_t q = 0; q < nq; q++) {
			int64_t ty = (q0 + q) / tp->tw, tx = (q0 + q) % tp->tw;

			kn->wino_in(patch + (ty * 4 * cols + tx * 4) * ncp, cols * ncp, ncp, ncp,
				    v + q * ncp, xv);
		}
		for (int x = 0; x < WINO_POS; x++)
			kn->wino_gemm(v + x * xv, ncp, u + x * wg->cpad * wg->ku, wg->ku, m + x * xm,
				      nkp, nq, nkp, ncp);
		for (int64_t q = 0; q < nq; q++) {
			int64_t ty = (q0 + q) / tp->tw, tx = (q0 + q) % tp->tw;

			kn->wino_out(m + q * nkp, xm, nkp,
				     acc + (ty * 4 * tp->now + tx * 4) * nkp, tp->now * nkp, nkp,
				     (int)mn(4, tp->noh - ty * 4), (int)mn(4, tp->now - tx * 4), add);
		}
	}
}

/* After the last channel block: bias and activation on acc (channels last,
 * the bias a vector per pixel), then acc into y. */
static int tile_out(const struct wino *wg, const struct wtile *tp, float *acc,
		    struct opr_error *err)
{
	const struct ops_conv_dims *d = wg->d;
	const int64_t nkp = up16(tp->nk), npix = tp->noh * tp->now, n = tp->nk * npix;
	struct ops_dma_desc dd;
	int rc;

	if (wg->epi) {
		memset(&dd, 0, sizeof dd);
		dd.rank = 1;
		dd.shape[0] = tp->nk;
		dd.src_stride[0] = dd.dst_stride[0] = 1;
		dd.elem_bytes = 4;
		if ((rc = ops_dma_split_count(wg->dev, OPS_SHARED, OPS_GLOBAL, &dd, err)) < 0)
			return rc;
		if (!wg->dry) {
			const float *b = wg->bias + tp->g * d->kpg + tp->k0;

			for (int64_t p = 0; p < npix; p++)
				for (int64_t k = 0; k < tp->nk; k++)
					acc[p * nkp + k] += b[k];
			if (wg->act != OPS_ACT_NONE)
				ops_act_f32(wg->act, acc, acc, (size_t)(npix * nkp));
		}
		uint64_t ops = wg->act != OPS_ACT_NONE ? 2 * (uint64_t)n : (uint64_t)n;
		ops_compute(wg->dev, OPS_F32, 0, ops, ops * 4 + (uint64_t)tp->nk * 4, ops * 4);
	}
	int64_t dst = ((tp->ni * d->k + tp->g * d->kpg + tp->k0) * d->oh + tp->oh0) * d->ow + tp->ow0;
	if (!wg->dry)
		for (int64_t r = 0; r < tp->noh; r++)
			tr_f32(acc + r * tp->now * nkp, nkp, wg->y + dst + r * d->ow, d->oh * d->ow,
			       tp->now, tp->nk);
	memset(&dd, 0, sizeof dd);
	dd.rank = 3;
	dd.shape[0] = tp->nk;
	dd.shape[1] = tp->noh;
	dd.shape[2] = tp->now;
	dd.src_stride[0] = 1;
	dd.src_stride[1] = tp->now * nkp;
	dd.src_stride[2] = nkp;
	dd.dst_stride[0] = d->oh * d->ow;
	dd.dst_stride[1] = d->ow;
	dd.dst_stride[2] = 1;
	dd.elem_bytes = 4;
	return ops_dma_split_count(wg->dev, OPS_GLOBAL, OPS_SHARED, &dd, err);
}

enum { WB_PATCH0, WB_PATCH1, WB_U0, WB_U1, WB_V, WB_M, WB_ACC, WB_BIAS, WB_N };

static void wbufs_release(struct ops_device *dev, struct ops_buf *b)
{
	for (int i = WB_N - 1; i >= 0; i--)
		if (b[i].bytes)
			ops_buf_release(dev, &b[i]);
	memset(b, 0, sizeof *b * WB_N);
}

static int wbufs_get(const struct wino *wg, struct ops_buf *b, struct opr_error *err)
{
	const struct ops_conv_tiles *t = wg->t;
	int64_t ncp = up16(t->tc), nkp = wg->nkp;
	int64_t patch = (cdiv(t->toh, 4) * 4 + 2) * (cdiv(t->tow, 4) * 4 + 2) * ncp;
	int64_t pc = mn(OPS_WINO_PC, cdiv(t->toh, 4) * cdiv(t->tow, 4));
	int64_t sz[WB_N] = {
		[WB_PATCH0] = patch, [WB_PATCH1] = wg->db ? patch : 0,
		[WB_U0] = WINO_POS * ncp * nkp, [WB_U1] = wg->db ? WINO_POS * ncp * nkp : 0,
		[WB_V] = WINO_POS * (pc * ncp + WINO_XPAD), [WB_M] = WINO_POS * (pc * nkp + WINO_XPAD),
		[WB_ACC] = t->toh * t->tow * nkp, [WB_BIAS] = wg->epi ? nkp : 0,
	};
	int rc;

	memset(b, 0, sizeof *b * WB_N);
	for (int i = 0; i < WB_N; i++)
		if (sz[i] > 0 && (rc = ops_buf_alloc(wg->dev, OPS_SHARED, (size_t)sz[i] * 4, &b[i],
						     err)) < 0) {
			wbufs_release(wg->dev, b);
			return rc;
		}
	return 0;
}

static int tile_run(struct wino *wg, struct ops_buf *b, const struct wtile *tp,
		    struct opr_error *err)
{
	const struct ops_conv_dims *d = wg->d;
	const int64_t ntw = tp->th * tp->tw;
	int rc;

	for (int64_t cb = 0; cb < wg->ncb; cb++) {
		int64_t c0 = cb * wg->t->tc, nc = mn(wg->t->tc, d->cpg - c0), ncp = up16(nc);
		float *patch = b[WB_PATCH0].data;

		if ((rc = patch_in(wg, tp, c0, nc, patch, err)) < 0 ||
		    (rc = u_in(wg, tp->nk, nc, err)) < 0)
			return rc;
		if (!wg->dry)
			chunk_compute(wg, tp, c0, nc, patch, b[WB_V].data, b[WB_M].data,
				      b[WB_ACC].data, cb > 0);
		uint64_t tin = (uint64_t)(ntw * nc), tout = (uint64_t)(ntw * tp->nk);
		uint64_t patch_bytes = (uint64_t)((tp->th * 4 + 2) * (tp->tw * 4 + 2) * ncp) * 4;
		uint64_t vb = (uint64_t)WINO_POS * tin * 4, mb = (uint64_t)WINO_POS * tout * 4;
		uint64_t ub = (uint64_t)(WINO_POS * nc * tp->nk) * 4;
		uint64_t accb = (uint64_t)(tp->noh * tp->now * tp->nk) * 4;
		ops_compute(wg->dev, OPS_F32,
			    tin * WINO_IN_OPS + (uint64_t)WINO_POS * tin * (uint64_t)tp->nk +
			    tout * WINO_OUT_OPS, 0,
			    patch_bytes + vb + ub + mb + (cb > 0 ? accb : 0), vb + mb + accb);
	}
	return tile_out(wg, tp, b[WB_ACC].data, err);
}

static int tiles_launch(struct wino *wg, const char *name, struct opr_error *err)
{
	int cores = ops_device_envelope(wg->dev)->cores;
	struct ops_buf b[WB_N];
	int64_t prev = -1;
	int rc;

	cores = cores > 0 ? (cores < OPS_MAX_CORES ? cores : OPS_MAX_CORES) : 1;
	memset(b, 0, sizeof b);
	if ((rc = ops_launch_begin(wg->dev, name, wg->db, err)) < 0)
		return rc;
	if (wg->onep)
		ops_launch_one_pass(wg->dev);
	for (int64_t i = 0; i < wg->ntiles && rc == 0; i++) {
		int64_t t = ops_conv_tile_order(i, wg->ntiles, cores);
		struct wtile tp;

		ops_tile_begin(wg->dev, t);
		if (t % cores != prev) {
			wbufs_release(wg->dev, b);
			if ((rc = wbufs_get(wg, b, err)) < 0)
				break;
			prev = t % cores;
		}
		wtile_decode(wg, t, &tp);
		rc = tile_run(wg, b, &tp, err);
	}
	wbufs_release(wg->dev, b);
	if (rc == 0)
		return ops_launch_end(wg->dev, err);
	ops_launch_end(wg->dev, NULL);
	return rc;
}

int ops_conv_wino_run(const struct ops_wino_args *a, const char *name, struct opr_error *err)
{
	const struct ops_conv_dims *d = a->d;
	const char *why = ops_conv_wino_refusal(d, a->dt);
	struct wino wg;
	int rc;

	if (why)
		return opr_error_set(err, OPR_ELIMIT, "%s", why);
	memset(&wg, 0, sizeof wg);
	wg.dev = a->dev;
	wg.d = d;
	wg.t = a->t;
	wg.dry = ops_device_dry_run(a->dev);
	wg.db = a->db;
	wg.epi = a->epi;
	wg.act = a->act;
	wg.x = a->x;
	wg.w = a->w;
	wg.bias = a->bias;
	wg.y = a->y;
	/* the transfers are counted and the host computes in place (as the
	 * direct strategy's one-pass launches: device_int.h) */
	wg.onep = ops_device_envelope(a->dev)->dma_serial;
	wg.cpad = up16(d->cpg);
	wg.ku = u_row(d, a->t);
	wg.nkp = up16(a->t->tk);
	wg.pc = mn(OPS_WINO_PC, cdiv(a->t->toh, 4) * cdiv(a->t->tow, 4));
	wg.ntk = cdiv(d->kpg, a->t->tk);
	wg.nth = cdiv(d->oh, a->t->toh);
	wg.ntw = cdiv(d->ow, a->t->tow);
	wg.ncb = cdiv(d->cpg, a->t->tc);
	wg.ntiles = d->n * d->groups * wg.ntk * wg.nth * wg.ntw;
	if (!wg.dry) {
		size_t ub = ops_conv_wino_u_bytes(d, a->t);

		if (a->u && *a->u && *a->u_bytes == ub) {
			wg.u = *a->u;
		} else {
			if (!(wg.u = ops_host_alloc(ub)))
				return opr_error_set(err, OPR_ENOMEM,
						     "conv2d winograd: out of memory for U (%zu bytes)", ub);
			/* the padded channel rows and the columns past kpg are
			 * never written: zero once */
			memset(wg.u, 0, ub);
			if (a->u) {
				free(*a->u);
				*a->u = wg.u;
				*a->u_bytes = ub;
			}
		}
	}
	rc = weights_launch(&wg, err);
	if (rc == 0)
		rc = tiles_launch(&wg, name, err);
	if (!wg.dry && !a->u)
		free(wg.u);
	return rc;
}
