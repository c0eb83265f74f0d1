/* ops/permute.c: permute (y = x with its axes reordered) and the fused group
 * permute+activation, on the device model: output tiles gathered GLOBAL ->
 * SHARED by strided DMA (the transposition is in the descriptor's strides),
 * optionally activated in SHARED, and written SHARED -> GLOBAL. Elements
 * and bytes throughout. */
#include "device_int.h"
#include "isa_int.h"
#include "ops_int.h"

#include <immintrin.h> /* _mm_sfence (SSE, baseline x86-64) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The permute after coalescing. Output axis i has size o[i], input stride
 * s[i] and output stride os[i] (elements). Size-1 axes are dropped and
 * neighbouring output axes i, i+1 merge when s[i] == s[i+1] * o[i+1] (they
 * stay adjacent and in order in the input). A tile is a block of the plane
 * of two axes: b, the last output axis, and a, either the axis before it
 * (b contiguous in the input too: a row copy) or the axis contiguous in the
 * input (a transpose); every other axis is walked one index at a time. */
struct pgeom {
	int r;
	int64_t o[OPS_MAX_RANK], s[OPS_MAX_RANK], os[OPS_MAX_RANK];
	int64_t n;                      /* elements */
	int a, b;                       /* a = -1: no second axis (size 1) */
	int transposed;
	int64_t oa, ob, sa, sb, osa;
	int64_t nouter;                 /* n / (oa * ob) */
	int64_t tr, tc;                 /* tile: tr along a, tc along b */
	size_t es;
};

static int job_check(const struct ops_permute_job *j, struct opr_error *err)
{
	int seen[OPS_MAX_RANK] = { 0 };
	int64_t n = 1;
	size_t es = ops_dtype_size(j->dtype);

	if (j->rank < 0 || j->rank > OPS_MAX_RANK)
		return opr_error_set(err, OPR_EINPUT, "permute rank %d out of range 0..%d",
				     j->rank, OPS_MAX_RANK);
	if (es != 1 && es != 2 && es != 4)
		return opr_error_set(err, OPR_EINPUT, "permute dtype '%s' not supported",
				     ops_dtype_name(j->dtype));
	if (j->with_act && j->dtype != OPS_F32 && j->dtype != OPS_F16 && j->dtype != OPS_BF16)
		return opr_error_set(err, OPR_EINPUT,
				     "permute+activation needs fp32, fp16 or bf16, not '%s'",
				     ops_dtype_name(j->dtype));
	if (j->with_act && (unsigned)j->act >= OPS_NACTS)
		return opr_error_set(err, OPR_EINPUT, "unknown activation %d", (int)j->act);
	for (int i = 0; i < j->rank; i++) {
		int p = j->perm[i];
		if (p < 0 || p >= j->rank || seen[p])
			return opr_error_set(err, OPR_EINPUT,
					     "'perm' is not a permutation of 0..%d", j->rank - 1);
		seen[p] = 1;
		if (j->dims[i] < 0)
			return opr_error_set(err, OPR_EINPUT, "permute dimension %d is negative", i);
		if (j->dims[i] == 0)
			n = 0;
		else if (n && n > (INT64_MAX / 8) / j->dims[i])
			return opr_error_set(err, OPR_ELIMIT, "permute tensor too large");
		else
			n *= j->dims[i];
	}
	if (j->tile_rows < 0 || j->tile_cols < 0)
		return opr_error_set(err, OPR_EINPUT, "'tile_rows' and 'tile_cols' must not be negative");
	return 0;
}

