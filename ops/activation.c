/* ops/activation.c: element-wise activations: the entry to the fp32 kernels
 * of the chosen path (ops/kern_<isa>.c, shared with the fused epilogues), the
 * strided tiled operator on the device model, and the activation workload
 * (group OPS_G_ACTIVATION). Units: elements. */
#include "activation_int.h"
#include "device_int.h"
#include "isa_int.h"

#include <immintrin.h> /* _mm_prefetch, _mm_sfence (SSE, baseline x86-64) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

void ops_act_f32(enum ops_act a, const float *x, float *y, size_t n)
{
	ops_kern->act_f32(a, x, y, n);
}

/* ops_act_f32 with streamed stores; the caller fences. */
static void act_f32_stream(enum ops_act a, const float *x, float *y, size_t n)
{
	ops_kern->act_f32_stream(a, x, y, n);
}

/* ---- the strided operator on the device model ------------------------------
 * Data flow of one launch, per tile (tile t on core t % cores):
 *   DMA GLOBAL -> SHARED   the tile of x, packed (rank <= 4 descriptor from the
 *                          strides; the last dim split at dma_max_last_dim)
 *   compute                n element ops reading n and writing n elements of
 *                          SHARED (in place in the scratch buffer)
 *   DMA SHARED -> GLOBAL   the tile to y, unpacked to y's strides
 * So bytes GLOBAL->SHARED = SHARED->GLOBAL = elements * elem size, exactly
 * the compulsory traffic. On the host SHARED is a real scratch buffer sized
 * to the largest tile (so small calls stay cheap and a default tile of a few
 * hundred KiB stays in L2), and fp16/bf16 tiles are widened to fp32 in
 * registers-sized chunks, computed, and narrowed back in the scratch.
 * A contiguous x and y make a one-pass launch (device_int.h): the same
 * counts, while the host computes each tile straight from x into y (with
 * streamed stores when y is larger than its cache), which one thread
 * overlaps with DRAM; staged, make bench's 64 MiB SiLU took 15.7-19.4 ms,
 * in one pass 13.2-15.9 ms (oneDNN's swish 15.2-17.6 in the same runs). */

/* The tensor after coalescing: dims of size 1 dropped, adjacent dims merged
 * when the outer stride equals inner stride * inner dim in both x and y.
 * The order of the dims is kept (no sorting). */
struct act_view {
	int rank;               /* 1..8 */
	int64_t n;              /* elements */
	int64_t dims[OPS_MAX_RANK];
	int64_t xs[OPS_MAX_RANK];
	int64_t ys[OPS_MAX_RANK];
};

static int act_coalesce(int rank, const int64_t *dims, const int64_t *xs,
			const int64_t *ys, struct act_view *v, struct opr_error *err)
{
	int64_t d[OPS_MAX_RANK], sx[OPS_MAX_RANK], sy[OPS_MAX_RANK];
	int k = 0; /* kept dims, innermost first */

	/* rank 0 and a positive rank 1 directly (the general rule gives the
	 * same: a size-1 dim is dropped, leaving [1] with unit strides) */
	if (rank == 0 || (rank == 1 && dims[0] > 0)) {
		const int keep = rank == 1 && dims[0] > 1;
		v->rank = 1;
		v->n = rank ? dims[0] : 1;
		v->dims[0] = v->n;
		v->xs[0] = keep ? xs[0] : 1;
		v->ys[0] = keep ? ys[0] : 1;
		return 0;
	}
	/* errors return the constant (not opr_error_set's value) so the compiler
	 * sees that v is filled whenever 0 is returned */
	if (rank < 0 || rank > OPS_MAX_RANK) {
		opr_error_set(err, OPR_EINPUT, "rank %d is outside 0..%d", rank, OPS_MAX_RANK);
		return OPR_EINPUT;
	}
	v->n = 1;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0) {
			opr_error_set(err, OPR_EINPUT, "dimension %d is negative (%lld)", i,
				      (long long)dims[i]);
			return OPR_EINPUT;
		}
		if (dims[i] == 0)
			v->n = 0;
		else if (v->n && __builtin_mul_overflow(v->n, dims[i], &v->n)) {
			/* (no division per dimension on the one-element path) */
			opr_error_set(err, OPR_EINPUT, "shape product overflows");
			return OPR_EINPUT;
		}
	}
	for (int i = rank - 1; i >= 0; i--) {
		if (dims[i] == 1)
			continue;
		if (k > 0 && xs[i] == sx[k - 1] * d[k - 1] && ys[i] == sy[k - 1] * d[k - 1]) {
			d[k - 1] *= dims[i];
			continue;
		}
		d[k] = dims[i];
		sx[k] = xs[i];
		sy[k] = ys[i];
		k++;
	}
	if (k == 0) {
		d[0] = 1;
		sx[0] = sy[0] = 1;
		k = 1;
	}
	v->rank = k;
	for (int i = 0; i < k; i++) {
		v->dims[i] = d[k - 1 - i];
		v->xs[i] = sx[k - 1 - i];
		v->ys[i] = sy[k - 1 - i];
	}
	return 0;
}