void ops_permute_coalesce(const struct ops_permute_job *j, struct ops_permute_dims *g)
{
	int64_t is[OPS_MAX_RANK];
	int64_t st = 1;
	int r = 0;

	memset(g, 0, sizeof *g);
	g->n = 1;
	for (int k = j->rank - 1; k >= 0; k--) {
		is[k] = st;
		st *= j->dims[k] > 0 ? j->dims[k] : 1;
		g->n *= j->dims[k];
	}
	for (int i = 0; i < j->rank; i++) {
		int64_t d = j->dims[j->perm[i]], s = is[j->perm[i]];
		if (d == 1)
			continue;
		if (r > 0 && g->s[r - 1] == s * d) {
			g->o[r - 1] *= d;
			g->s[r - 1] = s;
			continue;
		}
		g->o[r] = d;
		g->s[r] = s;
		r++;
	}
	if (r == 0) {
		g->o[0] = 1;
		g->s[0] = 1;
		r = 1;
	}
	g->r = r;
	g->os[r - 1] = 1;
	for (int i = r - 2; i >= 0; i--)
		g->os[i] = g->os[i + 1] * g->o[i + 1];
}

static void geometry(const struct ops_permute_job *j, struct pgeom *g)
{
	struct ops_permute_dims c;

	ops_permute_coalesce(j, &c);
	memset(g, 0, sizeof *g);
	g->es = ops_dtype_size(j->dtype);
	g->n = c.n;
	g->r = c.r;
	memcpy(g->o, c.o, sizeof g->o);
	memcpy(g->s, c.s, sizeof g->s);
	memcpy(g->os, c.os, sizeof g->os);
	int r = g->r;
	g->b = r - 1;
	g->a = r - 2;
	if (g->s[g->b] != 1) {
		g->transposed = 1;
		for (int i = 0; i < r; i++)
			if (g->s[i] == 1)
				g->a = i;
	}
	g->ob = g->o[g->b];
	g->sb = g->s[g->b];
	g->oa = g->a >= 0 ? g->o[g->a] : 1;
	g->sa = g->a >= 0 ? g->s[g->a] : 0;
	g->osa = g->a >= 0 ? g->os[g->a] : 0;
	g->nouter = g->n ? g->n / (g->oa * g->ob) : 0;
}

static int64_t min64(int64_t x, int64_t y)
{
	return x < y ? x : y;
}

static int64_t max64(int64_t x, int64_t y)
{
	return x > y ? x : y;
}

/* Default tile: the tile buffers (two when double-buffered) take half of a
 * core's SHARED capacity, E elements each. A row copy takes whole rows of b
 * (capped at E) and as many rows of a as fit; a transpose takes a square
 * tile with sides a power of two (the transposes work in 8 x 8 blocks),
 * widened along b when a is short. With one side pinned the other fills E;
 * pinned sizes are used as given, clamped to the dims. */
static void resolve_tile(const struct ops_envelope *env, const struct ops_permute_job *j,
			 struct pgeom *g)
{
	const int64_t nb = j->double_buffer ? 2 : 1;
	int64_t cap = (int64_t)(env->shared_capacity_kib * 1024.0);
	int64_t e = max64(1, cap / (2 * nb * (int64_t)g->es));
	int64_t tr = j->tile_rows, tc = j->tile_cols;

	if (!tr && !tc) {
		if (!g->transposed) {
			tc = min64(g->ob, e);
		} else {
			int64_t side = 1;
			while (side * 2 * side * 2 <= e)
				side *= 2;
			tc = min64(g->ob, side);
			tr = max64(1, min64(g->oa, e / tc));
			tc = min64(g->ob, max64(1, e / tr));
		}
		if (!tr)
			tr = max64(1, e / tc);
	} else if (!tr) {
		tr = max64(1, e / max64(1, min64(tc, g->ob)));
	} else if (!tc) {
		tc = max64(1, e / max64(1, min64(tr, g->oa)));
	}
	g->tr = max64(1, min64(tr, g->oa));
	g->tc = max64(1, min64(tc, g->ob));
}

/* Transfers of the descriptors along one axis of length n cut into blocks
 * of t, when each block's descriptor has that block as its last dimension:
 *   S(n, t) = floor(n / t) * ceil(t / M) + (n mod t > 0 ? ceil((n mod t) / M) : 0) */
static uint64_t seg_transfers(int64_t n, int64_t t, int64_t m)
{
	uint64_t full = (uint64_t)(n / t) * (uint64_t)((t + m - 1) / m);
	int64_t rem = n % t;

	return full + (rem ? (uint64_t)((rem + m - 1) / m) : 0);
}