/* ops_activation_default_tile for an element size es (a power of two), inline
 * in the strided operator (no call to ops_dtype_size per activation). */
static inline int64_t default_tile(const struct ops_envelope *env, size_t es)
{
	/* floor(cap / 2 / size) by integer shifts: the same value as in doubles
	 * since the sizes are powers of two, without two divisions per call */
	int64_t cap = (int64_t)(env->shared_capacity_kib * 1024.0);
	int64_t e = (cap >> 1) >> __builtin_ctzll((unsigned long long)es);
	e -= e % 16;
	return e < 16 ? 16 : e;
}

int64_t ops_activation_default_tile(const struct ops_envelope *env, enum ops_dtype t)
{
	return default_tile(env, ops_dtype_size(t));
}

/* n fp16/bf16 elements of src to dst (the same, or disjoint): widened to
 * fp32 in chunks of 512, computed and narrowed back. Out of line so that its
 * 2 KiB of stack stays out of the frame of the small fp32 calls. */
static __attribute__((noinline)) void act_half(enum ops_act a, enum ops_dtype t,
						const void *src, void *dst, int64_t n)
{
	float f[512];
	const uint16_t *h = src;
	uint16_t *o = dst;
	for (int64_t i = 0; i < n; i += 512) {
		size_t m = (size_t)(n - i < 512 ? n - i : 512);
		ops_to_f32(t, h + i, f, m);
		ops_act_f32(a, f, f, m);
		ops_from_f32(t, f, o + i, m);
	}
}

/* Computes n elements in place in a scratch tile of dtype t. */
static inline void act_tile(enum ops_act a, enum ops_dtype t, void *buf, int64_t n)
{
	if (t == OPS_F32)
		ops_act_f32(a, buf, buf, (size_t)n);
	else
		act_half(a, t, buf, buf, n);
}

/* One tile of a one-pass launch: n contiguous elements of x computed
 * straight into y (the same or disjoint); stream: y's fp32 vectors by
 * non-temporal stores, fenced by the caller. */
static void act_pass(enum ops_act a, enum ops_dtype t, const void *x, void *y, int64_t n,
		     int stream)
{
	if (t != OPS_F32)
		act_half(a, t, x, y, n);
	else if (stream)
		act_f32_stream(a, x, y, (size_t)n);
	else
		ops_act_f32(a, x, y, (size_t)n);
}

/* 1 when [a, a + bytes) and [b, b + bytes) overlap without being the same
 * range: a one-pass kernel would then read elements it has already written,
 * so such a call is staged tile by tile as before. */
static int overlap_partly(const void *a, const void *b, size_t bytes)
{
	uintptr_t p = (uintptr_t)a, q = (uintptr_t)b;
	return p != q && p < q + bytes && q < p + bytes;
}

/* act_tile with the next tile's reads overlapped: while a tile computes,
 * the next tile's contiguous source (next, next_bytes) is prefetched a slice
 * after each slice of compute, so that its DMA copy reads the cache instead
 * of waiting on DRAM. On one thread a prefetch is how a transfer overlaps
 * compute. Host only: nothing is counted. Worth it for the functions whose
 * compute is long enough to hide the reads (a staged 64 MiB SiLU: 20-21 ->
 * 15.9-16.6 ms, with the Estrin exp; now the case of a strided y, as a
 * contiguous one is one pass); relu is bound by DRAM either way and the
 * prefetches only cost it. */