static int64_t cdiv(int64_t x, int64_t y)
{
	return (x + y - 1) / y;
}

/* Closed form, with Ta = ceil(oa / tr), Tb = ceil(ob / tc), N = the product of
 * the other axes, M = max_last_dim:
 *   tiles = N * Ta * Tb
 *   row copy:  transfers = N * Ta * 2 * S(ob, tc)          (gather and scatter
 *              both have b last)
 *   transpose: transfers = N * (Tb * S(oa, tr) + Ta * S(ob, tc))   (the gather
 *              has a last, the scatter b)
 * and, unfused with an activation, a second launch over the output in chunks
 * of E = tr * tc elements: tiles += ceil(n / E), transfers += 2 * S(n, E).
 * splits = transfers - 2 * tiles (every tile issues two descriptors before
 * splitting). A zero-size tensor runs its launches with no tiles. */
static void counts_of(const struct ops_envelope *env, const struct ops_permute_job *j,
		      const struct pgeom *g, struct ops_permute_counts *c)
{
	const int64_t m = env->dma_max_last_dim;

	memset(c, 0, sizeof *c);
	c->tile_rows = g->tr;
	c->tile_cols = g->tc;
	c->launches = j->with_act && !j->fused ? 2 : 1;
	if (g->n == 0)
		return;
	uint64_t ta = (uint64_t)cdiv(g->oa, g->tr), tb = (uint64_t)cdiv(g->ob, g->tc);
	uint64_t nout = (uint64_t)g->nouter;
	c->tiles = nout * ta * tb;
	if (!g->transposed)
		c->transfers = nout * ta * 2 * seg_transfers(g->ob, g->tc, m);
	else
		c->transfers = nout * (tb * seg_transfers(g->oa, g->tr, m) +
				       ta * seg_transfers(g->ob, g->tc, m));
	if (j->with_act && !j->fused) {
		int64_t e = g->tr * g->tc;
		c->tiles += (uint64_t)cdiv(g->n, e);
		c->transfers += 2 * seg_transfers(g->n, e, m);
	}
	c->splits = c->transfers - 2 * c->tiles;
}

int ops_permute_expect(const struct ops_envelope *env, const struct ops_permute_job *job,
		       struct ops_permute_counts *out, struct opr_error *err)
{
	struct pgeom g;
	int rc = job_check(job, err);

	if (rc)
		return rc;
	geometry(job, &g);
	resolve_tile(env, job, &g);
	counts_of(env, job, &g, out);
	return 0;
}

/* p + off elements, keeping NULL (a dry run has no data) */
static void *at(const void *p, int64_t off, size_t es)
{
	return p ? (char *)(uintptr_t)p + off * (int64_t)es : NULL;
}

/* The activation on n contiguous elements of a SHARED tile: in fp32 directly,
 * fp16/bf16 through fp32 in register-sized chunks. */
static void act_inplace(enum ops_act a, enum ops_dtype t, void *buf, int64_t n)
{
	if (t == OPS_F32) {
		ops_act_f32(a, buf, buf, (size_t)n);
		return;
	}
	float f[256];
	for (int64_t i = 0; i < n; i += 256) {
		size_t k = (size_t)min64(256, n - i);
		void *p = at(buf, i, 2);
		ops_to_f32(t, p, f, k);
		ops_act_f32(a, f, f, k);
		ops_from_f32(t, f, p, k);
	}
}

static void tile_act(struct ops_device *dev, const struct ops_permute_job *j, void *buf,
		     int64_t n)
{
	size_t es = ops_dtype_size(j->dtype);

	ops_compute(dev, j->dtype, 0, (uint64_t)n, (uint64_t)n * es, (uint64_t)n * es);
	if (!ops_device_dry_run(dev))
		act_inplace(j->act, j->dtype, buf, n);
}