#define ACT_SLICE 256 /* elements per slice */
static void act_tile_prefetch(enum ops_act a, enum ops_dtype t, size_t es, void *buf,
			      int64_t n, const char *next, size_t next_bytes)
{
	const int64_t slices = (n + ACT_SLICE - 1) / ACT_SLICE;
	size_t done = 0;

	for (int64_t s = 0; s < slices; s++) {
		int64_t i = s * ACT_SLICE, m = n - i < ACT_SLICE ? n - i : ACT_SLICE;
		act_tile(a, t, (char *)buf + (size_t)i * es, m);
		size_t upto = (size_t)((double)next_bytes * (double)(s + 1) / (double)slices);
		for (; done < upto; done += 64)
			_mm_prefetch(next + done, _MM_HINT_T0);
	}
}

/* The kernel of a one-tile launch (ops_launch_tile1): ctx is the act_fn. */
struct act_fn {
	enum ops_act a;
	enum ops_dtype t;
};

static void act_tile_kernel(const void *ctx, void *tile, int64_t n)
{
	const struct act_fn *f = ctx;
	act_tile(f->a, f->t, tile, n);
}

/* The one-pass form of act_tile_kernel (ops_tile1.pass): ctx is the act_fn. */
static void act_tile_pass(const void *ctx, const void *x, void *y, int64_t n)
{
	const struct act_fn *f = ctx;
	act_pass(f->a, f->t, x, y, n, 0);
}

/* Releases a launch's on-chip buffers and passes rc through. */
static int release_bufs(struct ops_device *dev, struct ops_buf *buf, int nbuf, int rc)
{
	while (nbuf-- > 0)
		ops_buf_release(dev, &buf[nbuf]);
	return rc;
}

/* The launch's streaming hint (device_int.h, ops_launch_stream_hint), for
 * the functions as cheap as a copy only. Non-temporal stores pay where the
 * loop is bound by memory and cost where it is bound by the element op: on
 * this project's AVX-512 reference host, one-pass 64 MiB fp32 maps with
 * streamed stores took 7.8 against 10.4 ms for ReLU, but 28.0 against
 * 14.6 ms for GELU-tanh and 22.5 against 13.7 ms for SiLU. */
static void act_stream_hint(struct ops_device *dev, enum ops_act a, uint64_t bytes)
{
	if (a == OPS_ACT_RELU || a == OPS_ACT_NONE)
		ops_launch_stream_hint(dev, bytes);
}

/* After a failure inside a launch: close the launch (its own error is
 * secondary to rc, which the caller already has) and release the buffers,
 * so the device stays usable. */
static int close_failed(struct ops_device *dev, struct ops_buf *buf, int nbuf, int rc)
{
	struct opr_error ignored;
	ops_launch_end(dev, &ignored);
	return release_bufs(dev, buf, nbuf, rc);
}

/* The walk of ops_activation_strided_plan for a non-empty tensor that
 * coalesces to one dimension (k = 0, no outer dims): the same buffers,
 * launch, tiles, descriptors and device calls in the same order, without the
 * general bookkeeping, which was a quarter of a one-element call. Out of
 * line: inlined, its frame cost a one-element call 20 instructions
 * (callgrind: 421 -> 403 per call). */