/* Host order of the tiles. Tile (xa, xb) of outer index q has the id
 * (q * Ta + xa) * Tb + xb (Ta, Tb the tile counts along a and b), which fixes
 * its core and so every count; the host may visit the tiles in any order.
 * It walks groups of G tile strips along a: for each block of b, the G
 * tiles of the group one after another. In a transpose that makes each of
 * the tile's tc input rows a sequential run of G * tr elements (about
 * PERM_RUN_BYTES: the prefetchers stay on the row) instead of a new 2 KiB run
 * per tile, while the output rows of the group stay few enough to be
 * finished while their pages are in the TLB. On the [4096, 70000] (1, 0)
 * fp32 transpose with 512 x 64 tiles, G = 8 was 10-13% faster than G = 1
 * (tiles along b innermost), and walking a outermost was 20% slower. A row
 * copy reads and writes whole rows already: G = 1. */
#define PERM_RUN_BYTES 16384

/* permute_tile's one_pass: 0 staged through SHARED, PERM_ONE_PASS_TILE the
 * tile transposed straight into y, PERM_ONE_PASS_PLANE counted only (the
 * launch moves each plane of a and b in one kernel call). */
enum { PERM_ONE_PASS_TILE = 1, PERM_ONE_PASS_PLANE = 2 };

/* One tile: (xa, xb) of outer index q, with input and output offsets in0 and
 * out0 of that outer index, through buf. */
static int permute_tile(struct ops_device *dev, const struct ops_permute_job *j,
			const struct pgeom *g, const void *x, void *y, struct ops_buf *buf,
			int64_t in0, int64_t out0, int64_t xa, int64_t xb, int64_t tile,
			int one_pass, struct opr_error *err)
{
	const int64_t ia = xa * g->tr, ib = xb * g->tc;
	const int64_t ra = min64(g->tr, g->oa - ia), rb = min64(g->tc, g->ob - ib);
	const void *src = at(x, in0 + ia * g->sa + ib * g->sb, g->es);
	void *dst = at(y, out0 + ia * g->osa + ib, g->es);
	struct ops_dma_desc in = { .rank = 2, .elem_bytes = g->es };
	struct ops_dma_desc out = {
		.rank = 2, .shape = { ra, rb }, .src_stride = { rb, 1 },
		.dst_stride = { g->osa, 1 }, .elem_bytes = g->es
	};
	int rc;

	if (!g->transposed) {
		in.shape[0] = ra;
		in.shape[1] = rb;
		in.src_stride[0] = g->sa;
		in.src_stride[1] = 1;
		in.dst_stride[0] = rb;
		in.dst_stride[1] = 1;
	} else {
		/* read along a (contiguous in x), write the tile transposed
		 * into SHARED */
		in.shape[0] = rb;
		in.shape[1] = ra;
		in.src_stride[0] = g->sb;
		in.src_stride[1] = 1;
		in.dst_stride[0] = 1;
		in.dst_stride[1] = rb;
	}
	ops_tile_begin(dev, tile);
	if (one_pass) {
		/* counted as issued; the host transposes straight into y (the
		 * tile here, the whole plane in permute_launch when streamed) */
		if ((rc = ops_dma_split_count(dev, OPS_SHARED, OPS_GLOBAL, &in, err)) ||
		    (rc = ops_dma_split_count(dev, OPS_GLOBAL, OPS_SHARED, &out, err)))
			return rc;
		if (one_pass == PERM_ONE_PASS_PLANE || ops_device_dry_run(dev) || ra < 1 || rb < 1)
			return 0;
		ops_kern->transpose[2](src, g->sb, dst, g->osa, rb, ra);
		return 0;
	}
	rc = ops_dma_split(dev, OPS_SHARED, buf->data, OPS_GLOBAL, src, &in, err);
	if (!rc && j->with_act && j->fused)
		tile_act(dev, j, buf->data, ra * rb);
	if (!rc)
		rc = ops_dma_split(dev, OPS_GLOBAL, dst, OPS_SHARED, buf->data, &out, err);
	return rc;
}

static int permute_launch(struct ops_device *dev, const struct ops_permute_job *j,
			  const struct pgeom *g, const void *x, void *y,
			  struct ops_buf *bufs, struct opr_error *err)
{
	int64_t idx[OPS_MAX_RANK] = { 0 };
	const int act_here = j->with_act && j->fused;
	const int64_t ta = cdiv(g->oa, g->tr), tb = cdiv(g->ob, g->tc);
	const int64_t grp = g->transposed ? max64(1, PERM_RUN_BYTES / (g->tr * (int64_t)g->es)) : 1;
	/* A plain fp32 transpose on a path with a streaming transpose runs in
	 * one pass (device_int.h, ops_launch_one_pass): staged through a SHARED
	 * buffer it was two copies on the host, the second (256-byte rows out
	 * of L2 into GLOBAL) a third of the time. With an activation in the
	 * launch the tile still goes through SHARED. */
	int one_pass = g->transposed && !act_here && g->es == 4 && g->sa == 1 &&
		       ops_kern->transpose_nt[2];
	int rc = ops_launch_begin(dev, act_here ? "permute+activation" : "permute",
				  j->double_buffer, err);

	if (rc)
		return rc;
	if (!g->transposed)
		ops_launch_alt_kernel(dev);
	ops_launch_stream_hint(dev, (uint64_t)g->n * g->es);
	if (one_pass)
		ops_launch_one_pass(dev);
	/* Streamed (y past the device's streaming threshold): the tiles are
	 * counted one by one, and each plane of a and b is moved by one call
	 * of the path's streaming transpose, which chooses its own blocks
	 * (ops/kern_avx512.c: bands of 32 source rows swept along the whole
	 * rows). Called per tile
	 * (512 x 64 on [4096, 70000]) its blocks stopped at the tile's edges:
	 * 2 KiB source runs and 128-byte destination runs per band pair. */
	if (one_pass)
		one_pass = ops_launch_streams_global(dev) ? PERM_ONE_PASS_PLANE : PERM_ONE_PASS_TILE;
	for (int64_t q = 0; q < g->nouter; q++) {
		int64_t in0 = 0, out0 = 0;
		for (int i = 0; i < g->r; i++) {
			in0 += idx[i] * g->s[i];
			out0 += idx[i] * g->os[i];
		}
		for (int64_t xa0 = 0; xa0 < ta; xa0 += grp) {
			const int64_t xa1 = min64(ta, xa0 + grp);
			for (int64_t xb = 0; xb < tb; xb++) {
				for (int64_t xa = xa0; xa < xa1; xa++) {
					/* every tile through bufs[0] (ops.h) */
					rc = permute_tile(dev, j, g, x, y, &bufs[0], in0, out0, xa, xb,
							  (q * ta + xa) * tb + xb, one_pass, err);
					if (rc)
						goto end_launch;
				}
			}
		}
		if (one_pass == PERM_ONE_PASS_PLANE && !ops_device_dry_run(dev))
			ops_kern->transpose_nt[2](at(x, in0, g->es), g->sb, at(y, out0, g->es), g->osa,
						  g->ob, g->oa);
		/* next index of the outer axes (all but a and b), last fastest */
		for (int i = g->r - 1; i >= 0; i--) {
			if (i == g->a || i == g->b)
				continue;
			if (++idx[i] < g->o[i])
				break;
			idx[i] = 0;
		}
	}
	if (one_pass == PERM_ONE_PASS_PLANE)
		_mm_sfence(); /* the streamed lines before what follows */
	return ops_launch_end(dev, err);
end_launch:
	if (one_pass == PERM_ONE_PASS_PLANE)
		_mm_sfence();
	ops_launch_end(dev, NULL);
	return rc;
}

/* Unfused: the activation as its own launch over y in GLOBAL, in chunks of
 * one tile buffer each way. */