static __attribute__((noinline)) int
act_1d(struct ops_device *dev, enum ops_act a, enum ops_dtype t, size_t es,
       const struct act_view *v, int64_t tile, int dbuf, int launch_db, const void *x, void *y,
       int dry, struct opr_error *err)
{
	const int64_t len = v->dims[0], xs = v->xs[0], ys = v->ys[0];
	const int64_t q = tile < len ? (tile < 1 ? 1 : tile) : len;
	const int64_t chunks = q >= len ? 1 : (len + q - 1) / q;
	struct ops_buf buf[2];
	struct ops_dma_desc din, dout;
	int nbuf, rc;
	/* (a walk over a contiguous source, for the functions whose compute can
	 * hide the next tile's reads; single-buffered too: the host has one
	 * thread either way, and the prefetch lands in the cache, not in the
	 * device's second buffer) */
	const int prefetch = xs == 1 && a != OPS_ACT_RELU && a != OPS_ACT_NONE;
	/* contiguous on both sides: a one-pass launch (ops_launch_one_pass);
	 * the host computes it straight from x to y unless they overlap partly */
	const int one_pass = xs == 1 && ys == 1;
	const int direct = one_pass && !dry &&
			   !overlap_partly(x, y, (size_t)len * es);

	if (chunks <= 1)
		dbuf = 0;
	for (nbuf = 0; nbuf < 1 + dbuf; nbuf++)
		if ((rc = ops_buf_alloc(dev, OPS_SHARED, (size_t)q * es, &buf[nbuf], err)) < 0)
			return release_bufs(dev, buf, nbuf, rc);
	if ((rc = ops_launch_begin(dev, "activation", launch_db, err)) < 0)
		return release_bufs(dev, buf, nbuf, rc);
	act_stream_hint(dev, a, (uint64_t)v->n * es);
	if (one_pass)
		ops_launch_one_pass(dev);
	din.rank = dout.rank = 1;
	din.elem_bytes = dout.elem_bytes = es;
	din.src_stride[0] = xs;
	din.dst_stride[0] = dout.src_stride[0] = 1;
	dout.dst_stride[0] = ys;
	void *tb = buf[0].data; /* every tile's host buffer (ops.h) */
	for (int64_t c = 0; c < chunks; c++) {
		const int64_t n = c == chunks - 1 ? len - c * q : q;
		const char *xp = dry ? NULL : (const char *)x + c * q * xs * (int64_t)es;
		char *yp = dry ? NULL : (char *)y + c * q * ys * (int64_t)es;
		din.shape[0] = dout.shape[0] = n;
		ops_tile_begin(dev, c);
		/* direct: the same transfers, counted; the bytes go once through
		 * registers */
		rc = direct ? ops_dma_split_count(dev, OPS_SHARED, OPS_GLOBAL, &din, err)
			    : ops_dma_split(dev, OPS_SHARED, tb, OPS_GLOBAL, xp, &din, err);
		if (rc < 0)
			goto end;
		ops_compute(dev, t, 0, (uint64_t)n, (uint64_t)n * es, (uint64_t)n * es);
		if (direct)
			act_pass(a, t, xp, yp, n, ops_launch_streams_global(dev));
		else if (!dry && prefetch && c + 1 < chunks)
			act_tile_prefetch(a, t, es, tb, n, xp + q * xs * (int64_t)es,
					  (size_t)(c + 2 == chunks ? len - (c + 1) * q : q) * es);
		else if (!dry)
			act_tile(a, t, tb, n);
		rc = direct ? ops_dma_split_count(dev, OPS_GLOBAL, OPS_SHARED, &dout, err)
			    : ops_dma_split(dev, OPS_GLOBAL, yp, OPS_SHARED, tb, &dout, err);
		if (rc < 0)
			goto end;
	}
	if (direct && ops_launch_streams_global(dev))
		_mm_sfence(); /* the streamed lines are ordered before what follows */
	rc = ops_launch_end(dev, err);
	return release_bufs(dev, buf, nbuf, rc);
end:
	return close_failed(dev, buf, nbuf, rc);
}

/* The general walk of ops_activation_strided_plan (a tensor that does not
 * coalesce to one non-empty dimension), out of line so that its large frame
 * and bookkeeping stay out of the small one-dimensional calls. */