static int act_launch(struct ops_device *dev, const struct ops_permute_job *j,
		      const struct pgeom *g, void *y, struct ops_buf *bufs,
		      struct opr_error *err)
{
	const int64_t e = g->tr * g->tc;
	int64_t tile = 0;
	int rc = ops_launch_begin(dev, "activation", j->double_buffer, err);

	if (rc)
		return rc;
	if (!g->transposed)
		ops_launch_alt_kernel(dev);
	ops_launch_stream_hint(dev, (uint64_t)g->n * g->es);
	for (int64_t off = 0; off < g->n; off += e, tile++) {
		int64_t k = min64(e, g->n - off);
		struct ops_buf *buf = &bufs[0]; /* every tile (ops.h) */
		struct ops_dma_desc d = {
			.rank = 1, .shape = { k }, .src_stride = { 1 }, .dst_stride = { 1 },
			.elem_bytes = g->es
		};
		ops_tile_begin(dev, tile);
		rc = ops_dma_split(dev, OPS_SHARED, buf->data, OPS_GLOBAL, at(y, off, g->es), &d, err);
		if (!rc) {
			tile_act(dev, j, buf->data, k);
			rc = ops_dma_split(dev, OPS_GLOBAL, at(y, off, g->es), OPS_SHARED, buf->data,
					   &d, err);
		}
		if (rc) {
			ops_launch_end(dev, NULL);
			return rc;
		}
	}
	return ops_launch_end(dev, err);
}

int ops_permute_exec(struct ops_device *dev, const struct ops_permute_job *job,
		     const void *x, void *y, struct opr_error *err)
{
	struct ops_buf bufs[2];
	struct pgeom g;
	int nb = job->double_buffer ? 2 : 1;
	int rc = job_check(job, err);

	if (rc)
		return rc;
	geometry(job, &g);
	resolve_tile(ops_device_envelope(dev), job, &g);
	memset(bufs, 0, sizeof bufs);
	if (g.n > 0 && !ops_device_dry_run(dev) && (!x || !y))
		return opr_error_set(err, OPR_EINTERNAL, "permute without tensors in a real run");
	/* one core's tile buffers, allocated outside the launch: every core
	 * holds the same footprint */
	for (int i = 0; i < nb; i++) {
		rc = ops_buf_alloc(dev, OPS_SHARED, (size_t)(g.tr * g.tc) * g.es, &bufs[i], err);
		if (rc)
			goto release;
	}
	rc = permute_launch(dev, job, &g, x, y, bufs, err);
	if (!rc && job->with_act && !job->fused)
		rc = act_launch(dev, job, &g, y, bufs, err);
release:
	for (int i = nb; i-- > 0;)
		ops_buf_release(dev, &bufs[i]);
	return rc;
}

/* ---- the workload interface ---------------------------------------------------- */

static void job_of(const struct ops_workload *w, const struct ops_plan *p,
		   struct ops_permute_job *j)
{
	memset(j, 0, sizeof *j);
	j->rank = w->tensor.rank;
	for (int i = 0; i < OPS_MAX_RANK; i++) {
		j->dims[i] = i < w->tensor.rank ? w->tensor.dims[i] : 1;
		j->perm[i] = i < w->tensor.rank ? w->tensor.perm[i] : i;
	}
	j->dtype = w->dtype;
	j->with_act = w->group == OPS_G_PERMUTE_ACT;
	j->act = w->act;
	if (p) {
		j->fused = p->fused;
		j->tile_rows = p->p[0];
		j->tile_cols = p->p[1];
		j->double_buffer = p->double_buffer;
	} else {
		j->fused = 1;
		j->double_buffer = 1;
	}
}

static int perm_check(const struct ops_workload *w, struct opr_error *err)
{
	struct ops_permute_job j;

	if (w->dtype == OPS_S32)
		return opr_error_set(err, OPR_EINPUT, "permute dtype 's32' not supported");
	job_of(w, NULL, &j);
	return job_check(&j, err);
}

static uint64_t perm_bytes(const struct ops_workload *w)
{
	struct ops_permute_job j;
	struct pgeom g;

	job_of(w, NULL, &j);
	if (job_check(&j, NULL))
		return 0;
	geometry(&j, &g);
	return 2 * (uint64_t)g.n * g.es;
}

static int perm_prepare(struct ops_instance *inst, struct opr_error *err)
{
	struct ops_permute_job j;
	struct pgeom g;
	double lo = -4.0, hi = 4.0;
	int rc;

	job_of(&inst->work, &inst->plan, &j);
	rc = job_check(&j, err);
	if (rc)
		return rc;
	geometry(&j, &g);
	if (j.dtype == OPS_S8) {
		lo = -128;
		hi = 127;
	} else if (j.dtype == OPS_U8) {
		lo = 0;
		hi = 255;
	}
	rc = ops_instance_add_tensor(inst, "x", j.dtype, g.n, 0, lo, hi, err);
	if (rc < 0)
		return rc;
	rc = ops_instance_add_tensor(inst, "y", j.dtype, g.n, 1, 0.0, 0.0, err);
	if (rc < 0)
		return rc;
	inst->out_index = rc;
	return 0;
}

static int perm_run(struct ops_device *dev, struct ops_instance *inst, struct opr_error *err)
{
	struct ops_permute_job j;
	struct ops_tensor *x = ops_instance_tensor(inst, "x");
	struct ops_tensor *y = ops_instance_tensor(inst, "y");

	if (!x || !y)
		return opr_error_set(err, OPR_EINTERNAL, "permute instance without 'x' or 'y'");
	job_of(&inst->work, &inst->plan, &j);
	return ops_permute_exec(dev, &j, x->data, y->data, err);
}

static double load_f64(enum ops_dtype t, const void *p, int64_t i)
{
	switch (t) {
	case OPS_F32:
		return ((const float *)p)[i];
	case OPS_F16:
		return ops_f16_to_f32(((const uint16_t *)p)[i]);
	case OPS_BF16:
		return ops_bf16_to_f32(((const uint16_t *)p)[i]);
	case OPS_S8:
		return ((const int8_t *)p)[i];
	case OPS_U8:
		return ((const uint8_t *)p)[i];
	default:
		return ((const int32_t *)p)[i];
	}
}

/* Output element k (in order) against the exact permutation of x, with the
 * fp64 activation for the fused group. Streamed, so no fp64 copy of the
 * tensor is needed: rel_l2 = sqrt(sum (y - ref)^2 / sum ref^2), infinite when
 * an output is NaN where the reference is not (an unwritten element). */
static int perm_quality(const struct ops_instance *inst, struct ops_quality *q,
			struct opr_error *err)
{
	struct ops_permute_job j;
	struct pgeom g;
	int64_t idx[OPS_MAX_RANK] = { 0 };
	const struct ops_tensor *x = NULL, *y = NULL;
	double e2 = 0.0, r2 = 0.0, maxd = 0.0;
	int bad = 0;

	for (int i = 0; i < inst->nt; i++) {
		if (strcmp(inst->t[i].name, "x") == 0)
			x = &inst->t[i];
		else if (strcmp(inst->t[i].name, "y") == 0)
			y = &inst->t[i];
	}
	if (!x || !y)
		return opr_error_set(err, OPR_EINTERNAL, "permute instance without 'x' or 'y'");
	job_of(&inst->work, &inst->plan, &j);
	geometry(&j, &g);
	memset(q, 0, sizeof *q);
	for (int64_t k = 0; k < g.n; k++) {
		int64_t src = 0;
		for (int i = 0; i < g.r; i++)
			src += idx[i] * g.s[i];
		double ref = load_f64(j.dtype, x->data, src);
		if (j.with_act)
			ref = ops_act_ref(j.act, ref);
		double v = load_f64(j.dtype, y->data, k);
		if (v != v && ref == ref)
			bad = 1;
		else if (ref == ref) {
			double d = v - ref;
			e2 += d * d;
			r2 += ref * ref;
			if (fabs(d) > maxd)
				maxd = fabs(d);
		}
		for (int i = g.r - 1; i >= 0; i--) {
			if (++idx[i] < g.o[i])
				break;
			idx[i] = 0;
		}
	}
	if (bad)
		q->rel_l2 = INFINITY;
	else if (r2 > 0.0)
		q->rel_l2 = sqrt(e2 / r2);
	else
		q->rel_l2 = e2 > 0.0 ? INFINITY : 0.0;
	if (j.dtype == OPS_S8 || j.dtype == OPS_U8) {
		q->max_abs_lsb = bad ? INFINITY : maxd;
		q->exact_int = !bad && maxd == 0.0;
	}
	return 0;
}