static __attribute__((noinline)) int
act_nd(struct ops_device *dev, const struct ops_plan *plan, enum ops_act a, enum ops_dtype t,
       size_t es, const struct act_view *vp, int64_t tile, int dbuf, const void *x, void *y,
       int dry, struct opr_error *err)
{
	/* no zero-initialisers of the (large) locals below: filled as used, they
	 * were a tenth of a one-element call */
	const struct act_view v = *vp;
	struct ops_buf buf[2];
	int nbuf = 0, rc;

	/* Tile shape: the k innermost dims whole (k <= 3, product P <= tile) and
	 * q = min(dims[j], tile / P) of dim j = rank-1-k; tiles walk the outer
	 * dims 0..j-1 and the chunks of dim j. Descriptor rank k + 1 <= 4. */
	int r = v.rank, k = 0;
	int64_t P = 1;
	while (k < r - 1 && k < 3 && P * v.dims[r - 1 - k] <= tile) {
		P *= v.dims[r - 1 - k];
		k++;
	}
	int j = r - 1 - k;
	/* (the divisions only when they matter: a small call has P == 1 and
	 * fits one chunk; a zero-size dim makes P 0, and there is no tile) */
	int64_t per = P <= 1 ? tile : tile / P;
	int64_t q = per < v.dims[j] ? per : v.dims[j];
	if (q < 1)
		q = 1;
	int64_t chunks = !v.n ? 0 : q >= v.dims[j] ? 1 : (v.dims[j] + q - 1) / q;

	/* one buffer when there is one tile: the second of a double-buffered
	 * plan would never be used (and a tiny call stays cheap) */
	int64_t ntiles = chunks;
	for (int i = 0; i < j; i++)
		ntiles *= v.dims[i];
	if (ntiles <= 1)
		dbuf = 0;
	if (v.n > 0) {
		size_t bytes = (size_t)(q * P) * es;
		for (nbuf = 0; nbuf < 1 + dbuf; nbuf++)
			if ((rc = ops_buf_alloc(dev, OPS_SHARED, bytes, &buf[nbuf], err)) < 0)
				return release_bufs(dev, buf, nbuf, rc);
	}
	if ((rc = ops_launch_begin(dev, "activation", plan ? plan->double_buffer != 0 : 1,
				   err)) < 0)
		return release_bufs(dev, buf, nbuf, rc);
	act_stream_hint(dev, a, (uint64_t)v.n * es);

	struct ops_dma_desc din, dout;
	din.rank = dout.rank = k + 1;
	din.elem_bytes = dout.elem_bytes = es;
	for (int i = 0; i < k; i++) {
		int dim = j + 1 + i;
		din.shape[1 + i] = dout.shape[1 + i] = v.dims[dim];
		din.src_stride[1 + i] = v.xs[dim];
		dout.dst_stride[1 + i] = v.ys[dim];
	}
	din.src_stride[0] = v.xs[j];
	dout.dst_stride[0] = v.ys[j];
	/* packed strides of the scratch side */
	int64_t ps = 1;
	for (int i = k; i >= 0; i--) {
		din.dst_stride[i] = dout.src_stride[i] = ps;
		ps *= i == 0 ? q : din.shape[i];
	}

	int64_t idx[OPS_MAX_RANK];
	int64_t xoff = 0, yoff = 0, tno = 0;
	int64_t outer = 1;
	for (int i = 0; i < j; i++) {
		idx[i] = 0;
		outer *= v.dims[i];
	}
	if (v.n == 0)
		outer = 0;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t c = 0; c < chunks; c++, tno++) {
			int64_t qq = c == chunks - 1 ? v.dims[j] - c * q : q;
			int64_t n = qq * P;
			struct ops_buf *b = &buf[0]; /* every tile (ops.h) */
			const char *xp = NULL;
			char *yp = NULL;
			if (!dry) {
				xp = (const char *)x + (xoff + c * q * v.xs[j]) * (int64_t)es;
				yp = (char *)y + (yoff + c * q * v.ys[j]) * (int64_t)es;
			}
			din.shape[0] = dout.shape[0] = qq;
			ops_tile_begin(dev, tno);
			if ((rc = ops_dma_split(dev, OPS_SHARED, b->data, OPS_GLOBAL, xp, &din, err)) < 0)
				goto end;
			ops_compute(dev, t, 0, (uint64_t)n, (uint64_t)n * es, (uint64_t)n * es);
			if (!dry)
				act_tile(a, t, b->data, n);
			if ((rc = ops_dma_split(dev, OPS_GLOBAL, yp, OPS_SHARED, b->data, &dout, err)) < 0)
				goto end;
		}
		/* odometer over the outer dims 0..j-1 */
		for (int i = j - 1; i >= 0; i--) {
			xoff += v.xs[i];
			yoff += v.ys[i];
			if (++idx[i] < v.dims[i])
				break;
			xoff -= v.xs[i] * v.dims[i];
			yoff -= v.ys[i] * v.dims[i];
			idx[i] = 0;
		}
	}
	rc = ops_launch_end(dev, err);
	return release_bufs(dev, buf, nbuf, rc);
end:
	return close_failed(dev, buf, nbuf, rc);
}

int ops_activation_strided_plan(struct ops_device *dev, const struct ops_plan *plan,
				enum ops_act a, enum ops_dtype t, int rank,
				const int64_t *dims, const void *x,
				const int64_t *xstride, void *y,
				const int64_t *ystride, struct opr_error *err)
{
	struct act_view v;
	int rc;

	if (t != OPS_F32 && t != OPS_F16 && t != OPS_BF16)
		return opr_error_set(err, OPR_EINPUT, "activation dtype '%s' is not fp32, fp16 or bf16",
				     ops_dtype_name(t));
	/* ops_dtype_size(t) and ops_device_dry_run(dev) read directly: the
	 * calls were a twentieth of a one-element call */
	const size_t es = t == OPS_F32 ? 4 : 2;
	const int dry = dev->dry_run;
	const int64_t tile = plan && plan->p[0] > 0 ? plan->p[0]
				: default_tile(&dev->env, es);
	const int dbuf = plan ? plan->double_buffer != 0 : 1;

	if ((rc = act_coalesce(rank, dims, xstride, ystride, &v, err)) < 0)
		return rc;
	if (!dry && v.n > 0 && (!x || !y))
		return opr_error_set(err, OPR_EINTERNAL, "activation needs data in a real run");
	if (v.rank == 1 && v.n > 0 && v.n <= tile) {
		/* one tile: a tiny call is one device call when it fits the stack */
		static const char name[OPS_NAME_BYTES] = "activation";
		const struct act_fn f = { a, t };
		const struct ops_tile1 k = {
			.name = name, .double_buffer = dbuf,
			.one_pass = v.xs[0] == 1 && v.ys[0] == 1, .dtype = t,
			.elem_bytes = es, .n = v.n, .x = x, .xs = v.xs[0], .y = y,
			.ys = v.ys[0], .elem_ops = (uint64_t)v.n, .kernel = act_tile_kernel,
			.pass = overlap_partly(x, y, (size_t)v.n * es) ? NULL : act_tile_pass,
			.ctx = &f,
		};
		if (ops_launch_tile1(dev, &k))
			return 0;
	}
	if (v.rank == 1 && v.n > 0)
		return act_1d(dev, a, t, es, &v, tile, dbuf, dbuf, x, y, dry, err);
	return act_nd(dev, plan, a, t, es, &v, tile, dbuf, x, y, dry, err);
}

int ops_activation_strided(struct ops_device *dev, enum ops_act a, enum ops_dtype t,
			   int rank, const int64_t *dims, const void *x,
			   const int64_t *xstride, void *y, const int64_t *ystride,
			   struct opr_error *err)
{
	return ops_activation_strided_plan(dev, NULL, a, t, rank, dims, x, xstride, y,
					   ystride, err);
}

/* ---- the workload (group OPS_G_ACTIVATION) ------------------------------- */

static const char *const act_params[] = { "tile_elems", NULL };

/* Elements of the workload's tensor, or -1 when the product overflows. */
static int64_t act_count(const struct ops_workload *w)
{
	int64_t n = 1;
	for (int i = 0; i < w->tensor.rank && i < OPS_MAX_RANK; i++) {
		if (w->tensor.dims[i] == 0)
			return 0;
		if (w->tensor.dims[i] < 0 || n > INT64_MAX / w->tensor.dims[i])
			return -1;
		n *= w->tensor.dims[i];
	}
	return n;
}

static int act_check(const struct ops_workload *w, struct opr_error *err)
{
	if (w->tensor.rank < 0 || w->tensor.rank > OPS_MAX_RANK)
		return opr_error_set(err, OPR_EINPUT, "activation rank %d is outside 0..%d",
				     w->tensor.rank, OPS_MAX_RANK);
	for (int i = 0; i < w->tensor.rank; i++)
		if (w->tensor.dims[i] < 0)
			return opr_error_set(err, OPR_EINPUT, "dimension %d is negative (%lld)",
					     i, (long long)w->tensor.dims[i]);
	if (w->dtype != OPS_F32 && w->dtype != OPS_F16 && w->dtype != OPS_BF16)
		return opr_error_set(err, OPR_EINPUT, "activation dtype '%s' is not fp32, fp16 or bf16",
				     (int)w->dtype >= 0 && w->dtype < OPS_NDTYPES
				     ? ops_dtype_name(w->dtype) : "?");
	if (w->act <= OPS_ACT_NONE || w->act >= OPS_NACTS)
		return opr_error_set(err, OPR_EINPUT, "activation group needs an activation other than 'none'");
	int64_t n = act_count(w);
	if (n < 0 || n > INT64_MAX / 2 / (int64_t)ops_dtype_size(w->dtype))
		return opr_error_set(err, OPR_EINPUT, "shape product overflows");
	return 0;
}

static uint64_t act_bytes(const struct ops_workload *w)
{
	int64_t n = act_count(w);
	if (n < 0 || (int)w->dtype < 0 || w->dtype >= OPS_NDTYPES)
		return UINT64_MAX;
	uint64_t es = ops_dtype_size(w->dtype);
	if ((uint64_t)n > UINT64_MAX / 4 / es)
		return UINT64_MAX;
	/* x and y, plus the fp32 staging of the generator for 16-bit dtypes */
	return 2 * (uint64_t)n * es + (es < 4 ? 4 * (uint64_t)n : 0);
}