/* Candidates: the default tile double- and single-buffered, then tiles of
 * other shapes (a square ladder for a transpose, a ladder of row lengths for
 * a row copy). Plans over SHARED capacity are kept: the planner's dry run
 * rejects them with the reason. */
static size_t perm_plans(const struct ops_envelope *env, const struct ops_workload *w,
			 int fused, struct ops_plan *out, size_t max)
{
	struct ops_permute_job j;
	struct pgeom g;
	size_t n = 0;
	int64_t cand[12][2];
	int nc = 0;

	job_of(w, NULL, &j);
	if (job_check(&j, NULL))
		return 0;
	geometry(&j, &g);
	resolve_tile(env, &j, &g);
	cand[nc][0] = g.tr;
	cand[nc++][1] = g.tc;
	if (g.transposed) {
		static const int64_t sides[] = { 16, 32, 64, 128, 256 };
		for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
			cand[nc][0] = min64(sides[i], g.oa);
			cand[nc++][1] = min64(sides[i], g.ob);
		}
		/* long reads along the input's contiguous axis (the host's
		 * faster shapes on a 4096 x 70000 transpose) */
		static const int64_t rect[2][2] = { { 256, 64 }, { 512, 64 } };
		for (int i = 0; i < 2; i++) {
			cand[nc][0] = min64(rect[i][0], g.oa);
			cand[nc++][1] = min64(rect[i][1], g.ob);
		}
	} else {
		static const int64_t cols[] = { 256, 4096, 65535, 131072 };
		int64_t e = max64(1, (int64_t)(env->shared_capacity_kib * 1024.0) /
					     (4 * (int64_t)g.es));
		for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
			int64_t c = min64(cols[i], g.ob);
			cand[nc][0] = max64(1, min64(g.oa, e / c));
			cand[nc++][1] = c;
		}
	}
	for (int i = 0; i < nc; i++) {
		int dup = 0;
		for (int k = 0; k < i; k++)
			dup |= cand[k][0] == cand[i][0] && cand[k][1] == cand[i][1];
		if (dup)
			continue;
		for (int db = 1; db >= 0; db--) {
			if (n >= max)
				return n;
			if (!db && i > 0)
				break; /* single-buffered only for the default tile */
			struct ops_plan *p = &out[n++];
			memset(p, 0, sizeof *p);
			p->fused = fused;
			p->strategy = OPS_STRAT_DIRECT;
			p->p[0] = cand[i][0];
			p->p[1] = cand[i][1];
			p->split_k = 1;
			p->double_buffer = db;
		}
	}
	return n;
}

static void perm_release(struct ops_instance *inst)
{
	(void)inst; /* no private state */
}

static const char *const perm_params[] = { "tile_rows", "tile_cols", NULL };

const struct ops_group_impl ops_impl_permute = {
	.group = OPS_G_PERMUTE,
	.check = perm_check,
	.bytes = perm_bytes,
	.prepare = perm_prepare,
	.run = perm_run,
	.quality = perm_quality,
	.plans = perm_plans,
	.release = perm_release,
	.params = perm_params,
};

const struct ops_group_impl ops_impl_permute_act = {
	.group = OPS_G_PERMUTE_ACT,
	.check = perm_check,
	.bytes = perm_bytes,
	.prepare = perm_prepare,
	.run = perm_run,
	.quality = perm_quality,
	.plans = perm_plans,
	.release = perm_release,
	.params = perm_params,
};