static int act_prepare(struct ops_instance *inst, struct opr_error *err)
{
	int64_t n = act_count(&inst->work);
	int rc = ops_instance_add_tensor(inst, "x", inst->work.dtype, n, 0, -8.0, 8.0, err);
	if (rc < 0)
		return rc;
	rc = ops_instance_add_tensor(inst, "y", inst->work.dtype, n, 1, 0.0, 0.0, err);
	if (rc < 0)
		return rc;
	inst->out_index = rc;
	return 0;
}

static void contiguous_strides(const struct ops_tensor_shape *s, int64_t *st)
{
	int64_t m = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		st[i] = m;
		m *= s->dims[i] > 0 ? s->dims[i] : 1;
	}
}

static int act_run(struct ops_device *dev, struct ops_instance *inst, struct opr_error *err)
{
	int64_t st[OPS_MAX_RANK];
	struct ops_tensor *x = ops_instance_tensor(inst, "x");
	struct ops_tensor *y = ops_instance_tensor(inst, "y");
	if (!x || !y)
		return opr_error_set(err, OPR_EINTERNAL, "activation instance lacks 'x' or 'y'");
	contiguous_strides(&inst->work.tensor, st);
	int dry = ops_device_dry_run(dev);
	return ops_activation_strided_plan(dev, &inst->plan, inst->work.act, inst->work.dtype,
					   inst->work.tensor.rank, inst->work.tensor.dims,
					   dry ? NULL : x->data, st, dry ? NULL : y->data, st, err);
}

static int act_quality(const struct ops_instance *inst, struct ops_quality *q,
		       struct opr_error *err)
{
	const struct ops_tensor *x = &inst->t[0], *y = &inst->t[inst->out_index];
	float fx[512], fy[512];
	double num = 0.0, den = 0.0;
	size_t es = ops_dtype_size(x->dtype);

	if (!x->data || !y->data)
		return opr_error_set(err, OPR_EINTERNAL, "quality of a planning instance");
	/* streamed in chunks: no fp64 copy of the whole output */
	for (int64_t i = 0; i < x->count; i += 512) {
		size_t m = (size_t)(x->count - i < 512 ? x->count - i : 512);
		ops_to_f32(x->dtype, (const char *)x->data + (size_t)i * es, fx, m);
		ops_to_f32(y->dtype, (const char *)y->data + (size_t)i * es, fy, m);
		for (size_t k = 0; k < m; k++) {
			double ref = ops_act_ref(inst->work.act, (double)fx[k]);
			double d = (double)fy[k] - ref;
			num += d * d;
			den += ref * ref;
		}
	}
	memset(q, 0, sizeof *q);
	q->rel_l2 = den > 0.0 ? sqrt(num / den) : sqrt(num);
	return 0;
}

/* Candidates: tiles of 1024 * 4^i elements (and the default tile), each single
 * and double-buffered, up to the first size that holds the whole tensor; the
 * ones over SHARED capacity are kept so that the planner shows why. */
static size_t act_plans(const struct ops_envelope *env, const struct ops_workload *w,
			int fused, struct ops_plan *out, size_t max)
{
	size_t n = 0;
	int64_t count = act_count(w), def = ops_activation_default_tile(env, w->dtype);
	int64_t sizes[12];
	int ns = 0;

	sizes[ns++] = def;
	for (int64_t s = 1024; ns < 11; s *= 4) {
		if (s != def)
			sizes[ns++] = s;
		if (s >= count || s > 2 * def)
			break;
	}
	for (int i = 0; i < ns; i++)
		for (int db = 1; db >= 0; db--) {
			if (n == max)
				return n;
			memset(&out[n], 0, sizeof out[n]);
			out[n].fused = fused;
			out[n].strategy = OPS_STRAT_DIRECT;
			out[n].p[0] = sizes[i];
			out[n].double_buffer = db;
			n++;
		}
	return n;
}

const struct ops_group_impl ops_impl_activation = {
	.group = OPS_G_ACTIVATION,
	.check = act_check,
	.bytes = act_bytes,
	.prepare = act_prepare,
	.run = act_run,
	.quality = act_quality,
	.plans = act_plans,
	.release = NULL,
	.params = act_params,
};
